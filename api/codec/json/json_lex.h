/* The pieces of a JSON string that every reader of request bytes shares:
 * runs of plain bytes found eight at a time, UTF-8 sequences checked as
 * jansson checks them, and one escape decoded. Inline, since they run once
 * per byte of every body: the fast reader (json_read.c) and the compact
 * route's direct decoder (api/codec/requests/json_direct.c) use them. */
#ifndef COMPACTD_JSON_LEX_H
#define COMPACTD_JSON_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int json_lex_is_space(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The first byte at or after p that ends a run of plain string bytes: '"',
 * '\\', a control character or a byte of a multi-byte sequence. Eight at a
 * time: in each word, the lowest byte flagged is always a true one (a
 * borrow only ever flags a byte above a flagged one). */
static inline const unsigned char *json_lex_plain_run(const unsigned char *p,
                                                      const unsigned char *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    while (end - p >= 8) {
        uint64_t x, quote, slash;
        memcpy(&x, p, 8);
        quote = x ^ (ones * '"');
        slash = x ^ (ones * '\\');
        uint64_t hit =
            (((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash) | x) &
            highs;
        if (hit)
            return p + (__builtin_ctzll(hit) >> 3);
        p += 8;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80)
        p++;
    return p;
}

/* The length of the well-formed UTF-8 sequence of a code point above
 * U+007F at p, or 0: no overlong form, no surrogate, nothing past
 * U+10FFFF (what jansson's utf8_check_full() accepts). */
static inline size_t json_lex_utf8_sequence(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static inline int json_lex_hex4(const unsigned char *p, uint32_t *v)
{
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i];
        if (c >= '0' && c <= '9')
            c -= '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            c = (c | 0x20) - 'a' + 10;
        else
            return -1;
        x = x << 4 | c;
    }
    *v = x;
    return 0;
}

/* Decodes the escape at p (a backslash) into out[0..*n): the bytes of
 * what it stands for, a surrogate pair as one code point. Returns the
 * bytes it took from p, or 0 when it is not an escape jansson accepts
 * (\u0000 only with allow_nul). */
static inline size_t json_lex_escape(const unsigned char *p, const unsigned char *end,
                                     int allow_nul, unsigned char out[4], size_t *n)
{
    if (end - p < 2)
        return 0;
    /* The byte each one-letter escape stands for; 0: not one. */
    static const char one[256] = {['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
                                  ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t'};
    if (one[p[1]]) {
        out[0] = (unsigned char)one[p[1]];
        *n = 1;
        return 2;
    }
    if (p[1] != 'u')
        return 0;
    uint32_t cp, low;
    size_t took = 6;
    if (end - p < 6 || json_lex_hex4(p + 2, &cp) != 0)
        return 0;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return 0;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        const unsigned char *q = p + 6;
        if (end - q < 6 || q[0] != '\\' || q[1] != 'u' || json_lex_hex4(q + 2, &low) != 0 ||
            low < 0xDC00 || low > 0xDFFF)
            return 0;
        took = 12;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (cp == 0 && !allow_nul)
        return 0;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        *n = 1;
    } else if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        *n = 2;
    } else if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        *n = 3;
    } else {
        out[0] = (unsigned char)(0xF0 | cp >> 18);
        out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[3] = (unsigned char)(0x80 | (cp & 0x3F));
        *n = 4;
    }
    return took;
}

/* Scans a string from p, past its opening quote, to its closing quote:
 * returns the quote's address, or NULL when the string breaks off or
 * holds a control character or malformed UTF-8 before it. *escapes is set
 * when it holds a backslash; its escapes are checked when decoded
 * (json_lex_unescape()). One pass over a string with none. */
static inline const unsigned char *json_lex_string_end(const unsigned char *p,
                                                       const unsigned char *end, int *escapes)
{
    *escapes = 0;
    for (;;) {
        p = json_lex_plain_run(p, end);
        if (p >= end)
            return NULL;
        if (*p == '"')
            return p;
        if (*p >= 0x80) {
            size_t k = json_lex_utf8_sequence(p, end);
            if (!k)
                return NULL;
            p += k;
            continue;
        }
        if (*p != '\\' || end - p < 2)
            return NULL; /* a control character, or a string cut short */
        *escapes = 1;
        p += 2; /* an escaped quote does not end the string */
    }
}

/* Decodes the inside of a string that json_lex_string_end() scanned,
 * s[0..n), into out, which has room for n bytes (decoding only shortens).
 * Returns the decoded length, or (size_t)-1 when an escape is not one
 * jansson accepts (\u0000 only with allow_nul). */
static inline size_t json_lex_unescape(const unsigned char *s, size_t n, int allow_nul, char *out)
{
    const unsigned char *end = s + n;
    char *o = out;
    while (s < end) {
        const unsigned char *b = memchr(s, '\\', (size_t)(end - s));
        size_t plain = b ? (size_t)(b - s) : (size_t)(end - s);
        memcpy(o, s, plain);
        o += plain;
        if (!b)
            break;
        unsigned char u[4];
        size_t k, took = json_lex_escape(b, end, allow_nul, u, &k);
        if (!took)
            return (size_t)-1;
        memcpy(o, u, k);
        o += k;
        s = b + took;
    }
    return (size_t)(o - out);
}

#endif
