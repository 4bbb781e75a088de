/* Formats re-acquisition pointers and reads them back. */
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

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int pointer_parse(const char *text, size_t len, char *key, size_t key_cap, size_t *key_len,
                  char sha256_prefix[POINTER_SHA_HEX + 1])
{
    const size_t head = sizeof(POINTER_HEAD) - 1,
                 tail = sizeof(POINTER_MID) - 1 + POINTER_SHA_HEX + 1;
    while (len > 0 && is_space(*text)) {
        text++;
        len--;
    }
    while (len > 0 && is_space(text[len - 1]))
        len--;
    if (len < head + 1 + tail || memcmp(text, POINTER_HEAD, head) != 0 || text[len - 1] != ']')
        return -1;
    /* The digest is at a fixed distance from the end, so a key may itself
     * hold " sha256:" without confusing the parse. */
    const char *mid = text + len - tail;
    if (memcmp(mid, POINTER_MID, sizeof(POINTER_MID) - 1) != 0)
        return -1;
    const char *hex = mid + sizeof(POINTER_MID) - 1;
    for (size_t i = 0; i < POINTER_SHA_HEX; i++) {
        char c = hex[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
        sha256_prefix[i] = c;
    }
    sha256_prefix[POINTER_SHA_HEX] = '\0';
    size_t n = (size_t)(mid - (text + head));
    if (n + 1 > key_cap)
        return -1;
    memcpy(key, text + head, n);
    key[n] = '\0';
    *key_len = n;
    return 0;
}
