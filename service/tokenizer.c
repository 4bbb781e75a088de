/* The table of encodings and the one count function in front of it. */
#include "tokenizer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct tokenizer {
    const char *name;
    /* Tokens of text[0..len), or -1 when out of memory. */
    int64_t (*count)(const char *text, size_t len);
};

/* ---- bytes ---- */

/* A text's UTF-8 byte length: an upper bound on its tokens under any
 * byte-level BPE tokenizer, so the safe count when the model's tokenizer is
 * not known. */
static int64_t count_bytes(const char *text, size_t len)
{
    (void)text;
    return (int64_t)len;
}

/* ---- The table ---- */

static const tokenizer encodings[] = {
    {"bytes", count_bytes},
};

#define NENCODINGS (sizeof(encodings) / sizeof(encodings[0]))

const tokenizer *tokenizer_find(const char *name, size_t len)
{
    for (size_t i = 0; i < NENCODINGS; i++)
        if (strlen(encodings[i].name) == len && memcmp(encodings[i].name, name, len) == 0)
            return &encodings[i];
    return NULL;
}

static const tokenizer *default_encoding;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void find_default(void)
{
    const char *name = getenv("COMPACTD_TOKENIZER");
    default_encoding = name ? tokenizer_find(name, strlen(name)) : &encodings[0];
}

const tokenizer *tokenizer_default(void)
{
    pthread_once(&default_once, find_default);
    return default_encoding;
}

const char *tokenizer_name(const tokenizer *t)
{
    return t->name;
}

int64_t tokenizer_count(const tokenizer *t, const char *text, size_t len)
{
    return t->count(text, len);
}
