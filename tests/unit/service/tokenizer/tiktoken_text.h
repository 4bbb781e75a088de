/* Builds .tiktoken text from a list of tokens (rank = position), so that the
 * tests write rank tables as plain strings. */
#ifndef COMPACTD_TIKTOKEN_TEXT_H
#define COMPACTD_TIKTOKEN_TEXT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void base64_append(char *out, const unsigned char *b, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = out + strlen(out);
    for (size_t i = 0; i < n; i += 3) {
        unsigned w = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        *o++ = digits[w >> 18 & 63];
        *o++ = digits[w >> 12 & 63];
        *o++ = i + 1 < n ? digits[w >> 6 & 63] : '=';
        *o++ = i + 2 < n ? digits[w & 63] : '=';
    }
    *o = 0;
}

/* Returns a new NUL-terminated .tiktoken text of tokens[0..n); free() it. */
static char *tiktoken_text(const char *const *tokens, size_t n)
{
    size_t cap = 64;
    for (size_t i = 0; i < n; i++)
        cap += strlen(tokens[i]) * 2 + 24;
    char *s = malloc(cap);
    if (!s)
        abort();
    s[0] = 0;
    for (size_t i = 0; i < n; i++) {
        base64_append(s, (const unsigned char *)tokens[i], strlen(tokens[i]));
        sprintf(s + strlen(s), " %zu\n", i);
    }
    return s;
}

#endif
