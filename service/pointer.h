/* The pointer that replaces an externalized unit in the agent's context. */
#ifndef COMPACTD_POINTER_H
#define COMPACTD_POINTER_H

#include <stddef.h>
#include <stdint.h>

/* A pointer reads "[externalized <key> sha256:<16 hex>]": ASCII apart from
 * the key, the same for the same key and text, and POINTER_OVERHEAD bytes
 * longer than the key. Its cost in tokens is its length in bytes, an upper
 * bound under any byte-level BPE tokenizer. */
#define POINTER_OVERHEAD 39
#define POINTER_SHA_HEX 16

static inline int64_t pointer_tokens(size_t key_len)
{
    return (int64_t)(key_len + POINTER_OVERHEAD);
}

/* Writes the pointer for key and the text's lower-case hex sha256 into out,
 * which has room for pointer_tokens(key_len) + 1 bytes, NUL-terminated.
 * Returns the pointer's length. */
size_t pointer_format(char *out, const char *key, size_t key_len, const char *sha256_hex);

#endif
