/* libFuzzer target: token counting against a reference written plainly.
 *
 * For o200k_base and cl100k_base, on the input's bytes and on the same
 * bytes cut to ASCII (each byte's top bit cleared):
 *  - the hand-written ASCII pre-tokenizer (pretok_ascii.c) ends the piece
 *    that starts at every offset of the ASCII text where the encoding's
 *    pattern, matched through PCRE2, ends it;
 *  - tokenizer_count() equals tiktoken's encode_ordinary() count written
 *    plainly: the text split into its longest runs of well-formed UTF-8
 *    (decoded here, each byte that is not UTF-8 one token), each run into
 *    the pattern's pieces by PCRE2, each piece one token when it is one,
 *    else merged as tiktoken's _byte_pair_merge() merges (the lowest rank
 *    first, the leftmost of equals), on rank tables this target parses
 *    itself from the rank files;
 *  - the count adds up where tokenizer_counts_by_parts() says it does: cut
 *    (a) after an ASCII punctuation mark that a space follows, and (b)
 *    around a run of ASCII digits after a mark, or after a letter and one
 *    space, that no digit of any script follows.
 * "bytes" counts the bytes. The node test tokenizer_differential holds the
 * pattern itself to gpt-tokenizer. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "ranks.h"
#include "tokenizer.h"

#include <pcre2.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"o200k_base", "cl100k_base"};
#define N_ENC (sizeof names / sizeof names[0])
static const tokenizer *enc[N_ENC];
static ranks *table[N_ENC];
static pcre2_code *digit_re; /* \p{N} at the start */
static pcre2_match_data *digit_md;
static unsigned long texts, pieces_checked, cuts_checked;

