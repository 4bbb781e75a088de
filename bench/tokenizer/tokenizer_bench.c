/* Times compactd's tokenizer on one thread: tokens per second over the
 * benchmark corpus (texts separated by NUL bytes), and time per byte on the
 * adversarial texts (no pre-tokenizer split: one letter repeated, random
 * letters without spaces, one CJK character repeated) at each size given,
 * as the fastest of ADVERSARIAL_RUNS runs in CPU time.
 * Prints one JSON object; bench/tokenizer/run puts it beside the peers'.
 *   tokenizer_bench <ranks folder> <encoding> <corpus.bin> <sizes, comma-separated> */
#include "tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* This thread's CPU time: the machine is shared, and a 10 ms run measured
 * by the wall clock is at the mercy of the scheduler. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs of each adversarial text: the fastest counts (the least disturbed
 * by other processes' use of the caches). */
#define ADVERSARIAL_RUNS 5

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The same texts as peers.mjs makes, n bytes each. */
static char *adversarial(int kind, size_t n, size_t *len)
{
    char *s = malloc(n + 1);
    uint32_t x = 12345;
    if (!s)
        return NULL;
    if (kind == 0) {
        memset(s, 'a', n);
        *len = n;
    } else if (kind == 1) {
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            s[i] = (char)('a' + (x >> 16) % 26);
        }
        *len = n;
    } else {
        *len = n / 3 * 3;
        for (size_t i = 0; i < *len; i += 3)
            memcpy(s + i, "\xe6\x97\xa5", 3);
    }
    return s;
}

int main(int argc, char **argv)
{
    char err[600];
    size_t len;
    if (argc != 5) {
        fprintf(stderr, "usage: tokenizer_bench <ranks folder> <encoding> <corpus> <sizes>\n");
        return 2;
    }
    if (tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "tokenizer_bench: %s\n", err);
        return 2;
    }
    const tokenizer *t = tokenizer_find(argv[2], strlen(argv[2]));
    char *corpus = read_all(argv[3], &len);
    if (!t || !corpus) {
        fprintf(stderr, "tokenizer_bench: unknown encoding or unreadable corpus\n");
        return 2;
    }
    tokenizer_count(t, "warm up", 7);
    size_t texts = 0, bytes = 0;
    int64_t tokens = 0;
    double t0 = now();
    for (size_t at = 0; at < len;) {
        const char *end = memchr(corpus + at, '\0', len - at);
        size_t n = end ? (size_t)(end - corpus - at) : len - at;
        if (n) {
            tokens += tokenizer_count(t, corpus + at, n);
            texts++;
            bytes += n;
        }
        at += n + 1;
    }
    double s = now() - t0;
    printf("{\"corpus\": {\"texts\": %zu, \"bytes\": %zu, \"tokens\": %lld, \"seconds\": %.6f},\n",
           texts, bytes, (long long)tokens, s);

    static const char *const kinds[] = {"one letter", "letters, no spaces", "one CJK character"};
    printf(" \"adversarial\": {");
    for (int k = 0; k < 3; k++) {
        printf("%s\"%s\": {", k ? ", " : "", kinds[k]);
        char *sizes = strdup(argv[4]);
        int first = 1;
        for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
            size_t n = (size_t)strtoull(tok, NULL, 10), alen = 0;
            char *text = adversarial(k, n, &alen);
            if (!text)
                return 1;
            int64_t got = 0;
            double d = 1e9;
            for (int run = 0; run < ADVERSARIAL_RUNS; run++) {
                double a = cpu_now();
                got = tokenizer_count(t, text, alen);
                double took = cpu_now() - a;
                d = took < d ? took : d;
            }
            printf("%s\"%zu\": {\"tokens\": %lld, \"seconds\": %.6f}", first ? "" : ", ", n,
                   (long long)got, d);
            first = 0;
            free(text);
        }
        free(sizes);
        printf("}");
    }
    printf("}}\n");
    free(corpus);
    tokenizer_unload();
    return 0;
}
