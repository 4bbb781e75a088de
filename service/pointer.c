/* Formats re-acquisition pointers. */
#include "pointer.h"

#include <string.h>

#define POINTER_HEAD "[externalized "
#define POINTER_MID " sha256:"

size_t pointer_length(const char *key, size_t key_len)
{
    (void)key;
    return key_len + POINTER_OVERHEAD;
}

size_t pointer_format(char *out, const char *key, size_t key_len, const char *sha256_hex)
{
    char *p = out;
    memcpy(p, POINTER_HEAD, sizeof(POINTER_HEAD) - 1);
    p += sizeof(POINTER_HEAD) - 1;
    memcpy(p, key, key_len);
    p += key_len;
    memcpy(p, POINTER_MID, sizeof(POINTER_MID) - 1);
    p += sizeof(POINTER_MID) - 1;
    memcpy(p, sha256_hex, POINTER_SHA_HEX);
    p += POINTER_SHA_HEX;
    *p++ = ']';
    *p = '\0';
    return (size_t)(p - out);
}
