/* Byte-pair merging on tiny hand-made rank tables: cases whose answer
 * depends on merge order, and every strategy of bpe_count() against a
 * brute-force oracle on random tables and texts (lengths far past the
 * rescan's limit for the heap and the buckets), on tables whose ranks do not
 * grow with length (a merge can make a pair of lower rank than its own), on
 * long runs of one byte, and on tables built so that merges cascade down
 * through ever lower ranks. */
#define XORSHIFT_SEED 0x5eed5eedu
#include "bpe.h"
#include "check.h"
#include "tiktoken_text.h"
#include "xorshift.h"

#include <stdarg.h>
#include <string.h>

static ranks *table_of(const char *const *tokens, size_t n)
{
    char *text = tiktoken_text(tokens, n);
    char err[200];
    ranks *r = ranks_parse(text, strlen(text), n, err, sizeof err);
    if (!r) {
        fprintf(stderr, "table: %s\n", err);
        abort();
    }
    free(text);
    return r;
}

/* The oracle: find the lowest-ranked adjacent pair (leftmost of equals)
 * over every part, merge it, repeat; no cleverness at all. */
static int64_t oracle(const ranks *r, const unsigned char *s, size_t len)
{
    if (len == 0)
        return 0;
    size_t *start = malloc((len + 1) * sizeof *start);
    size_t n = len;
    for (size_t i = 0; i <= len; i++)
        start[i] = i;
    for (;;) {
        size_t best = n;
        int32_t best_rank = RANKS_NONE;
        for (size_t i = 0; i + 1 < n; i++) {
            int32_t k = ranks_lookup(r, s + start[i], start[i + 2] - start[i]);
            if (k < best_rank) {
                best_rank = k;
                best = i;
            }
        }
        if (best == n)
            break;
        memmove(&start[best + 1], &start[best + 2], (n - best - 1) * sizeof *start);
        n--;
    }
    free(start);
    return (int64_t)n;
}

typedef struct {
    const char *text;
    int64_t tokens;
    const char *why;
} bpe_case;

static void run_cases(const char *const *tokens, size_t n, const bpe_case *cases, size_t ncases)
{
    ranks *r = table_of(tokens, n);
    for (size_t i = 0; i < ncases; i++) {
        const unsigned char *s = (const unsigned char *)cases[i].text;
        size_t len = strlen(cases[i].text);
        int64_t a = bpe_count_rescan(r, s, len), b = bpe_count_heap(r, s, len),
                c = bpe_count_buckets(r, s, len);
        check(a == cases[i].tokens, "rescan \"%s\": %lld tokens, expected %lld (%s)", cases[i].text,
              (long long)a, (long long)cases[i].tokens, cases[i].why);
        check(b == cases[i].tokens, "heap \"%s\": %lld tokens, expected %lld (%s)", cases[i].text,
              (long long)b, (long long)cases[i].tokens, cases[i].why);
        check(c == cases[i].tokens, "buckets \"%s\": %lld tokens, expected %lld (%s)",
              cases[i].text, (long long)c, (long long)cases[i].tokens, cases[i].why);
        check(oracle(r, s, len) == cases[i].tokens, "oracle \"%s\" disagrees with the case",
              cases[i].text);
    }
    ranks_free(r);
}

