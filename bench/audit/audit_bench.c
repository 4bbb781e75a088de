/* Benchmark of the verify search: build an Aho-Corasick matcher over the
 * protected units' texts and scan the context once, beside one memmem() pass
 * over the same context; then double the context and the units to show that
 * the time grows linearly. Prints tables; not a test. Times are the thread's
 * CPU time, so other load on the machine disturbs them less.
 *
 * Usage: audit_bench [CONTEXT_MIB UNITS]   (one row instead of the table) */
#define _GNU_SOURCE /* memmem */
#include "acmatch.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 7
#define MIB (1024 * 1024)
#define WORDS 4096

#define XORSHIFT_SEED 0x2545f4914f6cdd1dULL
#include "xorshift.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_double);
    return v[n / 2];
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "audit_bench: out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- Synthetic agent context ---- */

static char words[WORDS][12];
static const char *const heads[] = {
    "$ ls -la /srv/app\n", "tool_result: ", "Read file src/",   "$ git log --oneline\n",
    "user: please ",       "assistant: I ", "Traceback (most ", "{\"status\": \"",
};

static void make_words(void)
{
    for (size_t w = 0; w < WORDS; w++) {
        size_t len = 2 + below(9);
        for (size_t i = 0; i < len; i++)
            words[w][i] = (char)('a' + below(26));
        words[w][len] = '\0';
    }
}

/* Appends words (with the odd digit, path or newline) up to len bytes. */
static size_t fill_words(char *out, size_t len)
{
    size_t n = 0;
    while (n < len) {
        const char *w = words[below(WORDS)];
        size_t wl = strlen(w);
        for (size_t i = 0; i < wl && n < len; i++)
            out[n++] = w[i];
        if (n < len) {
            size_t r = below(16);
            out[n++] = r == 0 ? '\n' : r == 1 ? '/' : r == 2 ? (char)('0' + below(10)) : ' ';
        }
    }
    return n;
}

typedef struct {
    char *bytes;
    acmatch_pattern *pats;
    unsigned char *present;
    size_t n;
    size_t total;
} unit_set;

/* Units of 32 to 256 bytes, each opening with one of a few common heads so
 * the trie shares prefixes as a real agent's tool outputs do. */
static void make_units(unit_set *u, size_t n)
{
    u->n = n;
    u->bytes = xmalloc(n * 256);
    u->pats = xmalloc(n * sizeof(*u->pats));
    u->present = xmalloc(n);
    u->total = 0;
    for (size_t k = 0; k < n; k++) {
        char *p = u->bytes + k * 256;
        size_t len = 32 + below(225);
        const char *h = heads[below(sizeof(heads) / sizeof(heads[0]))];
        size_t hl = strlen(h) < len ? strlen(h) : len;
        memcpy(p, h, hl);
        fill_words(p + hl, len - hl);
        u->pats[k] = (acmatch_pattern){p, len};
        u->total += len;
    }
}

/* A context of len bytes: every other unit verbatim while they take up to
 * three quarters of it, filler words around them. */
static char *make_context(unit_set *u, size_t len)
{
    char *ctx = xmalloc(len);
    size_t pos = 0;
    memset(u->present, 0, u->n);
    for (size_t k = 0; k < u->n; k += 2) {
        size_t ul = u->pats[k].len;
        if (pos + ul + 64 > len * 3 / 4)
            break;
        pos += fill_words(ctx + pos, 16 + below(48));
        memcpy(ctx + pos, u->pats[k].text, ul);
        pos += ul;
        u->present[k] = 1;
    }
    fill_words(ctx + pos, len - pos);
    return ctx;
}

/* ---- Measurement ---- */

typedef struct {
    double build, scan, total, memmem;
    size_t memory;
    size_t found, present;
} result;

