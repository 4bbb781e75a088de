/* Formats re-acquisition pointers and parses them back. */
#include "pointer.h"

#include "sha256.h"

#include <string.h>

#define HEAD_LEN (sizeof(POINTER_OPEN) - 1)
#define MID_LEN (sizeof(POINTER_DIGEST) - 1)
#define CLOSE_LEN (sizeof(POINTER_CLOSE) - 1)

_Static_assert(HEAD_LEN + MID_LEN + POINTER_SHA_HEX + CLOSE_LEN == POINTER_OVERHEAD,
               "POINTER_OVERHEAD is the pointer's bytes besides its key");
_Static_assert(CLOSE_LEN == 1, "the parse reads the close as one byte");

/* The bytes a key may not show as they are: the escape itself, and the
 * brackets that frame a pointer. */
static int needs_escape(char c)
{
    return c != '\0' && strchr(POINTER_ESCAPED, c) != NULL;
}

size_t pointer_length(const char *key, size_t key_len)
{
    size_t len = key_len + POINTER_OVERHEAD;
    for (size_t i = 0; i < key_len; i++)
        len += needs_escape(key[i]) ? 2 : 0;
    return len;
}

size_t pointer_format(char *out, const char *key, size_t key_len, const char *sha256_hex)
{
    static const char hex[] = "0123456789ABCDEF";
    char *p = out;
    memcpy(p, POINTER_OPEN, HEAD_LEN);
    p += HEAD_LEN;
    for (size_t i = 0; i < key_len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (needs_escape((char)c)) {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        } else {
            *p++ = (char)c;
        }
    }
    memcpy(p, POINTER_DIGEST, MID_LEN);
    p += MID_LEN;
    memcpy(p, sha256_hex, POINTER_SHA_HEX);
    p += POINTER_SHA_HEX;
    *p++ = POINTER_CLOSE[0];
    *p = '\0';
    return (size_t)(p - out);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int is_space(char c)
{
    return c != '\0' && strchr(POINTER_TRIMMED, c) != NULL;
}

int pointer_parse(const char *text, size_t len, char *key, size_t key_cap, size_t *key_len,
                  char sha256_prefix[POINTER_SHA_HEX + 1])
{
    while (len > 0 && is_space(*text)) {
        text++;
        len--;
    }
    while (len > 0 && is_space(text[len - 1]))
        len--;
    if (len < POINTER_OVERHEAD + 1 || memcmp(text, POINTER_OPEN, HEAD_LEN) != 0 ||
        text[len - 1] != POINTER_CLOSE[0])
        return -1;
    /* The digest is at a fixed distance from the end, so a key may itself
     * hold " sha256:" without confusing the parse. */
    const char *mid = text + len - 1 - POINTER_SHA_HEX - MID_LEN;
    if (memcmp(mid, POINTER_DIGEST, MID_LEN) != 0)
        return -1;
    if (!sha256_prefix_valid(mid + MID_LEN, POINTER_SHA_HEX))
        return -1;
    memcpy(sha256_prefix, mid + MID_LEN, POINTER_SHA_HEX);
    sha256_prefix[POINTER_SHA_HEX] = '\0';

    /* The key as written: only the escapes pointer_format() makes, in the
     * upper case it writes them, so each pointer has one spelling. */
    size_t k = 0;
    for (const char *p = text + HEAD_LEN; p < mid; p++) {
        char c = *p;
        if (c == '\0' || (c != '%' && needs_escape(c)))
            return -1;
        if (c == '%') {
            if (mid - p < 3)
                return -1;
            int hi = hex_value(p[1]), lo = hex_value(p[2]);
            if (hi < 0 || lo < 0 || !needs_escape((char)(hi * 16 + lo)))
                return -1;
            c = (char)(hi * 16 + lo);
            p += 2;
        }
        if (k == UNIT_KEY_MAX_BYTES || k + 1 >= key_cap)
            return -1;
        key[k++] = c;
    }
    if (k == 0)
        return -1;
    key[k] = '\0';
    *key_len = k;
    return 0;
}
