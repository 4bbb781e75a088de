/* Byte-string hash map used for duplicate-key checks and group lookup. */
#include "bytemap.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- SipHash-1-3 ---- */

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static uint64_t read64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = rotl(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = rotl(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = rotl(v2, 32);                                                                         \
    } while (0)

uint64_t bytemap_siphash(const unsigned char k[16], const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t k0 = read64(k), k1 = read64(k + 8);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t whole = len - len % 8;

    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = read64(p + i);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = whole; i < len; i++)
        last |= (uint64_t)p[i] << (8 * (i - whole));
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- The process's key ---- */

static unsigned char hash_key[16];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void draw_key(void)
{
    if (getrandom(hash_key, sizeof(hash_key), 0) == (ssize_t)sizeof(hash_key))
        return;
    /* No getrandom (an old kernel): /dev/urandom, else the clock and pid,
     * which at least differ between processes. */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, hash_key, sizeof(hash_key));
        close(fd);
        if (n == (ssize_t)sizeof(hash_key))
            return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    uint64_t b = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)&ts;
    memcpy(hash_key, &a, 8);
    memcpy(hash_key + 8, &b, 8);
}

uint64_t bytemap_hash(const void *p, size_t len)
{
    pthread_once(&key_once, draw_key);
    return bytemap_siphash(hash_key, p, len);
}

/* ---- The map ---- */

int bytemap_init(bytemap *m, size_t capacity)
{
    size_t size = 16;
    pthread_once(&key_once, draw_key);
    while (size < capacity * 2)
        size <<= 1;
    m->slots = calloc(size, sizeof(*m->slots));
    m->mask = size - 1;
    m->longest_probe = 0;
    return m->slots ? 0 : -1;
}

void bytemap_free(bytemap *m)
{
    free(m->slots);
    m->slots = NULL;
}

static bytemap_slot *find_slot(const bytemap *m, const char *key, size_t len, size_t *probes)
{
    size_t i = (size_t)bytemap_siphash(hash_key, key, len) & m->mask;
    for (size_t n = 1;; n++) {
        bytemap_slot *s = &m->slots[i];
        if (!s->used || (s->len == len && memcmp(s->key, key, len) == 0)) {
            *probes = n;
            return s;
        }
        i = (i + 1) & m->mask;
    }
}

size_t *bytemap_put_new(bytemap *m, const char *key, size_t len, size_t value)
{
    size_t probes;
    bytemap_slot *s = find_slot(m, key, len, &probes);
    if (probes > m->longest_probe)
        m->longest_probe = probes;
    if (s->used)
        return &s->value;
    s->used = 1;
    s->key = key;
    s->len = len;
    s->value = value;
    return NULL;
}

size_t *bytemap_get(const bytemap *m, const char *key, size_t len)
{
    size_t probes;
    bytemap_slot *s = find_slot(m, key, len, &probes);
    return s->used ? &s->value : NULL;
}
