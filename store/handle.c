/* What every part of the store shares, and calls nothing above it: a
 * handle's error and the process's connection counters. */
#include "cluster.h"
#include "conn.h"
#include "store_impl.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Errors ---- */

int store_err(const store *s)
{
    return s->err;
}

const char *store_errstr(const store *s)
{
    return s->errstr;
}

static void set_error_v(store *s, int code, const char *fmt, va_list ap)
{
    s->err = code;
    vsnprintf(s->errstr, sizeof(s->errstr), fmt, ap);
}

void store_fail(store *s, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(s, code, fmt, ap);
    va_end(ap);
    conn_count_error();
}

void store_fail_quiet(store *s, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(s, code, fmt, ap);
    va_end(ap);
}

/* Every operation starts with a clean error. */
/* ---- Counters ---- */

static atomic_uint_fast64_t stat_single_shortfalls;

void store_count_wait_shortfall(void)
{
    atomic_fetch_add(&stat_single_shortfalls, 1);
}

void store_get_stats(store_stats *out)
{
    conn_get_stats(out);
    cluster_stats cs;
    cluster_get_stats(&cs);
    out->moved = cs.moved;
    out->ask = cs.ask;
    out->retries = cs.retries;
    out->slot_map_refreshes = cs.refreshes;
    out->wait_shortfalls = cs.wait_shortfalls + atomic_load(&stat_single_shortfalls);
}
