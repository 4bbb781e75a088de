/* The acknowledged-spills hint: a direct-mapped table of 64-bit tags. */
#include "known_spills.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static _Atomic uint64_t slots[KNOWN_SPILLS_SLOTS];

/* FNV-1a over ns, a separator and the field, then a final mix so that the
 * slot bits depend on every input bit. Not a secure hash, and it need not
 * be: a wrong answer only makes the script ask for the text. */
static uint64_t tag(const char *ns, const char *field, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)ns; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)field[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1; /* 0 marks an empty slot */
}

int known_spills_has(const char *ns, const char *field, size_t len)
{
    uint64_t t = tag(ns, field, len);
    return atomic_load_explicit(&slots[t & (KNOWN_SPILLS_SLOTS - 1)], memory_order_relaxed) == t;
}

void known_spills_add(const char *ns, const char *field, size_t len)
{
    uint64_t t = tag(ns, field, len);
    atomic_store_explicit(&slots[t & (KNOWN_SPILLS_SLOTS - 1)], t, memory_order_relaxed);
}