static void hand_made(void)
{
    /* bc (rank 4) merges before ab (5): a|bc|d, and abcd is never reached
     * although it is a token; ab first would have given ab|cd -> abcd. */
    static const char *const t1[] = {"a", "b", "c", "d", "bc", "ab", "cd", "abcd"};
    static const bpe_case c1[] = {
        {"abcd", 3, "lowest rank first"},
        {"ab", 1, "one merge"},
        {"cd", 1, "one merge"},
        {"dcba", 4, "no pair is a token"},
        {"", 0, "empty"},
        {"x", 1, "one byte, even one the table lacks"},
        {"bcbc", 2, "equal ranks at two places both merge"},
    };
    run_cases(t1, sizeof t1 / sizeof *t1, c1, sizeof c1 / sizeof *c1);

    /* "aaab": aa at 0 and at 1 tie; the leftmost merges, giving aa|a|b ->
     * aa|ab (2). The rightmost would give a|aa|b, then nothing (3). */
    static const char *const t2[] = {"a", "b", "aa", "ab"};
    static const bpe_case c2[] = {
        {"aaab", 2, "leftmost of equal ranks"},
        {"aaaa", 2, "aa|aa"},
        {"aaaaa", 3, "aa|aa|a"},
    };
    run_cases(t2, sizeof t2 / sizeof *t2, c2, sizeof c2 / sizeof *c2);

    /* aba ranks below ab: in "ababb" the ab at 0 makes aba, which merges
     * before the second ab can (tiktoken takes the lowest rank at every
     * step), leaving aba|b|b -> aba|bb. Merging every ab first would give
     * ab|ab|b, 3 tokens. */
    static const char *const t4[] = {"a", "b", "aba", "ab", "bb"};
    static const bpe_case c4[] = {
        {"ababb", 2, "a merge that makes a lower rank goes on there"},
        {"abab", 2, "aba|b"},
        {"ababababb", 4, "aba|b|aba|bb"},
    };
    run_cases(t4, sizeof t4 / sizeof *t4, c4, sizeof c4 / sizeof *c4);

    /* Merged parts merge again: a run of one byte climbs the doublings. */
    static const char *const t3[] = {"a", "aa", "aaaa", "aaaaaaaa"};
    static const bpe_case c3[] = {
        {"aaaaaaaa", 1, "three levels"},
        {"aaaaaaaaa", 2, "8 + 1"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaa",
         14, "101 a: 12 x 8 + 4 + 1 (beyond the rescan's limit for the heap)"},
    };
    /* The rescan takes at most BPE_SHORT_MAX bytes, so the long case runs
     * through the heap, the buckets and the oracle only. */
    run_cases(t3, sizeof t3 / sizeof *t3, c3, 2);
    ranks *r = table_of(t3, sizeof t3 / sizeof *t3);
    const char *long_run = c3[2].text;
    int64_t got = bpe_count_heap(r, (const unsigned char *)long_run, strlen(long_run));
    check(got == c3[2].tokens, "heap on 101 a: %lld, expected 14", (long long)got);
    got = bpe_count_buckets(r, (const unsigned char *)long_run, strlen(long_run));
    check(got == c3[2].tokens, "buckets on 101 a: %lld, expected 14", (long long)got);
    check(oracle(r, (const unsigned char *)long_run, strlen(long_run)) == 14, "oracle on 101 a");
    check(bpe_count(r, (const unsigned char *)long_run, strlen(long_run)) == 14,
          "bpe_count on 101 a");
    ranks_free(r);
}

/* A random table like a trained one: the bytes of a small alphabet, then
 * tokens made by joining two earlier tokens, in the order they were made.
 * Shuffled, the ranks no longer follow the order of making: a merge then
 * often makes a pair of lower rank than its own. */
static ranks *random_table(const char *alphabet, size_t merges, int shuffled)
{
    size_t na = strlen(alphabet), n = 0;
    char **tok = calloc(na + merges, sizeof *tok);
    for (size_t i = 0; i < na; i++) {
        tok[n] = calloc(2, 1);
        tok[n++][0] = alphabet[i];
    }
    while (n < na + merges) {
        const char *a = tok[below(n)], *b = tok[below(n)];
        if (strlen(a) + strlen(b) > 12)
            continue;
        char *j = malloc(strlen(a) + strlen(b) + 1);
        strcpy(j, a);
        strcat(j, b);
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = strcmp(tok[i], j) == 0;
        if (dup) {
            free(j);
            continue;
        }
        tok[n++] = j;
    }
    for (size_t i = n; shuffled && i > 1; i--) {
        size_t k = below(i);
        char *t = tok[i - 1];
        tok[i - 1] = tok[k];
        tok[k] = t;
    }
    ranks *r = table_of((const char *const *)tok, n);
    for (size_t i = 0; i < n; i++)
        free(tok[i]);
    free(tok);
    return r;
}

