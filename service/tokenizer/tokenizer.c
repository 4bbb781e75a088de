/* The table of encodings and the counting loop: a BPE encoding splits text
 * with its pre-tokenizer (PCRE2, UTF and UCP, JIT-compiled; a text that is
 * all ASCII by pretok_ascii.c's hand-written equal), then each piece is one
 * token when the whole piece is one, else what bpe_count() merges it
 * into. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"

#include "bpe.h"
#include "pretok_ascii.h"
#include "ranks.h"

#include <pcre2.h>

#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Pre-tokenizer patterns ---- */

/* The patterns are those OpenAI's tiktoken runs (its Rust regex engine):
 * \s is Unicode's White_Space, which has U+0085 and not U+FEFF (PCRE2's own
 * \s lacks U+0085; ECMAScript's has U+FEFF, which is where the JavaScript
 * ports gpt-tokenizer and js-tiktoken count differently), $ is only the end
 * of the text, and (?i) folds case by Unicode's rules. */
#define WS                                                                                         \
    "\\t\\n\\x0B\\f\\r "                                                                           \
    "\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define UPPERISH "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define LOWERISH "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"

static const char o200k_pattern[] =
    "[^\\r\\n\\p{L}\\p{N}]?" UPPERISH "*" LOWERISH "+" CONTRACTION "?"
    "|[^\\r\\n\\p{L}\\p{N}]?" UPPERISH "+" LOWERISH "*" CONTRACTION "?"
    "|\\p{N}{1,3}"
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n/]*"
    "|[" WS "]*[\\r\\n]+"
    "|[" WS "]+(?![^" WS "])"
    "|[" WS "]+";

static const char cl100k_pattern[] = CONTRACTION "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
                                                 "|\\p{N}{1,3}"
                                                 "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*"
                                                 "|[" WS "]*[\\r\\n]+"
                                                 "|[" WS "]+(?![^" WS "])"
                                                 "|[" WS "]+";

/* ---- The table ---- */

struct tokenizer {
    const char *name;
    /* BPE encodings only; "bytes" has none of these. */
    const char *ranks_file;   /* in the ranks folder */
    const char *ranks_sha256; /* of that file, as npm's gpt-tokenizer 4.0.0 ships it */
    size_t ranks_n;
    const char *pattern;
    pretok_kind ascii; /* the pattern written out for ASCII text */
    /* Set by tokenizer_load(). */
    ranks *ranks;
    pcre2_code *re;
    char *missing; /* the rank file's path when it was not found */
};

/* Every match runs with no step limit of PCRE2's own (10 million by
 * default): a run of whitespace costs steps linear in its length (the
 * pattern tries a line break at its end before it settles on the run),
 * and a text within compactd's limits must be counted, not refused. The
 * patterns are fixed and backtrack at most linearly, so nothing here needs
 * the limit's protection. Read-only once made: shared by every thread. */
static pcre2_match_context *unlimited;

static tokenizer table[] = {
    {"bytes", NULL, NULL, 0, NULL, PRETOK_NONE, NULL, NULL, NULL},
    {"o200k_base", "o200k_base.tiktoken",
     "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d", 199998, o200k_pattern,
     PRETOK_O200K, NULL, NULL, NULL},
    {"cl100k_base", "cl100k_base.tiktoken",
     "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", 100256, cl100k_pattern,
     PRETOK_CL100K, NULL, NULL, NULL},
};

#define NTABLE (sizeof table / sizeof table[0])

static int usable(const tokenizer *t)
{
    return t->pattern == NULL || t->re != NULL;
}

const tokenizer *tokenizer_find(const char *name, size_t len)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return usable(&table[i]) ? &table[i] : NULL;
    return NULL;
}

static const tokenizer *default_tokenizer = &table[0];

const tokenizer *tokenizer_at(size_t i)
{
    for (size_t k = 0; k < NTABLE; k++)
        if (usable(&table[k]) && i-- == 0)
            return &table[k];
    return NULL;
}

const tokenizer *tokenizer_default(void)
{
    return default_tokenizer;
}

void tokenizer_set_default(const tokenizer *t)
{
    assert(t && usable(t));
    default_tokenizer = t;
}

