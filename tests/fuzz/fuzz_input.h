/* What the fuzz targets that generate their documents share: the input's
 * bytes they draw their choices from, and a growing buffer they write the
 * document into. Header-only, for the harnesses in this folder. */
#ifndef COMPACTD_FUZZ_INPUT_H
#define COMPACTD_FUZZ_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t n;
} src;

/* A number below n from the input (0 once it is used up); two bytes of it
 * when n is above 256. */
static inline unsigned pick(src *s, unsigned n)
{
    if (s->n == 0 || n == 0)
        return 0;
    unsigned v = s->p[0];
    if (n > 256 && s->n >= 2) {
        v = v << 8 | s->p[1];
        s->p++;
        s->n--;
    }
    s->p++;
    s->n--;
    return v % n;
}

typedef struct {
    unsigned char *b;
    size_t n, cap;
} buf;

static inline void put(buf *o, const void *s, size_t n)
{
    if (n == 0)
        return;
    if (o->cap - o->n < n) {
        while (o->cap - o->n < n)
            o->cap = o->cap * 2 + 256;
        if (!(o->b = realloc(o->b, o->cap)))
            abort();
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

static inline void puts_(buf *o, const char *s)
{
    put(o, s, strlen(s));
}

/* The bytes written, in a block of their exact size (AddressSanitizer then
 * sees a read past them), which the caller frees. */
static inline unsigned char *exact_copy(const buf *o)
{
    unsigned char *b = malloc(o->n ? o->n : 1);
    if (!b)
        abort();
    if (o->n)
        memcpy(b, o->b, o->n);
    return b;
}

#endif
