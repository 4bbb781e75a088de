/* Token counts remembered from one request to the next by the digest of
 * what was counted, so that a history sent again with a few new messages
 * costs the counting of the new ones only. Process-wide and thread-safe;
 * bounded: TOKEN_CACHE_SLOTS entries of 48 bytes (3 MiB), in sets of
 * TOKEN_CACHE_WAYS chosen by digest, a new entry replacing the set's least
 * recently used one (a direct-mapped table of the same size let two texts
 * of one history that share a slot push each other out on every turn). A
 * miss only costs a count: an entry is trusted only when all 128 digest
 * bits and the tokenizer match. */
#ifndef COMPACTD_TOKEN_CACHE_H
#define COMPACTD_TOKEN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_CACHE_SLOTS (1u << 16)
#define TOKEN_CACHE_WAYS 4
#define TOKEN_CACHE_VALUES 2

/* Looks up the counts stored for (tokenizer, sha256_hex); tokenizer is any
 * pointer that identifies the encoding (its address is compared, never
 * read). Returns 1 and fills v, or 0 when absent. */
int token_cache_get(const void *tokenizer, const char *sha256_hex, int64_t v[TOKEN_CACHE_VALUES]);

/* Stores the counts for (tokenizer, sha256_hex). */
void token_cache_put(const void *tokenizer, const char *sha256_hex,
                     const int64_t v[TOKEN_CACHE_VALUES]);

/* Forgets everything (for tests). */
void token_cache_clear(void);

#endif
