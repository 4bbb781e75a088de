/* Out of memory in byte-pair merging: the heap and the buckets run with
 * their k-th allocation failing, for every k. Each must answer -1, leak
 * nothing (the sanitizer build's leak check), and count right once
 * allocations succeed. */
#define XORSHIFT_SEED 0x00e0e0e0u
#include "bpe.h"
#include "check.h"
#include "oom.h"
#include "tiktoken_text.h"
#include "xorshift.h"

/* Every byte of alpha, then every pair and triple of them, in an order of
 * their own so that some merges make pairs of lower rank. */
static ranks *triples_table(const char *alpha)
{
    size_t na = strlen(alpha), n = 0, total = na + na * na + na * na * na;
    char **tok = calloc(total, sizeof *tok);
    for (size_t len = 1; len <= 3; len++)
        for (size_t code = 0; code < (len == 1 ? na : len == 2 ? na * na : na * na * na); code++) {
            char *t = calloc(4, 1);
            for (size_t i = 0, c = code; i < len; i++, c /= na)
                t[i] = alpha[c % na];
            tok[n++] = t;
        }
    for (size_t i = n; i > 1; i--) {
        size_t k = below(i);
        char *t = tok[i - 1];
        tok[i - 1] = tok[k];
        tok[k] = t;
    }
    char *text = tiktoken_text((const char *const *)tok, n);
    char err[200];
    ranks *r = ranks_parse(text, strlen(text), n, err, sizeof err);
    free(text);
    for (size_t i = 0; i < n; i++)
        free(tok[i]);
    free(tok);
    if (!r) {
        fprintf(stderr, "table: %s\n", err);
        abort();
    }
    return r;
}

typedef int64_t (*strategy)(const ranks *, const unsigned char *, size_t);

static void fail_each(const char *name, strategy count, const ranks *r, const unsigned char *s,
                      size_t len)
{
    int64_t want = count(r, s, len);
    check(want > 0, "%s: %lld tokens without failures", name, (long long)want);
    long k;
    int clean = 0;
    for (k = 0; k < 100000; k++) {
        arm(k);
        int64_t got = count(r, s, len);
        disarm();
        if (!injected) {
            clean = 1;
            check(got == want, "%s: %lld tokens once allocations succeed, expected %lld", name,
                  (long long)got, (long long)want);
            break;
        }
        if (got != -1) {
            fail("%s: allocation %ld failed, yet %lld tokens", name, k, (long long)got);
            break;
        }
    }
    check(clean, "%s: no run without an injected failure in %ld", name, k);
    check(k > 1, "%s: only %ld allocations failed", name, k);
}

int main(void)
{
    ranks *r = triples_table("abcd");
    size_t len = 20000;
    unsigned char *s = malloc(len);
    for (size_t i = 0; i < len; i++)
        s[i] = (unsigned char)"abcd"[below(4)];
    fail_each("heap", bpe_count_heap, r, s, len);
    fail_each("buckets", bpe_count_buckets, r, s, len);
    memset(s, 'a', len);
    fail_each("buckets, one byte", bpe_count_buckets, r, s, len);
    ranks_free(r);
    /* Many ranks with a few pairs each, so that the buckets' pool of
     * entries grows while they merge. */
    r = triples_table("abcdefgh");
    for (size_t i = 0; i < 600; i++)
        s[i] = (unsigned char)"abcdefgh"[below(8)];
    fail_each("buckets, many ranks", bpe_count_buckets, r, s, 600);
    free(s);
    ranks_free(r);
    return check_done("bpe_oom_cases");
}
