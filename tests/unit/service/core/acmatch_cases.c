/* acmatch: table cases with known answers, then random texts and patterns
 * checked against memmem() as the oracle. */
#define _GNU_SOURCE /* memmem, the oracle */
#include "acmatch.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
#define S(lit) {lit, sizeof(lit) - 1}
/* clang-format on */
#define MAXP 10
#define NO (-1)

typedef struct {
    const char *text;
    size_t len;
} bytes_t;

typedef struct {
    const char *name;
    bytes_t text;
    bytes_t pats[MAXP];
    long first[MAXP]; /* expected first offsets, NO when absent */
    size_t n;
} ac_case;

static const ac_case cases[] = {
    {"textbook", S("ushers"), {S("he"), S("she"), S("his"), S("hers")}, {2, 1, NO, 2}, 4},
    {"nested",
     S("xabcdx"),
     {S("abcd"), S("bc"), S("c"), S("abc"), S("d"), S("bcd"), S("xabcdx")},
     {1, 2, 3, 1, 4, 2, 0},
     7},
    {"duplicates",
     S("xyzxyz"),
     {S("y"), S("y"), S("yz"), S("q"), S("y"), S("yz")},
     {1, 1, 1, NO, 1, 1},
     6},
    {"overlapping runs", S("aaaa"), {S("aa"), S("aaa"), S("aaaaa"), S("a")}, {0, 0, NO, 0}, 4},
    {"overlapping pairs",
     S("ababab"),
     {S("bab"), S("aba"), S("abab"), S("babab")},
     {1, 0, 0, 1},
     4},
    {"fail chains",
     S("abccab"),
     {S("a"), S("ab"), S("bab"), S("bc"), S("bca"), S("c"), S("caa"), S("cab")},
     {0, 0, NO, 1, NO, 2, NO, 3},
     8},
    {"fail into a longer suffix",
     S("abcdbcde"),
     {S("abcde"), S("bcde"), S("cd"), S("bcdb")},
     {NO, 4, 2, 1},
     4},
    {"empty text", S(""), {S("a"), S(""), S("ab")}, {NO, 0, NO}, 3},
    {"empty patterns", S("abc"), {S(""), S("c"), S("")}, {0, 2, 0}, 3},
    {"pattern longer than text", S("abc"), {S("abcd"), S("abc")}, {NO, 0}, 2},
    {"unicode",
     S("na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"),
     {S("\xe6\x97\xa5\xe6\x9c\xac"), S("\xc3\xa9 \xe2\x80\x94"), S("\xc3\xbc"), S("\xc3"),
      S("\xe8\xaa\x9e"), S("\xaf")},
     {17, 10, NO, 2, 23, 3},
     6},
    {"binary bytes",
     S("\x00\xff\x00\x01\xfe\x00"),
     {S("\x00\x01"), S("\xff\x00"), S("\x00\x00"), S("\xfe"), S("\x00"), S("\x01\xfe\x00")},
     {2, 1, NO, 4, 0, 3},
     6},
    {"one-byte alphabet ends",
     S("\xff\xff\xff"),
     {S("\xff\xff\xff\xff"), S("\xff\xff"), S("\x00")},
     {NO, 0, NO},
     3},
    {"no patterns", S("abc"), {{NULL, 0}}, {0}, 0},
};

static void run_case(const ac_case *c)
{
    acmatch_pattern pats[MAXP];
    for (size_t i = 0; i < c->n; i++)
        pats[i] = (acmatch_pattern){c->pats[i].text, c->pats[i].len};
    acmatch *m = acmatch_new(pats, c->n);
    if (!m) {
        fail("%s: acmatch_new failed", c->name);
        return;
    }
    check(acmatch_count(m) == c->n, "%s: count", c->name);
    size_t first[MAXP];
    unsigned char found[MAXP];
    memset(found, 7, sizeof(found));
    acmatch_scan_first(m, c->text.text, c->text.len, first);
    acmatch_scan(m, c->text.text, c->text.len, found);
    for (size_t i = 0; i < c->n; i++) {
        long got = first[i] == ACMATCH_NONE ? NO : (long)first[i];
        check(got == c->first[i], "%s: pattern %zu first at %ld, want %ld", c->name, i, got,
              c->first[i]);
        check(found[i] == (c->first[i] != NO), "%s: pattern %zu found %d", c->name, i, found[i]);
    }
    acmatch_free(m);
}

