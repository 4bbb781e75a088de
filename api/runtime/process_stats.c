/* /proc/self/stat's fields 14-15 (utime, stime: clock ticks), 20
 * (num_threads), 23 (vsize: bytes) and 24 (rss: pages); the descriptors
 * are the entries of /proc/self/fd. */
#include "process_stats.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double started;

void process_stats_init(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    started = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int64_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the descriptor opendir() holds */
}

static int read_stat(process_stats *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) is in parentheses and may hold spaces:
     * the fields after it start past its last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long utime, stime, vsize;
    long threads, rss;
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %ld %*d %*u "
               "%lu %ld",
               &utime, &stime, &threads, &vsize, &rss) != 5)
        return -1;
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    out->cpu_seconds = (double)(utime + stime) / (double)(ticks > 0 ? ticks : 100);
    out->threads = threads > 0 ? (uint64_t)threads : 0;
    out->virtual_bytes = vsize;
    out->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)(page > 0 ? page : 4096) : 0;
    return 0;
}

int process_stats_read(process_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->start_time_seconds = started;
    out->open_fds = count_fds();
    struct rlimit rl;
    out->max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? (int64_t)rl.rlim_cur
                       : -1;
    return read_stat(out);
}