static void fail(const char *what, const char *name, const unsigned char *s, size_t len)
{
    fprintf(stderr, "fuzz_tokenizer: %s: %s\n", name, what);
    for (size_t i = 0; i < len && i < 600; i++)
        fprintf(stderr, s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' ? "%c" : "\\x%02x", s[i]);
    fputc('\n', stderr);
    abort();
}

/* ---- The reference ---- */

/* The length of the well-formed UTF-8 sequence at s[0..n), or 0. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t k = s[0] >= 0xF8 ? 0 : s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    if (k == 0 || k > n)
        return 0;
    uint32_t cp = s[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

/* tiktoken's _byte_pair_merge(): parts[i] starts a part, rank[i] is the
 * rank of the part at i joined with the next one. */
static int64_t merge_count(const ranks *r, const unsigned char *p, size_t len)
{
    if (len == 1)
        return 1;
    size_t n = len + 1, *start = malloc(n * sizeof *start);
    int32_t *rank = malloc(n * sizeof *rank);
    if (!start || !rank)
        abort();
    for (size_t i = 0; i < n; i++) {
        start[i] = i;
        rank[i] = i + 2 <= len ? ranks_lookup(r, p + i, 2) : RANKS_NONE;
    }
    for (;;) {
        size_t best = n;
        for (size_t i = 0; i + 1 < n; i++)
            if (rank[i] != RANKS_NONE && (best == n || rank[i] < rank[best]))
                best = i;
        if (best == n)
            break;
        memmove(start + best + 1, start + best + 2, (n - best - 2) * sizeof *start);
        memmove(rank + best + 1, rank + best + 2, (n - best - 2) * sizeof *rank);
        n--;
        /* The joined part and its neighbours' pairs, as tiktoken's get_rank. */
        for (size_t i = best ? best - 1 : 0; i <= best; i++)
            rank[i] = i + 2 < n ? ranks_lookup(r, p + start[i], start[i + 2] - start[i])
                                : RANKS_NONE;
    }
    free(start);
    free(rank);
    return (int64_t)(n - 1);
}

static int64_t reference_count(size_t e, const unsigned char *s, size_t len)
{
    int64_t total = 0;
    size_t off = 0;
    while (off < len) {
        size_t run = 0, k;
        while (off + run < len && (k = utf8_char(s + off + run, len - off - run)) != 0)
            run += k;
        const unsigned char *t = s + off;
        for (size_t at = 0; at < run;) {
            size_t end = tokenizer_piece_end(enc[e], (const char *)t, run, at, 0);
            if (end <= at || end > run)
                fail("PCRE2 found no piece", names[e], s, len);
            total += ranks_lookup(table[e], t + at, end - at) != RANKS_NONE
                         ? 1
                         : merge_count(table[e], t + at, end - at);
            at = end;
        }
        off += run;
        if (off < len) { /* a byte that is not UTF-8 */
            total++;
            off++;
        }
    }
    return total;
}

/* ---- The checks ---- */

static int64_t count(size_t e, const unsigned char *s, size_t len)
{
    int64_t n = tokenizer_count(enc[e], (const char *)s, len);
    if (n < 0)
        fail("tokenizer_count failed", names[e], s, len);
    if ((len > 0 && n < 1) || n > (int64_t)len)
        fail("a count below 1 or above the byte length", names[e], s, len);
    return n;
}

static void pieces_agree(size_t e, const unsigned char *s, size_t len)
{
    for (size_t off = 0; off < len; off++) {
        size_t want = tokenizer_piece_end(enc[e], (const char *)s, len, off, 0);
        size_t got = tokenizer_piece_end(enc[e], (const char *)s, len, off, 1);
        if (want <= off || got != want) {
            fprintf(stderr, "piece at %zu: PCRE2 ends it at %zu, by hand at %zu\n", off, want,
                    got);
            fail("the ASCII pre-tokenizer differs from the pattern", names[e], s, len);
        }
        pieces_checked++;
    }
}

static int is_mark(unsigned char c)
{
    return c > 0x20 && c < 0x7f && !(c >= '0' && c <= '9') && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static int is_ascii_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Whether a digit of any script (\p{N}) starts at s[0..n). */
static int starts_with_digit(const unsigned char *s, size_t n)
{
    size_t k = utf8_char(s, n);
    return k && pcre2_match(digit_re, s, k, 0, PCRE2_ANCHORED, digit_md, NULL) >= 0;
}

static void cut_adds_up(size_t e, const unsigned char *s, size_t len, const size_t *cut, size_t n)
{
    int64_t whole = count(e, s, len), parts = 0;
    for (size_t i = 0, from = 0; i <= n; i++) {
        size_t to = i < n ? cut[i] : len;
        parts += count(e, s + from, to - from);
        from = to;
    }
    if (whole != parts)
        fail("a count that does not add up where tokenizer_counts_by_parts() says", names[e], s,
             len);
    cuts_checked++;
}

/* At most a few cuts of each kind a text, so that a long text costs a few
 * counts of it. */
static void parts_add_up(size_t e, const unsigned char *s, size_t len)
{
    int a = 0, b = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (a < 3 && is_mark(s[i]) && s[i + 1] == ' ') {
            size_t cut = i + 1;
            cut_adds_up(e, s, len, &cut, 1);
            a++;
        }
        if (b < 3 && is_ascii_digit(s[i + 1]) && !is_ascii_digit(s[i]) &&
            (is_mark(s[i]) || (s[i] == ' ' && i > 0 && s[i - 1] < 0x80 &&
                               (s[i - 1] | 0x20) >= 'a' && (s[i - 1] | 0x20) <= 'z'))) {
            size_t to = i + 1;
            while (to < len && is_ascii_digit(s[to]))
                to++;
            if (to < len && starts_with_digit(s + to, len - to))
                continue;
            size_t cuts[2] = {i + 1, to};
            cut_adds_up(e, s, len, cuts, 2);
            b++;
        }
    }
}

static void check_text(const unsigned char *s, size_t len, int ascii)
{
    texts++;
    for (size_t e = 0; e < N_ENC; e++) {
        if (ascii)
            pieces_agree(e, s, len);
        int64_t want = reference_count(e, s, len);
        if (count(e, s, len) != want) {
            fprintf(stderr, "compactd %lld, the reference %lld\n", (long long)count(e, s, len),
                    (long long)want);
            fail("a count other than the reference's", names[e], s, len);
        }
        parts_add_up(e, s, len);
    }
    const tokenizer *bytes = tokenizer_find("bytes", 5);
    if (tokenizer_count(bytes, (const char *)s, len) != (int64_t)len)
        fail("bytes does not count the bytes", "bytes", s, len);
}

/* ---- libFuzzer ---- */

static ranks *parse_ranks(const char *name)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s.tiktoken", COMPACTD_RANKS_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *data = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (cap - len < 65536 && !(data = realloc(data, cap = cap * 2 + 65536)))
            abort();
        got = fread(data + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    ranks *r = ranks_parse(data, len, 0, err, sizeof err);
    if (!r)
        fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err);
    free(data);
    return r;
}

static void report(void)
{
    fprintf(stderr,
            "fuzz_tokenizer: %lu texts counted as the reference counts them under o200k_base and "
            "cl100k_base, %lu ASCII pieces split as the patterns split them, %lu cuts added up\n",
            texts, pieces_checked, cuts_checked);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[600];
    int code;
    PCRE2_SIZE at;
    if (tokenizer_load(COMPACTD_RANKS_DIR, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err);
        abort();
    }
    for (size_t e = 0; e < N_ENC; e++) {
        enc[e] = tokenizer_find(names[e], strlen(names[e]));
        table[e] = parse_ranks(names[e]);
        if (!enc[e] || !table[e]) {
            fprintf(stderr, "fuzz_tokenizer: %s is not loaded from %s\n", names[e],
                    COMPACTD_RANKS_DIR);
            abort();
        }
    }
    digit_re = pcre2_compile((PCRE2_SPTR) "\\p{N}", PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                             &code, &at, NULL);
    digit_md = pcre2_match_data_create(1, NULL);
    if (!digit_re || !digit_md)
        abort();
    atexit(report);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copies of the exact size, so that AddressSanitizer sees any read
     * past the end. */
    unsigned char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    check_text(s, size, 0);
    for (size_t i = 0; i < size; i++)
        s[i] &= 0x7F;
    check_text(s, size, 1);
    free(s);
    return 0;
}
