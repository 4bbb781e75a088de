/* Times json_loadb on one file, as compactd parses a request body, and
 * prints the median of N runs as one JSON line, with the heap bytes that the
 * parsed tree holds (glibc's mallinfo2), the least memory a DOM parse needs. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Returns the file's bytes in a new buffer the caller frees, or NULL. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: json_parse_time FILE [RUNS]\n");
        return 2;
    }
    long runs = argc == 3 ? strtol(argv[2], NULL, 10) : 21;
    if (runs < 1 || runs > 100000) {
        fprintf(stderr, "json_parse_time: RUNS must be 1..100000\n");
        return 2;
    }
    size_t len = 0;
    char *body = read_file(argv[1], &len);
    if (!body) {
        fprintf(stderr, "json_parse_time: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    double *t = malloc((size_t)runs * sizeof *t);
    if (!t)
        return 1;
    json_object_seed(0);
    size_t tree_bytes = 0;
    for (long i = 0; i < runs; i++) {
        json_error_t err;
        size_t before = mallinfo2().uordblks;
        double t0 = now_ns();
        json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
        double t1 = now_ns();
        if (!root) {
            fprintf(stderr, "json_parse_time: %s:%d: %s\n", argv[1], err.line, err.text);
            return 1;
        }
        tree_bytes = mallinfo2().uordblks - before;
        double t2 = now_ns();
        json_decref(root);
        t[i] = (t1 - t0) + (now_ns() - t2);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double median = t[runs / 2];
    printf("{\"file\":\"%s\",\"bytes\":%zu,\"runs\":%ld,\"median_ms\":%.3f,\"min_ms\":%.3f,"
           "\"mb_per_s\":%.1f,\"tree_bytes\":%zu,\"tree_per_body\":%.2f}\n",
           argv[1], len, runs, median / 1e6, t[0] / 1e6, (double)len / (median / 1e3), tree_bytes,
           (double)tree_bytes / (double)len);
    free(t);
    free(body);
    return 0;
}
