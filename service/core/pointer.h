/* The pointer that replaces an externalized unit in the agent's context:
 * formatted here and parsed back here, so that whoever reads pointer text
 * (the audit, a re-acquisition tool) reads it by the same grammar. */
#ifndef COMPACTD_POINTER_H
#define COMPACTD_POINTER_H

#include "plan.h"
#include "shared_defs.h"

#include <stddef.h>
#include <stdint.h>

/* A pointer reads "[externalized <key> sha256:<16 hex>]" (the digest's
 * short form, sha256.h), the key written with '%', '[' and ']' escaped as
 * %25, %5B and %5D. So a pointer holds
 * exactly one '[' (its first byte) and one ']' (its last): no key can make
 * a pointer that contains, or reads as, another pointer, and the key can be
 * read back unambiguously. ASCII apart from the key, the same for the same
 * key and text, and POINTER_OVERHEAD bytes longer than the key as written.
 * The grammar's pieces (POINTER_OPEN ... POINTER_OVERHEAD) are in
 * shared_defs.h, which the clients' copies are written from too. */
/* Room for the longest pointer (every key byte escaped) and its NUL. */
#define POINTER_MAX_BYTES (3 * UNIT_KEY_MAX_BYTES + POINTER_OVERHEAD + 1)

/* Length in bytes of the pointer of key (key_len bytes, at most
 * UNIT_KEY_MAX_BYTES), whatever the digest. */
size_t pointer_length(const char *key, size_t key_len);

/* Writes the pointer for key and the text's lower-case hex sha256 (at least
 * its first POINTER_SHA_HEX digits) into out, which has room for
 * pointer_length(key, key_len) + 1 bytes (at most POINTER_MAX_BYTES),
 * NUL-terminated. Returns the pointer's length. */
size_t pointer_format(char *out, const char *key, size_t key_len, const char *sha256_hex);

/* Reads pointer text back, as an agent quotes it from its context: the
 * exact form pointer_format() writes, with surrounding white space
 * ignored. Copies the key, unescaped (key_cap bytes of room,
 * NUL-terminated; the key itself may not hold a NUL, as no unit key can),
 * and the 16 hex digits (lower-case, NUL-terminated). Returns 0, or -1 when
 * text is not a pointer: wrong frame, a key that is empty, too long for
 * key_cap or UNIT_KEY_MAX_BYTES, holds a raw '[' or ']' or an escape
 * pointer_format() never writes, or a digest that is not 16 lower-case hex
 * digits. Every pointer pointer_format() writes parses back to its key and
 * digest prefix. The one parser of pointer text. */
int pointer_parse(const char *text, size_t len, char *key, size_t key_cap, size_t *key_len,
                  char sha256_prefix[POINTER_SHA_HEX + 1]);

#endif
