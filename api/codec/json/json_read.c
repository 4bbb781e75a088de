/* The fast reader of well-formed JSON. See json_read.h. */
#include "json_read.h"

#include "json_lex.h"

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
    size_t cap;
} reader;

static void skip_space(reader *r)
{
    while (r->p < r->end && json_lex_is_space(*r->p))
        r->p++;
}

/* Room for n bytes in the buffer of decoded strings. 0, or -1. */
static int buf_reserve(reader *r, size_t n)
{
    if (r->cap >= n)
        return 0;
    size_t cap = r->cap ? r->cap : 256;
    while (cap < n) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    char *b = realloc(r->buf, cap);
    if (!b)
        return -1;
    r->buf = b;
    r->cap = cap;
    return 0;
}

/* Reads a string whose opening quote r->p has passed, up to and past its
 * closing one. *s and *n are its bytes: in the body when it has no
 * escape, else in r->buf (*decoded = 1) until the next string. 0, or -1. */
static int read_string(reader *r, const char **s, size_t *n, int *decoded)
{
    int escapes;
    const unsigned char *q = json_lex_string(r->p, r->end, 0, NULL, n, &escapes);
    if (!q)
        return -1;
    *decoded = escapes;
    *s = (const char *)r->p;
    if (escapes) { /* decoded in a second pass, now that its size is known */
        if (buf_reserve(r, *n) != 0 ||
            !json_lex_string(r->p, r->end, (r->flags & JSON_ALLOW_NUL) != 0, r->buf, n, &escapes))
            return -1;
        *s = r->buf;
    }
    r->p = q + 1;
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
