/* The fast reader of well-formed JSON. See json_read.h. */
#include "json_read.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper nesting goes to jansson, which allows JSON_PARSER_MAX_DEPTH;
 * request bodies are refused far above this by the shape guard. */
#define READ_DEPTH 512
/* A real longer than this goes to jansson (strtod wants a NUL). */
#define REAL_MAX 64

typedef struct {
    const unsigned char *p, *end;
    size_t flags;
    int depth;
    char *buf; /* a string with escapes, decoded */
    size_t cap, used;
} reader;

static void skip_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* The first byte at or after p that ends a run of plain string bytes: '"',
 * '\\', a control character or a byte of a multi-byte sequence. Eight at a
 * time: in each word, the lowest byte flagged is always a true one (a
 * borrow only ever flags a byte above a flagged one). */
static const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
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
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end)
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

static int buf_add(reader *r, const void *s, size_t n)
{
    if (n == 0)
        return 0;
    if (r->cap - r->used < n) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap - r->used < n) {
            if (cap > SIZE_MAX / 2)
                return -1;
            cap *= 2;
        }
        char *b = realloc(r->buf, cap);
        if (!b)
            return -1;
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->used, s, n);
    r->used += n;
    return 0;
}

static int hex4(const unsigned char *p, uint32_t *v)
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

/* Decodes the escape at r->p (a backslash) onto the buffer. 0, or -1. */
static int read_escape(reader *r)
{
    const unsigned char *p = r->p;
    if (r->end - p < 2)
        return -1;
    /* The byte each one-letter escape stands for; 0: not one. */
    static const char one[256] = {['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
                                  ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t'};
    if (one[p[1]]) {
        r->p = p + 2;
        return buf_add(r, &one[p[1]], 1);
    }
    if (p[1] != 'u')
        return -1;
    uint32_t cp, low;
    if (r->end - p < 6 || hex4(p + 2, &cp) != 0)
        return -1;
    p += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return -1;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (r->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &low) != 0 ||
            low < 0xDC00 || low > 0xDFFF)
            return -1;
        p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (cp == 0 && !(r->flags & JSON_ALLOW_NUL))
        return -1;
    unsigned char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xF0 | cp >> 18);
        u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    r->p = p;
    return buf_add(r, u, n);
}

/* Reads a string whose opening quote r->p has passed, up to and past its
 * closing one. *s and *n are its bytes: in the body when it has no
 * escape, else in r->buf (*decoded = 1) until the next string. 0, or -1. */
static int read_string(reader *r, const char **s, size_t *n, int *decoded)
{
    const unsigned char *seg = r->p, *p = r->p;
    *decoded = 0;
    for (;;) {
        p = plain_run(p, r->end);
        if (p >= r->end)
            return -1;
        if (*p == '"')
            break;
        if (*p >= 0x80) {
            size_t k = utf8_sequence(p, r->end);
            if (!k)
                return -1;
            p += k;
            continue;
        }
        if (*p != '\\')
            return -1; /* a control character */
        if (!*decoded) {
            *decoded = 1;
            r->used = 0;
        }
        if (buf_add(r, seg, (size_t)(p - seg)) != 0)
            return -1;
        r->p = p;
        if (read_escape(r) != 0)
            return -1;
        p = seg = r->p;
    }
    if (*decoded) {
        if (buf_add(r, seg, (size_t)(p - seg)) != 0)
            return -1;
        *s = r->buf ? r->buf : "";
        *n = r->used;
    } else {
        *s = (const char *)seg;
        *n = (size_t)(p - seg);
    }
    r->p = p + 1;
    return 0;
}

static int is_digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* A number as jansson's lexer reads it: an integer when it has neither
 * fraction nor exponent (strtoll's range), else a real (strtod). */
static json_t *read_number(reader *r)
{
    const unsigned char *s = r->p, *p = s, *end = r->end;
    int neg = p < end && *p == '-', real = 0;
    p += neg;
    if (!is_digit(p, end))
        return NULL;
    if (*p == '0') {
        if (is_digit(++p, end))
            return NULL; /* a leading zero */
    } else {
        while (is_digit(p, end))
            p++;
    }
    if (p < end && *p == '.') {
        real = 1;
        if (!is_digit(++p, end))
            return NULL;
        while (is_digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        real = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, end))
            return NULL;
        while (is_digit(p, end))
            p++;
    }
    r->p = p;
    if (!real) {
        unsigned long long limit = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX, v = 0;
        for (const unsigned char *q = s + neg; q < p; q++) {
            unsigned d = *q - '0';
            if (v > (limit - d) / 10)
                return NULL; /* out of range: jansson's error */
            v = v * 10 + d;
        }
        json_int_t i = !neg                                ? (json_int_t)v
                       : v > (unsigned long long)LLONG_MAX ? LLONG_MIN
                                                           : -(json_int_t)v;
        return json_integer(i);
    }
    /* strtod reads the locale's decimal point, which jansson swaps in. */
    size_t len = (size_t)(p - s);
    const char *point = localeconv()->decimal_point;
    if (len >= REAL_MAX || !point || strcmp(point, ".") != 0)
        return NULL;
    char text[REAL_MAX], *stop;
    memcpy(text, s, len);
    text[len] = '\0';
    errno = 0;
    double d = strtod(text, &stop);
    if (stop != text + len || ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE))
        return NULL;
    return json_real(d);
}