void tokenizer_names(char *out, size_t size)
{
    size_t used = 0;
    if (size > 0)
        out[0] = '\0';
    for (size_t i = 0; i < NTABLE && used < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", table[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

const char *tokenizer_name(const tokenizer *t)
{
    return t->name;
}

/* ---- Counting ---- */

/* The length of the longest prefix of s[0..len) that is well-formed UTF-8
 * (no overlong forms, no surrogates, nothing past U+10FFFF): what PCRE2 may
 * be given without its own check, which would rescan the whole text at
 * every match. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            n = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else
            return i;
        if (len - i <= n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= n; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
        i += n + 1;
    }
    return i;
}

/* Tokens of the piece s[0..len): one when it is a token, else its merges. */
static int64_t count_piece(const tokenizer *t, const unsigned char *s, size_t len)
{
    return ranks_lookup(t->ranks, s, len) != RANKS_NONE ? 1 : bpe_count(t->ranks, s, len);
}

/* Tokens of the well-formed UTF-8 text s[0..len) under BPE encoding t. */
static int64_t count_utf8(const tokenizer *t, pcre2_match_data *md, const unsigned char *s,
                          size_t len)
{
    int64_t total = 0;
    size_t off = 0;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    while (off < len) {
        int rc = pcre2_match(t->re, s, len, off, PCRE2_NO_UTF_CHECK, md, unlimited);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return -1; /* PCRE2_ERROR_NOMEMORY */
        size_t start = ov[0], end = ov[1];
        if (end == start) { /* no alternative matches empty; never loop if one did */
            off = start + 1;
            while (off < len && (s[off] & 0xc0) == 0x80)
                off++;
            continue;
        }
        int64_t n = count_piece(t, s + start, end - start);
        if (n < 0)
            return -1;
        total += n;
        off = end;
    }
    return total;
}

/* The same for an ASCII text, split by hand (pretok_ascii.c). */
static int64_t count_ascii(const tokenizer *t, const unsigned char *s, size_t len)
{
    int64_t total = 0;
    for (size_t off = 0; off < len;) {
        size_t end = pretok_ascii_next(t->ascii, s, len, off);
        int64_t n = count_piece(t, s + off, end - off);
        if (n < 0)
            return -1;
        total += n;
        off = end;
    }
    return total;
}

size_t tokenizer_piece_end(const tokenizer *t, const char *text, size_t len, size_t off,
                           int by_hand)
{
    const unsigned char *s = (const unsigned char *)text;
    if (by_hand)
        return pretok_ascii_next(t->ascii, s, len, off);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md)
        return 0;
    /* As count_utf8() matches: the match found must start at off. */
    int rc = pcre2_match(t->re, s, len, off, PCRE2_NO_UTF_CHECK, md, unlimited);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t end = rc < 0 || ov[0] != off ? 0 : ov[1];
    pcre2_match_data_free(md);
    return end;
}

int tokenizer_counts_length(const tokenizer *t)
{
    return t->pattern == NULL;
}

/* Why the two patterns end a piece at both cuts. Pieces are matched one
 * after the other, each from where the last ended, and no alternative
 * looks behind, so a cut that ends a piece in the text whole ends one
 * wherever the text is cut there, and what follows splits as it would
 * alone. (a) The only alternative that takes an ASCII punctuation mark
 * followed by a space is the run of marks (the letters' optional first
 * character must have a letter after it); the run stops at the space,
 * which neither its class nor its trailing [\r\n/] takes. What comes
 * before the mark split as it would alone: no piece before it reaches
 * past it, and the one look-ahead, white space's (?!\S), sees the mark in
 * either case. (b) Only \p{N}{1,3} takes a digit, and nothing but digits;
 * a run of digits then splits as it does alone. Before it, a mark ends a
 * run of marks at once; one space after a letter is a piece of its own
 * (the letters' piece stops at the space, and no alternative takes a space
 * and then a digit), also where it ends the text, as it does when the
 * part before the digits is counted alone. UTF-8 that is not valid only
 * adds cuts, at its own bytes, whichever side of the cut it is. */
int tokenizer_counts_by_parts(const tokenizer *t)
{
    return t->pattern == NULL || t->pattern == o200k_pattern || t->pattern == cl100k_pattern;
}

int64_t tokenizer_count(const tokenizer *t, const char *text, size_t len)
{
    if (t->pattern == NULL || len == 0)
        return (int64_t)len;
    assert(t->re);
    if (t->ascii != PRETOK_NONE && pretok_is_ascii((const unsigned char *)text, len))
        return count_ascii(t, (const unsigned char *)text, len);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md)
        return -1;
    const unsigned char *s = (const unsigned char *)text;
    int64_t total = 0;
    size_t off = 0;
    while (off < len) {
        size_t ok = utf8_valid_prefix(s + off, len - off);
        int64_t n = count_utf8(t, md, s + off, ok);
        if (n < 0) {
            total = -1;
            break;
        }
        total += n;
        off += ok;
        if (off < len) { /* a byte that is not UTF-8: one token of its own */
            total++;
            off++;
        }
    }
    pcre2_match_data_free(md);
    return total;
}

