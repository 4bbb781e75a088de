/* Reading a spill back the way a pointer names it: by key and a prefix of
 * its text's digest (the pointer shows 16 hex digits; an href all 64). */
#ifndef COMPACTD_SPILL_READ_H
#define COMPACTD_SPILL_READ_H

#include "error.h"
#include "session.h"
#include "sha256.h"

#include <stddef.h>

#define SPILL_PREFIX_MIN 16
#define SPILL_CANDIDATES_MAX 8

/* The versions of one key an ambiguous prefix matched (at most
 * SPILL_CANDIDATES_MAX are named; n counts them all). */
typedef struct {
    size_t n;
    char sha256[SPILL_CANDIDATES_MAX][SHA256_HEX_LEN + 1];
} spill_candidates;

/* Tells whether s is SPILL_PREFIX_MIN to 64 lower-case hex digits. */
int spill_prefix_valid(const char *s);

/* Reads the spill of key in ns ("tenant:session") whose sha256 starts with
 * prefix (valid per spill_prefix_valid(); NULL: the newest version of key).
 * Returns 1 when exactly one matches (the caller then clears out with
 * spill_record_clear()); 0 when none does; 2 when several do (their digests
 * in amb, out untouched); -1 with StoreUnavailable or Internal in err. */
int spill_read(const char *ns, const char *key, size_t key_len, const char *prefix,
               spill_record *out, spill_candidates *amb, compactd_error *err);

#endif
