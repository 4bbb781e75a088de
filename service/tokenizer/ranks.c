/* The .tiktoken rank table: a strict parser (a truncated, reordered or
 * hand-edited file is refused, never half-used) and an open-addressing hash
 * table from token bytes to rank. */
#include "ranks.h"

#include "sha256.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One token: its bytes at blob + off. */
typedef struct {
    uint32_t off;
    uint32_t len;
} ranks_token;

/* A hash slot: the low 32 bits of the token's hash (0 is mapped to 1, so 0
 * marks an empty slot) and its rank, which indexes tokens[]. */
typedef struct {
    uint32_t tag;
    int32_t rank;
} ranks_slot;

struct ranks {
    unsigned char *blob; /* every token's bytes, back to back */
    ranks_token *tokens; /* by rank */
    size_t n;
    ranks_slot *slots;
    size_t mask; /* slots - 1; a power of two at least twice n */
    size_t max_len;
    /* A Bloom filter of the tokens, two bits in one word per token, about
     * ten bits per token: most lookups while merging are of pairs that are
     * no token, and this answers those from a table small enough to stay
     * in cache (256 KB for o200k_base, against 4 MB of slots). */
    uint64_t *filter;
    size_t filter_mask; /* words - 1 */
};

static void errorf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- Hashing ---- */

static uint64_t load_le(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++)
        w |= (uint64_t)p[i] << (8 * i);
    return w;
}

/* A multiply-xorshift mix over 8-byte words: token strings are short, so
 * this is a handful of multiplications per lookup. */
static uint64_t hash_bytes(const unsigned char *b, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ (len * 0xff51afd7ed558ccdu);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9u;
        h ^= h >> 31;
        b += 8;
        len -= 8;
    }
    if (len) {
        h = (h ^ load_le(b, len)) * 0x94d049bb133111ebu;
        h ^= h >> 29;
    }
    h *= 0xbf58476d1ce4e5b9u;
    return h ^ (h >> 32);
}

static uint64_t load8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static uint32_t load4(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* memcmp(a, b, n) == 0 without a call: tokens are short. Reads no byte
 * outside either range (the last word overlaps the one before). */
static int same_bytes(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n >= 8) {
        for (; n > 8; n -= 8, a += 8, b += 8)
            if (load8(a) != load8(b))
                return 0;
        return load8(a + n - 8) == load8(b + n - 8);
    }
    if (n >= 4)
        return load4(a) == load4(b) && load4(a + n - 4) == load4(b + n - 4);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static size_t filter_word(const ranks *r, uint64_t h)
{
    return (size_t)(h >> 8) & r->filter_mask;
}

static uint64_t filter_bits(uint64_t h)
{
    return (uint64_t)1 << (h >> 52 & 63) | (uint64_t)1 << (h >> 58);
}

static uint32_t tag_of(uint64_t h)
{
    uint32_t t = (uint32_t)h;
    return t ? t : 1;
}

int32_t ranks_lookup(const ranks *r, const unsigned char *b, size_t len)
{
    if (len == 0 || len > r->max_len)
        return RANKS_NONE;
    uint64_t h = hash_bytes(b, len), bits = filter_bits(h);
    if ((r->filter[filter_word(r, h)] & bits) != bits)
        return RANKS_NONE;
    uint32_t tag = tag_of(h);
    for (size_t i = (size_t)(h >> 32) & r->mask;; i = (i + 1) & r->mask) {
        const ranks_slot *s = &r->slots[i];
        if (s->tag == 0)
            return RANKS_NONE;
        if (s->tag == tag) {
            const ranks_token *t = &r->tokens[s->rank];
            if (t->len == len && same_bytes(r->blob + t->off, b, len))
                return s->rank;
        }
    }
}

size_t ranks_size(const ranks *r)
{
    return r->n;
}

/* Adds token `rank` to the hash table; returns the rank of an earlier token
 * with the same bytes, or RANKS_NONE. */
static int32_t insert(ranks *r, int32_t rank)
{
    const ranks_token *t = &r->tokens[rank];
    const unsigned char *b = r->blob + t->off;
    uint64_t h = hash_bytes(b, t->len);
    uint32_t tag = tag_of(h);
    r->filter[filter_word(r, h)] |= filter_bits(h);
    for (size_t i = (size_t)(h >> 32) & r->mask;; i = (i + 1) & r->mask) {
        ranks_slot *s = &r->slots[i];
        if (s->tag == 0) {
            s->tag = tag;
            s->rank = rank;
            return RANKS_NONE;
        }
        const ranks_token *o = &r->tokens[s->rank];
        if (s->tag == tag && o->len == t->len && memcmp(r->blob + o->off, b, t->len) == 0)
            return s->rank;
    }
}

/* ---- Parsing ---- */

static int base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes standard padded base64 s[0..n) into out; returns the decoded
 * length, or -1 unless s is canonical base64 of at least one byte. */
static long base64_decode(const char *s, size_t n, unsigned char *out)
{
    if (n == 0 || n % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad || (v[k] = base64_value(c)) < 0) {
                return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
        /* Bits that padding drops must be zero, so each token has one spelling. */
        if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
            return -1;
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
    }
    return (long)o;
}

/* Parses the decimal rank s[0..n): digits only, below 2^31. */
static long parse_rank(const char *s, size_t n)
{
    if (n == 0 || n > 10)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > INT32_MAX - 1 || (n > 1 && s[0] == '0'))
        return -1;
    return v;
}