static void measure(unit_set *u, size_t ctx_len, result *r)
{
    char *ctx = make_context(u, ctx_len);
    unsigned char *found = xmalloc(u->n);
    double build[RUNS], scan[RUNS], total[RUNS], mm[RUNS];
    /* memmem's pass: an odd unit, so it is not in the context. */
    const acmatch_pattern needle = u->pats[1];

    for (int run = 0; run < RUNS; run++) {
        double t0 = now_ms();
        acmatch *m = acmatch_new(u->pats, u->n);
        if (!m) {
            fprintf(stderr, "audit_bench: acmatch_new failed\n");
            exit(1);
        }
        double t1 = now_ms();
        acmatch_scan(m, ctx, ctx_len, found);
        double t2 = now_ms();
        build[run] = t1 - t0;
        scan[run] = t2 - t1;
        total[run] = t2 - t0;
        r->memory = acmatch_memory(m);
        acmatch_free(m);

        t0 = now_ms();
        const void *hit = memmem(ctx, ctx_len, needle.text, needle.len);
        mm[run] = now_ms() - t0;
        if (hit)
            fprintf(stderr, "audit_bench: an absent unit was found\n");
    }
    r->build = median(build, RUNS);
    r->scan = median(scan, RUNS);
    r->total = median(total, RUNS);
    r->memmem = median(mm, RUNS);
    r->found = r->present = 0;
    for (size_t k = 0; k < u->n; k++) {
        r->present += u->present[k];
        r->found += u->present[k] && found[k];
    }
    free(found);
    free(ctx);
}

static void print_header(void)
{
    printf("%7s %6s %10s %8s %8s %8s %8s %7s %10s %8s %14s\n", "context", "units", "unit_bytes",
           "build", "scan", "total", "memmem", "ratio", "ns/in_byte", "mem_MiB", "found/present");
}

/* The search without an automaton, once: one memmem() per unit. Also checks
 * that both searches agree on every unit. */
static int run_naive(size_t ctx_mib, size_t units)
{
    unit_set u;
    make_units(&u, units);
    size_t len = ctx_mib * MIB;
    char *ctx = make_context(&u, len);
    unsigned char *found = xmalloc(u.n);
    acmatch *m = acmatch_new(u.pats, u.n);
    if (!m) {
        fprintf(stderr, "audit_bench: acmatch_new failed\n");
        exit(1);
    }
    acmatch_scan(m, ctx, len, found);
    acmatch_free(m);
    size_t disagree = 0;
    double t0 = now_ms();
    for (size_t k = 0; k < u.n; k++)
        disagree += !memmem(ctx, len, u.pats[k].text, u.pats[k].len) != !found[k];
    double t = now_ms() - t0;
    printf("One memmem() per unit instead (%zu MiB, %zu units, measured once): %.1f ms; "
           "%zu disagreements\n",
           ctx_mib, units, t, disagree);
    free(found);
    free(ctx);
    free(u.bytes);
    free(u.pats);
    free(u.present);
    return disagree ? -1 : 0;
}

/* Measures one row and prints it; returns -1 when a present unit was missed. */
static int run_row(size_t ctx_mib, size_t units)
{
    unit_set u;
    result r;
    make_units(&u, units);
    measure(&u, ctx_mib * MIB, &r);
    double in_bytes = (double)(ctx_mib * MIB + u.total);
    printf("%5zuMiB %6zu %10zu %8.2f %8.2f %8.2f %8.3f %6.0fx %10.2f %8.1f %7zu/%zu\n", ctx_mib,
           u.n, u.total, r.build, r.scan, r.total, r.memmem,
           r.memmem > 0 ? r.total / r.memmem : 0.0, r.total * 1e6 / in_bytes,
           (double)r.memory / MIB, r.found, r.present);
    free(u.bytes);
    free(u.pats);
    free(u.present);
    if (r.found != r.present) {
        fprintf(stderr, "audit_bench: a present unit was not found\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        size_t ctx_mib, units;
    } rows[] = {{1, 5000}, {2, 5000}, {4, 5000}, {1, 10000}, {1, 20000}, {2, 10000}};
    int rc = 0;

    make_words();
    printf("acmatch build + one scan of the context beside one memmem() pass over it (for\n"
           "a unit not in it); median of %d runs, CPU ms. Units of 32-256 bytes, every other\n"
           "one in the context (up to 3/4 of it). ratio = total / memmem.\n\n",
           RUNS);
    if (argc == 3) {
        print_header();
        return run_row(strtoul(argv[1], NULL, 10), strtoul(argv[2], NULL, 10)) ? 1 : 0;
    }

    /* glibc hands out blocks this large as fresh mappings, so every build
     * pays for faulting its pages in; how much that costs depends on the
     * machine (it is large under some hypervisors). */
    printf("Cold allocator: each build faults in fresh pages.\n");
    print_header();
    rc |= run_row(1, 5000);

    /* A long-running server reuses its heap: keep big blocks in it. */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    printf("\nWarm allocator: the heap is reused between builds.\n");
    print_header();
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        rc |= run_row(rows[i].ctx_mib, rows[i].units);
    printf("\n");
    rc |= run_naive(1, 5000);
    return rc ? 1 : 0;
}
