/* The process's own figures, as Prometheus's process_* metrics name them:
 * read from /proc/self at each /metrics render, so nothing is kept. */
#ifndef COMPACTD_PROCESS_STATS_H
#define COMPACTD_PROCESS_STATS_H

#include <stdint.h>

typedef struct {
    double cpu_seconds;      /* user + system, since start */
    uint64_t resident_bytes; /* RSS */
    uint64_t virtual_bytes;
    int64_t open_fds;          /* -1 when /proc/self/fd cannot be read */
    int64_t max_fds;           /* the soft RLIMIT_NOFILE; -1 when unlimited */
    double start_time_seconds; /* since the Unix epoch */
    uint64_t threads;
} process_stats;

/* Records the start time; call once at start-up. */
void process_stats_init(void);

/* Fills out. Returns 0, or -1 when /proc/self/stat cannot be read (the
 * fields then are 0, and open_fds and max_fds -1). */
int process_stats_read(process_stats *out);

#endif
