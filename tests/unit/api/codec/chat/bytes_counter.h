/* Bytes as tokens, for the chat codec tests: a counter whose every count
 * can be worked out by hand from the text rendered. */
#ifndef COMPACTD_TEST_BYTES_COUNTER_H
#define COMPACTD_TEST_BYTES_COUNTER_H

#include "chat.h"

static int64_t count_bytes(const void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)len;
}

static const chat_counter bytes = {count_bytes, NULL, 1};

#endif