/* ---- Oracle ---- */

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ULL
#include "xorshift.h"

static size_t oracle_first(const char *text, size_t len, const char *pat, size_t plen)
{
    if (plen == 0)
        return 0;
    const char *hit = memmem(text, len, pat, plen);
    return hit ? (size_t)(hit - text) : ACMATCH_NONE;
}

/* Compares both scans with memmem for every pattern; returns the failures. */
static int compare_with_oracle(const acmatch *m, const acmatch_pattern *pats, size_t n,
                               const char *text, size_t len, const char *what)
{
    size_t *first = malloc((n ? n : 1) * sizeof(*first));
    unsigned char *found = malloc(n ? n : 1);
    int bad = 0;
    if (!first || !found) {
        fail("%s: out of memory", what);
        free(first);
        free(found);
        return 1;
    }
    acmatch_scan_first(m, text, len, first);
    acmatch_scan(m, text, len, found);
    for (size_t i = 0; i < n && bad < 5; i++) {
        size_t want = oracle_first(text, len, pats[i].text, pats[i].len);
        if (first[i] != want || found[i] != (want != ACMATCH_NONE)) {
            fail("%s: pattern %zu (len %zu): first %zu found %d, memmem says %zu", what, i,
                 pats[i].len, first[i], found[i], want);
            bad++;
        }
    }
    free(first);
    free(found);
    return bad;
}

/* Small alphabets force dense overlaps, nesting and long fail chains;
 * patterns are often cut from the text so that many occur. */
static void random_rounds(int rounds)
{
    static const size_t alphabets[] = {1, 2, 3, 4, 26, 256};
    enum { MAXTEXT = 300, MAXPATS = 400, MAXPLEN = 12 };
    static char text[MAXTEXT];
    static char store[MAXPATS][MAXPLEN];
    static acmatch_pattern pats[MAXPATS];
    int failures = 0;

    for (int r = 0; r < rounds && failures < 3; r++) {
        size_t sigma = alphabets[below(sizeof(alphabets) / sizeof(alphabets[0]))];
        unsigned char base = sigma == 256 ? 0 : (unsigned char)('a' + below(3));
        size_t len = below(MAXTEXT + 1);
        size_t n = r % 4 == 0 ? below(MAXPATS + 1) : below(40);
        size_t maxp = 1 + below(MAXPLEN);
        for (size_t i = 0; i < len; i++)
            text[i] = (char)(base + below(sigma));
        for (size_t k = 0; k < n; k++) {
            size_t plen = below(maxp + 1);
            if (len >= plen && below(2)) {
                memcpy(store[k], text + below(len - plen + 1), plen);
            } else {
                for (size_t i = 0; i < plen; i++)
                    store[k][i] = (char)(base + below(sigma));
            }
            pats[k] = (acmatch_pattern){store[k], plen};
        }
        acmatch *m = acmatch_new(pats, n);
        if (!m) {
            fail("round %d: acmatch_new failed", r);
            failures++;
            continue;
        }
        char what[64];
        snprintf(what, sizeof(what), "round %d (sigma %zu, %zu patterns)", r, sigma, n);
        failures += compare_with_oracle(m, pats, n, text, len, what) != 0;
        acmatch_free(m);
    }
    check(failures == 0, "random rounds: %d failed", failures);
}

