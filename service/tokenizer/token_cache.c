/* The token-count cache: a fixed table of small sets guarded by striped
 * locks. */
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

/* Lower-case hex digits to their values: the digests are ours, always
 * well formed. A table, since every lookup reads 32 of them. */
static const unsigned char hex_value[256] = {
    ['0'] = 0, ['1'] = 1, ['2'] = 2,  ['3'] = 3,  ['4'] = 4,  ['5'] = 5,  ['6'] = 6,  ['7'] = 7,
    ['8'] = 8, ['9'] = 9, ['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14, ['f'] = 15};

static uint64_t hex64(const char *h)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++)
        v = (v << 4) | hex_value[(unsigned char)h[i]];
    return v;
}

/* The set of a digest: TOKEN_CACHE_WAYS entries, most recently used first. */
static cache_entry *set_of(uint64_t d0, pthread_mutex_t **lock)
{
    size_t set = d0 & (TOKEN_CACHE_SLOTS / TOKEN_CACHE_WAYS - 1);
    *lock = &locks[set % LOCK_STRIPES];
    return &table[set * TOKEN_CACHE_WAYS];
}

/* Moves e[at] to the front of its set, the others down by one. */
static void to_front(cache_entry *e, size_t at)
{
    if (at == 0)
        return;
    cache_entry hit = e[at];
    memmove(&e[1], &e[0], at * sizeof(*e));
    e[0] = hit;
}

static size_t find(const cache_entry *e, const void *tokenizer, uint64_t d0, uint64_t d1)
{
    /* A slot never written has tokenizer NULL, which no lookup passes. */
    for (size_t w = 0; w < TOKEN_CACHE_WAYS; w++)
        if (e[w].tokenizer && e[w].tokenizer == tokenizer && e[w].digest[0] == d0 &&
            e[w].digest[1] == d1)
            return w;
    return TOKEN_CACHE_WAYS;
}

int token_cache_get(const void *tokenizer, const char *sha256_hex, int64_t v[TOKEN_CACHE_VALUES])
{
    uint64_t d0 = hex64(sha256_hex), d1 = hex64(sha256_hex + 16);
    pthread_mutex_t *lock;
    pthread_once(&locks_once, locks_init);
    cache_entry *e = set_of(d0, &lock);
    pthread_mutex_lock(lock);
    size_t w = find(e, tokenizer, d0, d1);
    if (w < TOKEN_CACHE_WAYS) {
        to_front(e, w);
        memcpy(v, e[0].v, sizeof(e[0].v));
    }
    pthread_mutex_unlock(lock);
    return w < TOKEN_CACHE_WAYS;
}

void token_cache_put(const void *tokenizer, const char *sha256_hex,
                     const int64_t v[TOKEN_CACHE_VALUES])
{
    uint64_t d0 = hex64(sha256_hex), d1 = hex64(sha256_hex + 16);
    pthread_mutex_t *lock;
    pthread_once(&locks_once, locks_init);
    cache_entry *e = set_of(d0, &lock);
    pthread_mutex_lock(lock);
    size_t w = find(e, tokenizer, d0, d1);
    /* Absent: the least recently used entry (the last) makes room. */
    to_front(e, w < TOKEN_CACHE_WAYS ? w : TOKEN_CACHE_WAYS - 1);
    e[0].digest[0] = d0;
    e[0].digest[1] = d1;
    e[0].tokenizer = tokenizer;
    memcpy(e[0].v, v, sizeof(e[0].v));
    pthread_mutex_unlock(lock);
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
