/* The byte map: SipHash-1-3 against an independent reference, lookups,
 * and keys chosen to collide under the unkeyed hash the map once used
 * (FNV-1a), which must not pile up in the keyed map. */
#include "bytemap.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SipHash-1-3 under the all-zero key, as CPython 3.11 computes it for
 * hash(bytes) with PYTHONHASHSEED=0 (its hash secret is then zero). */
static void siphash_matches_reference(void)
{
    static const unsigned char zero[16] = {0};
    static const struct {
        const char *data;
        uint64_t want;
    } vectors[] = {
        {"a", 0x407448d2b89b1813ULL},
        {"abcdefgh", 0x3f7b849c0b8e35eaULL},
        {"compactd bytemap key 0123456789", 0xa9aa0609a5668a93ULL},
    };
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        uint64_t got = bytemap_siphash(zero, vectors[i].data, strlen(vectors[i].data));
        check(got == vectors[i].want, "siphash13(\"%s\") = %016llx, want %016llx", vectors[i].data,
              (unsigned long long)got, (unsigned long long)vectors[i].want);
    }
}

static void lookups(void)
{
    static const char *keys[] = {"a", "b", "", "ab", "ba", "a\0b", "longer key here"};
    static const size_t lens[] = {1, 1, 0, 2, 2, 3, 15};
    bytemap m = {0};
    check(bytemap_init(&m, 7) == 0, "init");
    for (size_t i = 0; i < 7; i++)
        check(bytemap_put_new(&m, keys[i], lens[i], i) == NULL, "key %zu not new", i);
    for (size_t i = 0; i < 7; i++) {
        size_t *v = bytemap_put_new(&m, keys[i], lens[i], 99);
        check(v && *v == i, "key %zu: a second put did not find the first", i);
        v = bytemap_get(&m, keys[i], lens[i]);
        check(v && *v == i, "key %zu: get", i);
    }
    check(bytemap_get(&m, "a\0c", 3) == NULL, "found a key never put");
    bytemap_free(&m);
}

/* The hash the map used before it was keyed, and its slot choice. */
static size_t old_slot(const char *p, size_t len, size_t mask)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return (size_t)(h ^ (h >> 29)) & mask;
}

#define FLOOD 4096

/* FLOOD keys that all fall in one slot of the old hash for a map sized for
 * FLOOD entries (8,192 slots): found by trying counters, as an attacker
 * would. Under the old hash the last insertion walked FLOOD slots. */
static void colliding_keys_do_not_pile_up(void)
{
    static char keys[FLOOD][24];
    size_t lens[FLOOD], mask = 8191, found = 0;
    for (unsigned long c = 0; found < FLOOD; c++) {
        int n = snprintf(keys[found], sizeof(keys[found]), "key-%lu", c);
        if (old_slot(keys[found], (size_t)n, mask) == 0)
            lens[found++] = (size_t)n;
    }

    bytemap m = {0};
    check(bytemap_init(&m, FLOOD) == 0, "init");
    check(m.mask == mask, "the map has %zu slots, not 8192", m.mask + 1);
    for (size_t i = 0; i < FLOOD; i++)
        check(bytemap_put_new(&m, keys[i], lens[i], i) == NULL, "colliding key %zu not new", i);
    size_t dup = 0;
    for (size_t i = 0; i < FLOOD; i++) {
        size_t *v = bytemap_get(&m, keys[i], lens[i]);
        dup += !v || *v != i;
    }
    check(dup == 0, "%zu colliding keys not found again", dup);
    /* Half full with linear probing: a run of 64 has odds far below 1e-9. */
    check(m.longest_probe <= 64,
          "keys that collide under FNV-1a made an insertion look at %zu slots", m.longest_probe);
    printf("bytemap_cases: %d keys colliding under the old hash, longest probe %zu\n", FLOOD,
           m.longest_probe);
    bytemap_free(&m);
}

int main(void)
{
    siphash_matches_reference();
    lookups();
    colliding_keys_do_not_pile_up();
    return check_done("bytemap_cases");
}