/* len bytes of alpha, with runs of one byte now and then: where merge order
 * matters most. */
static void random_text(unsigned char *s, size_t len, const char *alpha)
{
    for (size_t i = 0; i < len; i++)
        s[i] = (unsigned char)(i && below(3) == 0 ? s[i - 1] : alpha[below(strlen(alpha))]);
}

/* Disagreements within one group of texts: the first few are shown. */
typedef struct {
    int bad, n;
} tally;

static void disagree(tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void disagree(tally *t, const char *fmt, ...)
{
    if (t->bad++ >= 5)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Every strategy that takes len bytes against `want`. */
static void compare(tally *t, const ranks *r, const unsigned char *s, size_t len, int64_t want,
                    const char *what, int table)
{
    int64_t heap = bpe_count_heap(r, s, len), buckets = bpe_count_buckets(r, s, len);
    int64_t any = bpe_count(r, s, len);
    t->n++;
    if (heap != want)
        disagree(t, "heap: %lld tokens, %s %lld (table %d, %zu bytes)", (long long)heap, what,
                 (long long)want, table, len);
    if (buckets != want)
        disagree(t, "buckets: %lld tokens, %s %lld (table %d, %zu bytes)", (long long)buckets, what,
                 (long long)want, table, len);
    if (any != want)
        disagree(t, "bpe_count: %lld tokens, %s %lld (table %d, %zu bytes)", (long long)any, what,
                 (long long)want, table, len);
    if (len <= BPE_SHORT_MAX) {
        int64_t rescan = bpe_count_rescan(r, s, len);
        if (rescan != want)
            disagree(t, "rescan: %lld tokens, %s %lld (table %d, %zu bytes)", (long long)rescan,
                     what, (long long)want, table, len);
    }
}

static void property(void)
{
    const char *alphabets[] = {"ab", "abc", "abcd", "abcdefgh"};
    unsigned char s[1500];
    tally t = {0};
    for (int table = 0; table < 80; table++) {
        const char *alpha = alphabets[table % 4];
        ranks *r = random_table(alpha, 4 + below(table < 60 ? 60 : 300), table % 8 >= 4);
        for (int k = 0; k < 250; k++) {
            size_t len = k < 200 ? below(BPE_SHORT_MAX + 1) : k < 245 ? below(600) : below(1500);
            random_text(s, len, alpha);
            compare(&t, r, s, len, oracle(r, s, len), "oracle", table);
        }
        ranks_free(r);
    }
    check(t.bad == 0, "%d disagreements with the oracle on %d random texts", t.bad, t.n);
}

/* Texts too long for the oracle, past BPE_HEAP_MAX: the heap and the buckets
 * are two independent ways to the same answer, each checked against the
 * oracle above. */
static void long_texts(void)
{
    const char *alphabets[] = {"ab", "abc", "abcd", "abcdefgh"};
    size_t cap = 200000;
    unsigned char *s = malloc(cap);
    tally t = {0};
    for (int table = 0; table < 24; table++) {
        const char *alpha = alphabets[table % 4];
        ranks *r = random_table(alpha, 20 + below(400), table % 2);
        for (int k = 0; k < 4; k++) {
            size_t len = BPE_HEAP_MAX + below(k < 3 ? 20000 : cap - BPE_HEAP_MAX);
            random_text(s, len, alpha);
            int64_t heap = bpe_count_heap(r, s, len), buckets = bpe_count_buckets(r, s, len);
            t.n++;
            if (buckets != heap)
                disagree(&t, "buckets: %lld tokens, heap %lld (table %d, %zu bytes)",
                         (long long)buckets, (long long)heap, table, len);
        }
        ranks_free(r);
    }
    free(s);
    check(t.bad == 0, "%d of %d long random texts merged differently by heap and buckets", t.bad,
          t.n);
}

/* One byte repeated: every pair has the same rank and overlaps the next, so
 * only leftmost-first gives the answer, which is known in closed form. */
static void runs(void)
{
    static const char *const pow2[] = {"a", "aa", "aaaa", "aaaaaaaa"};
    static const char *const pairs[] = {"a", "b", "aa", "ab"};
    ranks *p = table_of(pow2, 4), *q = table_of(pairs, 4);
    size_t cap = 1 << 20;
    unsigned char *s = malloc(cap);
    memset(s, 'a', cap);
    tally t = {0};
    size_t lens[] = {49, 50, 63, 64, 100, 333, 1000, 2047, 2048, 2049, 2050, 4097, 65535, cap};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        size_t n = lens[i];
        int64_t want = (int64_t)(n / 8 + __builtin_popcount((unsigned)(n % 8)));
        if (n <= 2050)
            check(oracle(p, s, n) == want, "oracle on %zu a", n);
        compare(&t, p, s, n, want, "8s, 4, 2, 1", -1);
        compare(&t, q, s, n, (int64_t)((n + 1) / 2), "pairs", -2);
    }
    /* "a...ab" with aa and ab: the run pairs from the left, so the b joins
     * the last a only when the run is odd. */
    s[2049] = 'b';
    compare(&t, q, s, 2050, oracle(q, s, 2050), "oracle", -3);
    compare(&t, q, s, 2049 + 1, 1025, "a x 2049 + b", -3);
    s[2048] = 'b';
    compare(&t, q, s, 2049, 1025, "a x 2048 + b", -3);
    check(t.bad == 0, "%d disagreements on %d runs of one byte", t.bad, t.n);
    free(s);
    ranks_free(p);
    ranks_free(q);
}

/* Merges that make pairs of lower rank than their own, over and over:
 *  - "ababb" repeated, with aba below ab (as in hand_made()): every other
 *    ab merged makes an aba that must merge before the next ab;
 *  - "abab..." with ab above abab above abababab above 16 x ab: each ab
 *    merged makes, with the ab before it, a lower pair, whose merge may
 *    make a lower one still, down four levels.
 * Against the oracle where it is fast enough, then the heap on 300 KB. */
static void cascade(void)
{
    static const char *const t1[] = {"a", "b", "aba", "ab", "bb"};
    static const char *const t2[] = {"a",   "b",     "abababababababab", "abababab", "abab", "ab",
                                     "bab", "ababab"};
    ranks *tables[] = {table_of(t1, sizeof t1 / sizeof *t1), table_of(t2, sizeof t2 / sizeof *t2)};
    size_t cap = 300000;
    unsigned char *s = malloc(cap);
    tally c = {0};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < cap; i++)
            s[i] = (unsigned char)(k == 0 ? "ababb"[i % 5] : "ab"[i % 2]);
        size_t lens[] = {49, 64, 99, 130, 511, 1024, 1500, 2049, 2500};
        for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
            for (size_t from = 0; from < 3; from++)
                compare(&c, tables[k], s + from, lens[i], oracle(tables[k], s + from, lens[i]),
                        "oracle", -4 - k);
        int64_t heap = bpe_count_heap(tables[k], s, cap);
        int64_t buckets = bpe_count_buckets(tables[k], s, cap);
        check(heap == buckets, "cascade %d, %zu bytes: heap %lld, buckets %lld", k, cap,
              (long long)heap, (long long)buckets);
        ranks_free(tables[k]);
    }
    check(c.bad == 0, "%d disagreements on %d cascades", c.bad, c.n);
    free(s);
}

/* With --fill-backwards, every case runs again with the buckets filled right
 * to left (bpe_fill_backwards()), which sends each bucket through its sort. */
int main(int argc, char **argv)
{
    int backwards = argc == 2 && strcmp(argv[1], "--fill-backwards") == 0;
    if (argc > 1 && !backwards) {
        fprintf(stderr, "usage: bpe_cases [--fill-backwards]\n");
        return 2;
    }
    bpe_fill_backwards(backwards);
    hand_made();
    property();
    long_texts();
    runs();
    cascade();
    return check_done(backwards ? "bpe_cases --fill-backwards" : "bpe_cases");
}
