/* An open-addressing hash map from byte strings to indices, sized once for
 * a known number of entries. Keys are borrowed, never copied.
 *
 * Keys come from requests, so the hash is keyed: SipHash-1-3 under a
 * 128-bit key drawn from the kernel once per process (as Redis seeds its
 * dict hash), so that no client can choose keys that collide and turn each
 * lookup into a walk over the whole table. */
#ifndef COMPACTD_BYTEMAP_H
#define COMPACTD_BYTEMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key;
    size_t len;
    size_t value;
    int used;
} bytemap_slot;

typedef struct {
    bytemap_slot *slots;
    size_t mask;
    size_t longest_probe; /* most slots one insertion looked at: a test's measure */
} bytemap;

/* Prepares a map that will hold at most capacity entries. Returns 0, or -1
 * when out of memory. Release with bytemap_free(). */
int bytemap_init(bytemap *m, size_t capacity);
void bytemap_free(bytemap *m);

/* Looks key up; when absent, inserts it with value and returns NULL. When
 * present, returns the stored value's address and changes nothing. The map
 * must not be filled beyond the capacity given to bytemap_init(). */
size_t *bytemap_put_new(bytemap *m, const char *key, size_t len, size_t value);

/* Returns the stored value's address, or NULL when key is absent. */
size_t *bytemap_get(const bytemap *m, const char *key, size_t len);

/* SipHash-1-3 of p[0..len) under the process's random key (the one every
 * map uses): for a table of one's own that must not be filled into one
 * bucket on purpose. */
uint64_t bytemap_hash(const void *p, size_t len);

/* SipHash-1-3 of p[0..len) under the 16-byte key k. Exposed for its test
 * vectors. */
uint64_t bytemap_siphash(const unsigned char k[16], const void *p, size_t len);

#endif
