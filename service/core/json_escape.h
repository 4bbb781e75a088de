/* JSON string escaping, written once for every writer of JSON text: the
 * response writer and the carriers the chat renderer prices and writes. */
#ifndef COMPACTD_JSON_ESCAPE_H
#define COMPACTD_JSON_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The most bytes json_escape() writes for len bytes: each may become \u00XX. */
static inline size_t json_escape_room(size_t len)
{
    return len * 6;
}

/* Writes s[0..len) into out as the inside of a JSON string (no quotes):
 * '"', '\\' and control bytes escaped (\n, \r, \t, \b, \f or \u00XX), every
 * other byte as it is. out has room for json_escape_room(len) bytes;
 * returns the number written. */
size_t json_escape(const char *s, size_t len, char *out);

/* The number of bytes json_escape() writes for s[0..len): exact, for a
 * writer that must not hold the worst case's room (an answer counted
 * against the memory budget). */
size_t json_escape_len(const char *s, size_t len);

/* The length of s's longest prefix that json_escape() copies as it is,
 * eight bytes at a time: a word holds a byte to escape when it has one
 * below 0x20, a '"' or a '\\' (the classic "has a zero byte" test on x,
 * x ^ '"' and x ^ '\\'; bytes from 0x80 up never trip it). Most texts
 * need no escape at all. Inline: the writer calls it on every member name. */
static inline size_t json_clean_prefix(const char *s, size_t len)
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

#endif
