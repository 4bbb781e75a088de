/* The SHA-256 digests of texts spilled before, kept in this process so that
 * a text that spills again turn over turn is not hashed again. A digest is
 * given from the cache only when the whole text equals the copy kept beside
 * it, byte for byte: a lookup finds its entry by a keyed hash of the text's
 * length and a few samples of its bytes, and that hash decides nothing.
 * Bounded by bytes (the copies and their entries), the least recently used
 * entry going first; a text longer than a sixteenth of the bound is hashed
 * every time and not kept. Safe from any thread. */
#ifndef COMPACTD_DIGEST_CACHE_H
#define COMPACTD_DIGEST_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The default bound (COMPACTD_SPILL_DIGEST_CACHE_BYTES's), and how to set
 * another (0 keeps nothing: every text is hashed). Setting one drops what
 * no longer fits, least recently used first. */
#define DIGEST_CACHE_DEFAULT_BYTES ((size_t)16 << 20)
void digest_cache_configure(size_t max_bytes);

/* Writes the lower-case hex SHA-256 of text[0..len) and its NUL to hex
 * (65 bytes): the kept one when the same text was seen, else computed and
 * kept, if it fits the bound and memory allows. */
void digest_cache_sha256_hex(const char *text, size_t len, char *hex);

typedef struct {
    size_t entries;
    size_t bytes; /* counted against the bound */
    uint64_t hits, misses;
} digest_cache_stats_t;

/* What the cache holds now, and its lookups since the process started. */
void digest_cache_stats(digest_cache_stats_t *out);

#endif
