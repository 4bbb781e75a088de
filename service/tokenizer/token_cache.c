/* The token-count cache: a fixed table guarded by striped locks. */
#include "token_cache.h"

#include <pthread.h>
#include <string.h>

#define LOCK_STRIPES 64

typedef struct {
    uint64_t digest[2];
    const void *tokenizer;
    int64_t v[TOKEN_CACHE_VALUES];
} cache_entry;

static cache_entry table[TOKEN_CACHE_SLOTS];
static pthread_mutex_t locks[LOCK_STRIPES];
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;

static void locks_init(void)
{
    for (size_t s = 0; s < LOCK_STRIPES; s++)
        pthread_mutex_init(&locks[s], NULL);
}

static uint64_t hex64(const char *h)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = h[i];
        v = (v << 4) | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return v;
}

int token_cache_get(const void *tokenizer, const char *sha256_hex, int64_t v[TOKEN_CACHE_VALUES])
{
    uint64_t d0 = hex64(sha256_hex), d1 = hex64(sha256_hex + 16);
    size_t slot = d0 & (TOKEN_CACHE_SLOTS - 1);
    int found = 0;
    pthread_once(&locks_once, locks_init);
    pthread_mutex_lock(&locks[slot % LOCK_STRIPES]);
    const cache_entry *e = &table[slot];
    /* A slot never written has tokenizer NULL, which no lookup passes. */
    if (e->tokenizer && e->tokenizer == tokenizer && e->digest[0] == d0 && e->digest[1] == d1) {
        memcpy(v, e->v, sizeof(e->v));
        found = 1;
    }
    pthread_mutex_unlock(&locks[slot % LOCK_STRIPES]);
    return found;
}

void token_cache_put(const void *tokenizer, const char *sha256_hex,
                     const int64_t v[TOKEN_CACHE_VALUES])
{
    uint64_t d0 = hex64(sha256_hex), d1 = hex64(sha256_hex + 16);
    size_t slot = d0 & (TOKEN_CACHE_SLOTS - 1);
    pthread_once(&locks_once, locks_init);
    pthread_mutex_lock(&locks[slot % LOCK_STRIPES]);
    cache_entry *e = &table[slot];
    e->digest[0] = d0;
    e->digest[1] = d1;
    e->tokenizer = tokenizer;
    memcpy(e->v, v, sizeof(e->v));
    pthread_mutex_unlock(&locks[slot % LOCK_STRIPES]);
}

void token_cache_clear(void)
{
    pthread_once(&locks_once, locks_init);
    for (size_t s = 0; s < LOCK_STRIPES; s++)
        pthread_mutex_lock(&locks[s]);
    memset(table, 0, sizeof(table));
    for (size_t s = 0; s < LOCK_STRIPES; s++)
        pthread_mutex_unlock(&locks[s]);
}
