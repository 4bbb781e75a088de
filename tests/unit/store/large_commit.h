/* A commit Redis runs past the command timeout answers what happened, on
 * one Redis and on a cluster alike: shared by store_cases.c and
 * cluster_cases.c, which say how to count what landed. Include after
 * check.h. */
#ifndef COMPACTD_TEST_LARGE_COMMIT_H
#define COMPACTD_TEST_LARGE_COMMIT_H

#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What Redis holds of a session: its spills and its log entries. */
typedef struct {
    long long (*spills)(const char *ns);
    long long (*entries)(const char *ns);
} large_commit_counts;

static double large_commit_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void large_commit_sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* 100,000 spills, 28 MiB: Redis runs such a commit past short command
 * timeouts. Whatever the timeout, the answer is what happened: 0 when all
 * of it is written, a failure when none of it is (or, only when Redis
 * could not be asked, STORE_ERR_UNKNOWN). */
static void large_commit_answers_truly(const store_config *base, const large_commit_counts *count)
{
    enum { N = 100000, TEXT = 280 };
    store_spill *sp = calloc(N, sizeof(*sp));
    char(*keys)[16] = calloc(N, 16), (*shas)[65] = calloc(N, 65), *text = malloc(TEXT);
    memset(text, 'x', TEXT);
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], 16, "unit-%zu", i);
        snprintf(shas[i], 65, "%064zx", i);
        sp[i] =
            (store_spill){keys[i], strlen(keys[i]), "protected", 100, shas[i], text, TEXT, NULL, 0};
    }
    /* How long one takes on this machine now, with time to spare; then
     * timeouts around that, where Redis is still running the script when
     * the timeout ends. */
    int timeouts[] = {60000, 0, 0};
    const double fractions[] = {0, 0.75, 0.95};
    int written = 0, refused = 0, unknown = 0, late = 0;
    for (size_t t = 0; t < sizeof(timeouts) / sizeof(*timeouts); t++) {
        store_config cfg = *base;
        cfg.command_timeout_ms = timeouts[t];
        cfg.connect_timeout_ms = 1000;
        store *s = store_new(&cfg);
        char ns[32];
        snprintf(ns, sizeof(ns), "t:large-%d", timeouts[t]);
        check(store_ping(s) == 0, "%s", store_errstr(s));
        double t0 = large_commit_now_s();
        int rc = store_commit(s, ns, sp, N, "2026-01-01T00:00:00.000Z", "{}", 2);
        double took = large_commit_now_s() - t0;
        int err = store_err(s);
        for (size_t u = 1; t == 0 && u < sizeof(timeouts) / sizeof(*timeouts); u++)
            timeouts[u] = (int)(took * 1000 * fractions[u]) + 1;
        /* Whatever Redis still runs finishes before a command of its own. */
        store_config slow = *base;
        slow.command_timeout_ms = 30000;
        store *after = store_new(&slow);
        /* Past busy-reply-threshold Redis answers BUSY while it runs it. */
        int pinged = 0;
        for (int i = 0; i < 600 && !(pinged = store_ping(after) == 0); i++)
            large_commit_sleep_ms(100);
        check(pinged, "%s", store_errstr(after));
        long long stored = count->spills(ns), logged = count->entries(ns);
        printf("large commit, timeout %d ms: %s in %.3f s (%s), %lld spills and %lld log "
               "entries in Redis\n",
               timeouts[t], rc == 0 ? "written" : "failed", took, store_errstr(s), stored, logged);
        if (rc == 0) {
            written++;
            late += took * 1000 > timeouts[t];
            check(stored == N && logged == 1, "answered written: %lld spills", stored);
        } else if (err == STORE_ERR_UNKNOWN) {
            unknown++;
            check(stored == N || stored == 0, "partly written: %lld", stored);
        } else {
            refused++;
            check(stored == 0 && logged == 0, "answered not written: %lld spills %lld entries",
                  stored, logged);
        }
        check(store_session_delete(after, ns) == 0, "%s", store_errstr(after));
        store_free(after);
        store_free(s);
    }
    printf("large commits: %d written (%d of them answered after the timeout), %d refused, %d "
           "unknown\n",
           written, late, refused, unknown);
    /* A commit Redis runs longer than the timeout plus the question's own
     * budget has an unknown outcome; on a quiet machine none here does. */
    check(written > 0, "not even the commit with 60 s was written");
    free(sp);
    free(keys);
    free(shas);
    free(text);
}

#endif
