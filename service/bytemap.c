/* Byte-string hash map used for duplicate-key checks and group lookup. */
#include "bytemap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *p, size_t len)
{
    /* FNV-1a: short keys dominate, and the map is rebuilt per request. */
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

int bytemap_init(bytemap *m, size_t capacity)
{
    size_t size = 16;
    while (size < capacity * 2)
        size <<= 1;
    m->slots = calloc(size, sizeof(*m->slots));
    m->mask = size - 1;
    return m->slots ? 0 : -1;
}

void bytemap_free(bytemap *m)
{
    free(m->slots);
    m->slots = NULL;
}

static bytemap_slot *find_slot(const bytemap *m, const char *key, size_t len)
{
    size_t i = (size_t)hash_bytes(key, len) & m->mask;
    for (;;) {
        bytemap_slot *s = &m->slots[i];
        if (!s->used || (s->len == len && memcmp(s->key, key, len) == 0))
            return s;
        i = (i + 1) & m->mask;
    }
}

size_t *bytemap_put_new(bytemap *m, const char *key, size_t len, size_t value)
{
    bytemap_slot *s = find_slot(m, key, len);
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
    bytemap_slot *s = find_slot(m, key, len);
    return s->used ? &s->value : NULL;
}
