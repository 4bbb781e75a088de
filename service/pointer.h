/* The pointer that replaces an externalized unit in the agent's context:
 * formatted here and parsed back here, so that whoever reads pointer text
 * (the audit, a re-acquisition tool) reads it by the same grammar. */
#ifndef COMPACTD_POINTER_H
#define COMPACTD_POINTER_H

#include "plan.h"

#include <stddef.h>
#include <stdint.h>

/* A pointer reads "[externalized <key> sha256:<16 hex>]": ASCII apart from
 * the key, the same for the same key and text, and POINTER_OVERHEAD bytes
 * longer than the key as written in it. */
#define POINTER_OVERHEAD 39
#define POINTER_SHA_HEX 16
/* Room for the longest pointer and its NUL. */
#define POINTER_MAX_BYTES (UNIT_KEY_MAX_BYTES + POINTER_OVERHEAD + 1)

/* Length in bytes of the pointer of key (key_len bytes, at most
 * UNIT_KEY_MAX_BYTES), whatever the digest. */
size_t pointer_length(const char *key, size_t key_len);

/* Writes the pointer for key and the text's lower-case hex sha256 into out,
 * which has room for pointer_length(key, key_len) + 1 bytes (at most
 * POINTER_MAX_BYTES), NUL-terminated. Returns the pointer's length. */
size_t pointer_format(char *out, const char *key, size_t key_len, const char *sha256_hex);

#endif