/* ---- Loading ---- */

static int load_one(tokenizer *t, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, t->ranks_file) >= sizeof path) {
        snprintf(err, errlen, "%s: the ranks folder's path is too long", t->name);
        return -1;
    }
    /* A file that is not there leaves its encoding out (requests naming it
     * are refused, naming the file); one that is there must be whole. */
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        t->missing = strdup(path);
        if (!t->missing) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    char why[512];
    ranks *r = ranks_load_file(path, t->ranks_sha256, t->ranks_n, why, sizeof why);
    if (!r) {
        snprintf(err, errlen, "ranks of %s: %s", t->name, why);
        return -1;
    }
    /* Merging starts from single bytes, so a byte-level table has all 256. */
    for (unsigned b = 0; b < 256; b++) {
        unsigned char byte = (unsigned char)b;
        if (ranks_lookup(r, &byte, 1) == RANKS_NONE) {
            snprintf(err, errlen, "ranks of %s: %s has no token for byte 0x%02x", t->name, path, b);
            ranks_free(r);
            return -1;
        }
    }
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)t->pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        snprintf(err, errlen, "%s: pre-tokenizer pattern, offset %zu: %s", t->name, (size_t)at,
                 (const char *)msg);
        ranks_free(r);
        return -1;
    }
    /* Without JIT (a platform PCRE2 has none for) pcre2_match interprets. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    t->ranks = r;
    t->re = re;
    return 0;
}

int tokenizer_load(const char *ranks_dir, char *err, size_t errlen)
{
    if (!unlimited) {
        unlimited = pcre2_match_context_create(NULL);
        if (!unlimited) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        pcre2_set_match_limit(unlimited, UINT32_MAX);
        pcre2_set_depth_limit(unlimited, UINT32_MAX);
    }
    for (size_t i = 0; i < NTABLE; i++) {
        if (!table[i].pattern || table[i].re)
            continue;
        free(table[i].missing); /* looked for again */
        table[i].missing = NULL;
        if (load_one(&table[i], ranks_dir, err, errlen) != 0)
            return -1;
    }
    return 0;
}

const char *tokenizer_missing_file(const char *name, size_t len)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return table[i].missing;
    return NULL;
}

size_t tokenizer_missing_list(char *out, size_t size)
{
    size_t n = 0, used = 0;
    if (size > 0)
        out[0] = '\0';
    for (size_t i = 0; i < NTABLE; i++) {
        if (!table[i].missing)
            continue;
        if (used < size) {
            int w = snprintf(out + used, size - used, "%s%s (%s)", n ? ", " : "", table[i].name,
                             table[i].missing);
            used += w > 0 ? (size_t)w : 0;
        }
        n++;
    }
    return n;
}

void tokenizer_unload(void)
{
    for (size_t i = 0; i < NTABLE; i++) {
        pcre2_code_free(table[i].re);
        ranks_free(table[i].ranks);
        free(table[i].missing);
        table[i].re = NULL;
        table[i].ranks = NULL;
        table[i].missing = NULL;
    }
    pcre2_match_context_free(unlimited);
    unlimited = NULL;
    default_tokenizer = &table[0];
}
