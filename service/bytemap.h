/* An open-addressing hash map from byte strings to indices, sized once for
 * a known number of entries. Keys are borrowed, never copied. */
#ifndef COMPACTD_BYTEMAP_H
#define COMPACTD_BYTEMAP_H

#include <stddef.h>

typedef struct {
    const char *key;
    size_t len;
    size_t value;
    int used;
} bytemap_slot;

typedef struct {
    bytemap_slot *slots;
    size_t mask;
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

#endif