ranks *ranks_parse(const char *data, size_t len, size_t expected_n, char *err, size_t errlen)
{
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += data[i] == '\n';
    if (len == 0) {
        errorf(err, errlen, "empty");
        return NULL;
    }
    if (data[len - 1] != '\n') {
        errorf(err, errlen, "line %zu: truncated (no newline at the end of the file)", lines + 1);
        return NULL;
    }
    if (expected_n && lines != expected_n) {
        errorf(err, errlen, "holds %zu tokens, expected %zu", lines, expected_n);
        return NULL;
    }
    if (lines >= INT32_MAX) {
        errorf(err, errlen, "too many lines");
        return NULL;
    }
    ranks *r = calloc(1, sizeof *r);
    size_t cap = 4;
    while (cap < 2 * lines)
        cap *= 2;
    if (r) {
        /* Decoded tokens are shorter than the text that spells them. */
        r->blob = malloc(len);
        r->tokens = malloc(lines * sizeof *r->tokens);
        r->slots = calloc(cap, sizeof *r->slots);
        r->mask = cap - 1;
        size_t words = 1;
        while (64 * words < 10 * lines)
            words *= 2;
        r->filter = calloc(words, sizeof *r->filter);
        r->filter_mask = words - 1;
    }
    if (!r || !r->blob || !r->tokens || !r->slots || !r->filter) {
        ranks_free(r);
        errorf(err, errlen, "out of memory");
        return NULL;
    }
    size_t used = 0;
    const char *p = data, *end = data + len;
    for (size_t line = 0; line < lines; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *sp = memchr(p, ' ', (size_t)(nl - p));
        long n, rank;
        if (!sp || (n = base64_decode(p, (size_t)(sp - p), r->blob + used)) < 0) {
            errorf(err, errlen, "line %zu: not \"<base64 token> <rank>\"", line + 1);
            goto fail;
        }
        if ((rank = parse_rank(sp + 1, (size_t)(nl - sp - 1))) < 0) {
            errorf(err, errlen, "line %zu: the rank is not a decimal number", line + 1);
            goto fail;
        }
        if ((size_t)rank != line) {
            errorf(err, errlen, "line %zu: rank %ld where %zu was due (ranks go 0, 1, 2, ...)",
                   line + 1, rank, line);
            goto fail;
        }
        r->tokens[line] = (ranks_token){(uint32_t)used, (uint32_t)n};
        int32_t twin = insert(r, (int32_t)line);
        if (twin != RANKS_NONE) {
            errorf(err, errlen, "line %zu: the same token as line %d", line + 1, twin + 1);
            goto fail;
        }
        used += (size_t)n;
        if ((size_t)n > r->max_len)
            r->max_len = (size_t)n;
        r->n = line + 1;
        p = nl + 1;
    }
    return r;
fail:
    ranks_free(r);
    return NULL;
}

void ranks_free(ranks *r)
{
    if (!r)
        return;
    free(r->blob);
    free(r->tokens);
    free(r->slots);
    free(r->filter);
    free(r);
}

/* ---- Loading ---- */

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        errorf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *grown = realloc(buf, cap);
            if (!grown) {
                errorf(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        errorf(err, errlen, "%s: read error", path);
        goto fail;
    }
    fclose(f);
    *len = n;
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

ranks *ranks_load_file(const char *path, const char *want_sha256, size_t expected_n, char *err,
                       size_t errlen)
{
    size_t len;
    char *data = read_file(path, &len, err, errlen);
    if (!data)
        return NULL;
    char got[SHA256_HEX_LEN + 1];
    sha256_hex(data, len, got);
    if (strcmp(got, want_sha256) != 0) {
        errorf(err, errlen, "%s: sha256 %s, expected %s (a different or damaged file)", path, got,
               want_sha256);
        free(data);
        return NULL;
    }
    char why[200];
    ranks *r = ranks_parse(data, len, expected_n, why, sizeof why);
    free(data);
    if (!r)
        errorf(err, errlen, "%s: %s", path, why);
    return r;
}
