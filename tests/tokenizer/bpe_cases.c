/* Byte-pair merging on tiny hand-made rank tables: cases whose answer
 * depends on merge order, and both strategies of bpe_count() against a
 * brute-force oracle on random tables and texts (lengths far past the
 * rescan's limit for the heap). */
#define XORSHIFT_SEED 0x5eed5eedu
#include "bpe.h"
#include "check.h"
#include "tiktoken_text.h"
#include "xorshift.h"

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
        int64_t a = bpe_count_rescan(r, s, len), b = bpe_count_heap(r, s, len);
        check(a == cases[i].tokens, "rescan \"%s\": %lld tokens, expected %lld (%s)", cases[i].text,
              (long long)a, (long long)cases[i].tokens, cases[i].why);
        check(b == cases[i].tokens, "heap \"%s\": %lld tokens, expected %lld (%s)", cases[i].text,
              (long long)b, (long long)cases[i].tokens, cases[i].why);
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
     * through the heap and the oracle only. */
    run_cases(t3, sizeof t3 / sizeof *t3, c3, 2);
    ranks *r = table_of(t3, sizeof t3 / sizeof *t3);
    const char *long_run = c3[2].text;
    int64_t got = bpe_count_heap(r, (const unsigned char *)long_run, strlen(long_run));
    check(got == c3[2].tokens, "heap on 101 a: %lld, expected 14", (long long)got);
    check(oracle(r, (const unsigned char *)long_run, strlen(long_run)) == 14, "oracle on 101 a");
    check(bpe_count(r, (const unsigned char *)long_run, strlen(long_run)) == 14,
          "bpe_count on 101 a");
    ranks_free(r);
}

/* A random table like a trained one: the bytes of a small alphabet, then
 * tokens made by joining two earlier tokens, in the order they were made. */
static ranks *random_table(const char *alphabet, size_t merges)
{
    size_t na = strlen(alphabet), n = 0;
    char **tok = malloc((na + merges) * sizeof *tok);
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
    ranks *r = table_of((const char *const *)tok, n);
    for (size_t i = 0; i < n; i++)
        free(tok[i]);
    free(tok);
    return r;
}

static void property(void)
{
    const char *alphabets[] = {"ab", "abc", "abcd", "abcdefgh"};
    unsigned char s[600];
    int disagreements = 0, trials = 0;
    for (int table = 0; table < 40; table++) {
        const char *alpha = alphabets[table % 4];
        ranks *r = random_table(alpha, 4 + below(60));
        for (int k = 0; k < 250; k++) {
            size_t len = k < 200 ? below(BPE_SHORT_MAX + 1) : below(sizeof s);
            /* Runs of one byte now and then: where merge order matters most. */
            for (size_t i = 0; i < len; i++)
                s[i] = (unsigned char)(i && below(3) == 0 ? s[i - 1] : alpha[below(strlen(alpha))]);
            int64_t want = oracle(r, s, len);
            int64_t heap = bpe_count_heap(r, s, len);
            trials++;
            if (heap != want && disagreements++ < 5)
                fail("heap: %lld tokens, oracle %lld (table %d, %zu bytes)", (long long)heap,
                     (long long)want, table, len);
            if (len <= BPE_SHORT_MAX) {
                int64_t rescan = bpe_count_rescan(r, s, len);
                if (rescan != want && disagreements++ < 5)
                    fail("rescan: %lld tokens, oracle %lld (table %d, %zu bytes)",
                         (long long)rescan, (long long)want, table, len);
            }
        }
        ranks_free(r);
    }
    check(disagreements == 0, "%d of %d random texts merged differently from the oracle",
          disagreements, trials);
}

int main(void)
{
    hand_made();
    property();
    return check_done("bpe_cases");
}