static json_t *read_literal(reader *r, const char *word, size_t n, json_t *value)
{
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return NULL;
    r->p += n;
    return value;
}

static json_t *read_value(reader *r);

/* Takes c when it comes next, after any space. */
static int take(reader *r, char c)
{
    skip_space(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return 1;
    }
    return 0;
}

/* After a member or an element: 1 when a comma says another follows, 0
 * when close ends the container, -1 for anything else. */
static int after_item(reader *r, char close)
{
    if (take(r, ',')) {
        skip_space(r);
        return 1;
    }
    return take(r, close) ? 0 : -1;
}

static json_t *read_object(reader *r)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    r->p++;
    if (take(r, '}'))
        return obj;
    for (;;) {
        const char *key;
        size_t key_len;
        int decoded;
        if (r->p >= r->end || *r->p != '"')
            break;
        r->p++;
        if (read_string(r, &key, &key_len, &decoded) != 0)
            break;
        /* The value's strings reuse the buffer: a decoded key is copied. */
        char *copy = NULL;
        if (decoded) {
            if (memchr(key, '\0', key_len) || !(copy = malloc(key_len ? key_len : 1)))
                break;
            memcpy(copy, key, key_len);
            key = copy;
        }
        json_t *v = NULL;
        if (take(r, ':')) {
            skip_space(r);
            v = read_value(r);
        }
        int ok = v != NULL;
        if (ok && (r->flags & JSON_REJECT_DUPLICATES) && json_object_getn(obj, key, key_len)) {
            json_decref(v);
            ok = 0;
        }
        /* setn takes v even when it fails. */
        ok = ok && json_object_setn_new_nocheck(obj, key, key_len, v) == 0;
        free(copy);
        int next = ok ? after_item(r, '}') : -1;
        if (next == 0)
            return obj;
        if (next < 0)
            break;
    }
    json_decref(obj);
    return NULL;
}

static json_t *read_array(reader *r)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    r->p++;
    if (take(r, ']'))
        return arr;
    for (;;) {
        json_t *v = read_value(r);
        int next = v && json_array_append_new(arr, v) == 0 ? after_item(r, ']') : -1;
        if (next == 0)
            return arr;
        if (next < 0)
            break;
    }
    json_decref(arr);
    return NULL;
}

static json_t *read_value(reader *r)
{
    if (r->p >= r->end)
        return NULL;
    switch (*r->p) {
    case '{':
    case '[': {
        if (r->depth == READ_DEPTH)
            return NULL;
        r->depth++;
        json_t *v = *r->p == '{' ? read_object(r) : read_array(r);
        r->depth--;
        return v;
    }
    case '"': {
        const char *s;
        size_t n;
        int decoded;
        r->p++;
        if (read_string(r, &s, &n, &decoded) != 0)
            return NULL;
        return json_stringn_nocheck(s, n);
    }
    case 't':
        return read_literal(r, "true", 4, json_true());
    case 'f':
        return read_literal(r, "false", 5, json_false());
    case 'n':
        return read_literal(r, "null", 4, json_null());
    default:
        return read_number(r);
    }
}

json_t *json_read(const char *buf, size_t len, size_t flags)
{
    if (!buf || (flags & ~(size_t)JSON_READ_FLAGS))
        return NULL;
    reader r = {
        .p = (const unsigned char *)buf, .end = (const unsigned char *)buf + len, .flags = flags};
    skip_space(&r);
    json_t *doc = NULL;
    if (r.p < r.end && (*r.p == '{' || *r.p == '['))
        doc = read_value(&r);
    skip_space(&r);
    if (doc && r.p != r.end) {
        json_decref(doc);
        doc = NULL;
    }
    free(r.buf);
    return doc;
}