/* 100,000 patterns, half cut from the text, beyond any dense shortcut. */
static void many_patterns(void)
{
    enum { N = 100000, TEXT = 8192, MAXLEN = 24 };
    char *text = malloc(TEXT);
    char *store = malloc((size_t)N * MAXLEN);
    acmatch_pattern *pats = malloc(N * sizeof(*pats));
    if (!text || !store || !pats) {
        fail("many patterns: out of memory");
        goto out;
    }
    for (size_t i = 0; i < TEXT; i++)
        text[i] = (char)('a' + below(8));
    for (size_t k = 0; k < N; k++) {
        size_t plen = 1 + below(MAXLEN);
        char *p = store + k * MAXLEN;
        if (k % 2)
            memcpy(p, text + below(TEXT - plen + 1), plen);
        else
            for (size_t i = 0; i < plen; i++)
                p[i] = (char)('a' + below(8));
        pats[k] = (acmatch_pattern){p, plen};
    }
    acmatch *m = acmatch_new(pats, N);
    if (!m) {
        fail("many patterns: acmatch_new failed");
        goto out;
    }
    check(acmatch_memory(m) > 0, "many patterns: memory reported");
    check(compare_with_oracle(m, pats, N, text, TEXT, "many patterns") == 0,
          "many patterns: agree with memmem");
    acmatch_free(m);
out:
    free(text);
    free(store);
    free(pats);
}

/* a, aa, ..., a^k against a^(4k): every pattern nests in the next, so the
 * chain of hits is k long at every position; marking must keep this linear
 * and still report all. */
static void deep_nesting(void)
{
    enum { K = 2000 };
    char *text = malloc(4 * K);
    acmatch_pattern *pats = malloc(K * sizeof(*pats));
    if (!text || !pats) {
        fail("deep nesting: out of memory");
        free(text);
        free(pats);
        return;
    }
    memset(text, 'a', 4 * K);
    for (size_t k = 0; k < K; k++)
        pats[k] = (acmatch_pattern){text, k + 1};
    acmatch *m = acmatch_new(pats, K);
    if (m) {
        check(compare_with_oracle(m, pats, K, text, 4 * K, "deep nesting") == 0,
              "deep nesting: agree with memmem");
        check(compare_with_oracle(m, pats, K, text, K / 2, "deep nesting, short text") == 0,
              "deep nesting, short text: agree with memmem");
        acmatch_free(m);
    } else {
        fail("deep nesting: acmatch_new failed");
    }
    free(text);
    free(pats);
}

/* A state past the dense rows with all 256 children: its children are found
 * by bisection. Fillers "a?" push "zzzz" deep into the breadth-first order. */
static void wide_fanout(void)
{
    enum { N = 3 * 256, TEXT = 4096 };
    static char store[N][5];
    static acmatch_pattern pats[N];
    static char text[TEXT];
    for (size_t c = 0; c < 256; c++) {
        store[c][0] = 'a';
        store[c][1] = (char)c;
        pats[c] = (acmatch_pattern){store[c], 2};
        memcpy(store[256 + c], "zzzz", 4);
        store[256 + c][4] = (char)c;
        pats[256 + c] = (acmatch_pattern){store[256 + c], 5};
        memcpy(store[512 + c], "zzz", 3);
        store[512 + c][3] = (char)c;
        store[512 + c][4] = 'q';
        pats[512 + c] = (acmatch_pattern){store[512 + c], 5};
    }
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < TEXT; i++)
            text[i] = below(4) ? 'z' : (char)below(256);
        acmatch *m = acmatch_new(pats, N);
        if (!m) {
            fail("wide fan-out: acmatch_new failed");
            return;
        }
        check(compare_with_oracle(m, pats, N, text, TEXT, "wide fan-out") == 0,
              "wide fan-out round %d: agree with memmem", round);
        acmatch_free(m);
    }
}

/* Patterns are copied into the automaton: the matcher must not read them
 * after acmatch_new() returns. */
static void patterns_not_retained(void)
{
    char a[] = "needle", b[] = "eed";
    acmatch_pattern pats[] = {{a, 6}, {b, 3}};
    acmatch *m = acmatch_new(pats, 2);
    if (!m) {
        fail("not retained: acmatch_new failed");
        return;
    }
    memset(a, 'x', sizeof(a));
    memset(b, 'y', sizeof(b));
    unsigned char found[2];
    acmatch_scan(m, "a needle", 8, found);
    check(found[0] && found[1], "not retained: both found after the caller's bytes changed");
    acmatch_free(m);
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
    patterns_not_retained();
    deep_nesting();
    wide_fanout();
    random_rounds(5000);
    many_patterns();
    acmatch_free(NULL);
    return check_done("acmatch_cases");
}
