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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline int json_lex_is_space(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The first byte at or after p that ends a run of plain string bytes: '"',
 * '\\', a control character or a byte of a multi-byte sequence. Sixteen at
 * a time with SSE2 (a signed compare below 0x20 flags the bytes from 0x80
 * up too), then eight at a time: in each word, the lowest byte flagged is
 * always a true one (a borrow only ever flags a byte above a flagged one). */
static inline const unsigned char *json_lex_plain_run(const unsigned char *p,
                                                      const unsigned char *end)
{
#if defined(__SSE2__)
    const __m128i quotes = _mm_set1_epi8('"'), slashes = _mm_set1_epi8('\\'),
                  spaces = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i hit =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quotes), _mm_cmpeq_epi8(x, slashes)),
                         _mm_cmplt_epi8(x, spaces));
        int m = _mm_movemask_epi8(hit);
        if (m)
            return p + __builtin_ctz((unsigned)m);
        p += 16;
    }
#endif
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

/* Reads a string from p, past its opening quote, to its closing quote,
 * whose address it returns: NULL when the string breaks off, or holds a
 * control character, malformed UTF-8 or (with out) an escape jansson does
 * not accept (\u0000 only with allow_nul). With out, writes the string's
 * decoded bytes there (room for its raw bytes: decoding only shortens) and
 * sets *n to their count; without, only finds the end (escapes unchecked)
 * and sets *n to the raw length. *escapes: whether it holds a backslash. */
static inline const unsigned char *json_lex_string(const unsigned char *p, const unsigned char *end,
                                                   int allow_nul, char *out, size_t *n,
                                                   int *escapes)
{
    const unsigned char *seg = p;
    char *o = out;
    *escapes = 0;
    for (;;) {
        p = json_lex_plain_run(p, end);
        if (p >= end)
            return NULL;
        if (*p == '"')
            break;
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
        if (!out) {
            p += 2; /* an escaped quote does not end the string */
            continue;
        }
        unsigned char u[4];
        size_t k, took = json_lex_escape(p, end, allow_nul, u, &k);
        if (!took)
            return NULL;
        memcpy(o, seg, (size_t)(p - seg));
        o += p - seg;
        memcpy(o, u, k);
        o += k;
        p = seg = p + took;
    }
    if (out) {
        memcpy(o, seg, (size_t)(p - seg));
        *n = (size_t)(o + (p - seg) - out);
    } else {
        *n = (size_t)(p - seg);
    }
    return p;
}

#endif
