/* A message's spill key, from what identifies it rather than where it sits:
 * the id of its first tool call (a caller), the id of the first call it
 * answers plus ".result" (a result), else "msg-" and 16 hex digits of its
 * JSON's digest. So removing an earlier message changes no key of unchanged
 * content, and a pointer once returned names the same message again. */
#ifndef COMPACTD_CHAT_KEYS_H
#define COMPACTD_CHAT_KEYS_H

#include "chat.h"
#include "sha256.h"

#include <stddef.h>

/* Room for a key and its NUL: an id of up to CHAT_KEY_ID_MAX bytes, the
 * ".result" suffix and a "~<n>" told apart from an earlier equal key. */
#define CHAT_KEY_ID_MAX 48
#define CHAT_KEY_MAX 80

/* Writes the key of every message of req into keys (n rows), sha256 each
 * message's JSON digest (hex). Ids that are not 1 to CHAT_KEY_ID_MAX
 * characters of [A-Za-z0-9._-] are spelled "id-" and 16 hex digits of
 * their digest. Equal keys (an id used again, two messages of the same
 * JSON) are told apart by "~2", "~3", ... in message order. Returns 0, or
 * -1 when out of memory. */
int chat_keys_assign(const chat_request *req, const char (*sha256)[SHA256_HEX_LEN + 1],
                     char (*keys)[CHAT_KEY_MAX]);

#endif
