/* JSON string escaping; see json_escape.h. */
#include "json_escape.h"

#include <stdint.h>
#include <string.h>

/* The length of s's longest prefix that needs no escape, eight bytes at a
 * time: a word holds a byte to escape when it has one below 0x20, a '"' or
 * a '\\' (the classic "has a zero byte" test on x, x ^ '"' and x ^ '\\';
 * bytes from 0x80 up never trip it). Most texts need no escape at all. */
static size_t clean_prefix(const char *s, size_t len)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t hit = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b);
        if (hit & highs)
            break;
    }
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\')
            break;
    }
    return i;
}

size_t json_escape(const char *s, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = clean_prefix(s, len);
    memcpy(out, s, start);
    char *o = out + start;
    for (size_t i = start; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *o++ = (char)c;
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return (size_t)(o - out);
}

size_t json_escape_len(const char *s, size_t len)
{
    size_t n = len;
    for (size_t i = clean_prefix(s, len); i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        /* A two-byte escape, or \u00XX. */
        n += c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f'
                 ? 1
                 : 5;
    }
    return n;
}
