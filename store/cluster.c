/* The Redis Cluster connection layer: per-master connections, routing by
 * slot, redirections and bounded retries, and WAIT for replicas. */
#include "cluster.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* One master's connection. */
typedef struct {
    cluster_addr addr;
    redisContext *ctx;
    int64_t clock_offset_us; /* the master's clock minus ours, measured at connect */
    int script_loaded;
} node_conn;

struct cluster {
    cluster_config cfg;
    cluster_slot_map map;
    int map_stale; /* fetch the map before the next attempt */
    node_conn *conns;
    size_t n_conns;
    char script_sha[41];
    int err;
    char errstr[160];
};

static atomic_uint_fast64_t stat_moved, stat_ask, stat_retries, stat_refreshes, stat_shortfalls;

void cluster_get_stats(cluster_stats *out)
{
    out->moved = atomic_load(&stat_moved);
    out->ask = atomic_load(&stat_ask);
    out->retries = atomic_load(&stat_retries);
    out->refreshes = atomic_load(&stat_refreshes);
    out->wait_shortfalls = atomic_load(&stat_shortfalls);
}

/* ---- Handles ---- */

cluster *cluster_new(const cluster_config *cfg)
{
    cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = *cfg;
    cluster_slot_map_init(&c->map);
    c->map_stale = 1;
    return c;
}

static void conn_close(node_conn *n)
{
    if (n->ctx)
        redisFree(n->ctx);
    n->ctx = NULL;
    n->script_loaded = 0;
}

void cluster_free(cluster *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_conns; i++)
        conn_close(&c->conns[i]);
    free(c->conns);
    cluster_slot_map_clear(&c->map);
    free(c);
}

int cluster_err(const cluster *c)
{
    return c->err;
}

const char *cluster_errstr(const cluster *c)
{
    return c->errstr;
}

static void set_error(cluster *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(cluster *c, int code, const char *fmt, ...)
{
    va_list ap;
    c->err = code;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
}

/* ---- Clocks ---- */

static int64_t mono_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int64_t realtime_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static struct timeval us_to_tv(int64_t us)
{
    if (us < 1000)
        us = 1000;
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    return tv;
}

static void sleep_us(int64_t us)
{
    struct timespec t = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* ---- Connections ---- */

/* The connection for addr, added (unconnected) when new; NULL when out of
 * memory. */
static node_conn *conn_for(cluster *c, const cluster_addr *addr)
{
    for (size_t i = 0; i < c->n_conns; i++)
        if (c->conns[i].addr.port == addr->port && strcmp(c->conns[i].addr.host, addr->host) == 0)
            return &c->conns[i];
    node_conn *grown = realloc(c->conns, (c->n_conns + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    c->conns = grown;
    node_conn *n = &c->conns[c->n_conns++];
    memset(n, 0, sizeof(*n));
    n->addr = *addr;
    return n;
}

/* See store.c: a connection closed by its peer while idle shows as end of
 * file before anything is sent. */
static int connection_fit(const redisContext *ctx)
{
    char b;
    ssize_t n = recv(ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

static int measure_clock(node_conn *n)
{
    int64_t before = realtime_us();
    redisReply *r = redisCommand(n->ctx, "TIME");
    int64_t after = realtime_us();
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok) {
        int64_t t =
            strtoll(r->element[0]->str, NULL, 10) * 1000000 + strtoll(r->element[1]->str, NULL, 10);
        n->clock_offset_us = t - before - (after - before) / 2;
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Connects n if it is not, within the connect timeout and what is left
 * until end. Returns 0, or -1 with the reason in c's error. Nothing of a
 * command has been sent when this fails. */
static int conn_ready(cluster *c, node_conn *n, int64_t end)
{
    if (n->ctx && connection_fit(n->ctx))
        return 0;
    conn_close(n);
    int64_t left = end - mono_us(), connect_us = (int64_t)c->cfg.connect_timeout_ms * 1000;
    n->ctx = redisConnectWithTimeout(n->addr.host, n->addr.port,
                                     us_to_tv(left < connect_us ? left : connect_us));
    if (!n->ctx || n->ctx->err) {
        set_error(c, CLUSTER_ERR_IO, "connect %s:%d: %s", n->addr.host, n->addr.port,
                  n->ctx ? n->ctx->errstr : "out of memory");
        conn_close(n);
        return -1;
    }
    if (redisSetTimeout(n->ctx, us_to_tv(end - mono_us())) != REDIS_OK || measure_clock(n) != 0) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port,
                  n->ctx->errstr[0] ? n->ctx->errstr : "no answer to TIME");
        conn_close(n);
        return -1;
    }
    return 0;
}

/* ---- Slot map ---- */

static int fetch_map_from(cluster *c, node_conn *n, int64_t end)
{
    if (conn_ready(c, n, end) != 0)
        return -1;
    redisReply *r = redisCommand(n->ctx, "CLUSTER SLOTS");
    if (!r) {
        set_error(c, CLUSTER_ERR_IO, "CLUSTER SLOTS from %s:%d: %s", n->addr.host, n->addr.port,
                  n->ctx->errstr);
        conn_close(n);
        return -1;
    }
    char err[128];
    cluster_slot_map fresh;
    cluster_slot_map_init(&fresh);
    int rc = cluster_slot_map_parse(r, n->addr.host, &fresh, err, sizeof(err));
    freeReplyObject(r);
    if (rc != 0) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, err);
        return -1;
    }
    atomic_fetch_add(&stat_refreshes, 1);
    cluster_slot_map_clear(&c->map);
    c->map = fresh;
    c->map_stale = 0;
    return 0;
}

/* Fetches the slot map: first from prefer (the node that just claimed a
 * slot, when not NULL), then the masters known, then the seeds. Returns 0,
 * or -1 when none answered. */
static int refresh_map(cluster *c, const cluster_addr *prefer, int64_t end)
{
    node_conn *n;
    if (prefer && (n = conn_for(c, prefer)) && fetch_map_from(c, n, end) == 0)
        return 0;
    /* The map is replaced as soon as one node answers: copy the masters. */
    size_t known = c->map.n_masters;
    cluster_addr *masters = known ? malloc(known * sizeof(*masters)) : NULL;
    if (masters)
        memcpy(masters, c->map.masters, known * sizeof(*masters));
    else
        known = 0;
    int rc = -1;
    for (size_t i = 0; rc != 0 && i < known + c->cfg.n_seeds && mono_us() < end; i++) {
        const cluster_addr *a = i < known ? &masters[i] : &c->cfg.seeds[i - known];
        if ((n = conn_for(c, a)))
            rc = fetch_map_from(c, n, end);
    }
    free(masters);
    return rc;
}

/* ---- Commands ---- */

static const char wait_fmt[] = "WAIT %d %lld";

/* The margin kept between the last moment a command may start and the end
 * of the command's budget, for running it and for the reply's way back. */
static int64_t margin_us(const cluster *c)
{
    int64_t ms = c->cfg.command_timeout_ms;
    return (ms / 4 < 500 ? ms / 4 : 500) * 1000;
}

static int load_script(cluster *c, node_conn *n, const char *script)
{
    redisReply *r = redisCommand(n->ctx, "SCRIPT LOAD %s", script);
    int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (ok) {
        memcpy(c->script_sha, r->str, 40);
        c->script_sha[40] = '\0';
        n->script_loaded = 1;
    } else {
        set_error(c, CLUSTER_ERR_IO, "SCRIPT LOAD on %s:%d: %s", n->addr.host, n->addr.port,
                  r && r->type == REDIS_REPLY_ERROR ? r->str : n->ctx->errstr);
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

typedef enum { SENT_NOTHING, SENT_LOST, SENT_OK } send_result;

/* Sends [ASKING] cmd [WAIT] on n as one write and reads the replies: the
 * command's in *reply, the number of replicas WAIT counted in *acked.
 * SENT_LOST when the connection failed after the command may have left. */
static send_result send_once(cluster *c, node_conn *n, const cluster_command *cmd, int asking,
                             int64_t end, const char **argv, size_t *lens, char *deadline,
                             redisReply **reply, long long *acked)
{
    *reply = NULL;
    if (redisSetTimeout(n->ctx, us_to_tv(end - mono_us())) != REDIS_OK) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: set timeout", n->addr.host, n->addr.port);
        conn_close(n);
        return SENT_NOTHING;
    }
    if (cmd->deadline_arg >= 0) {
        int64_t last_start = end - margin_us(c) - mono_us() + realtime_us() + n->clock_offset_us;
        lens[cmd->deadline_arg] = (size_t)snprintf(deadline, 24, "%lld", (long long)last_start);
    }
    int64_t wait_ms = (end - margin_us(c) - mono_us()) / 1000;
    if (wait_ms < 1)
        wait_ms = 1; /* WAIT 0 would block for good */
    if ((asking && redisAppendCommand(n->ctx, "ASKING") != REDIS_OK) ||
        redisAppendCommandArgv(n->ctx, cmd->argc, argv, lens) != REDIS_OK ||
        (cmd->min_replicas > 0 &&
         redisAppendCommand(n->ctx, wait_fmt, cmd->min_replicas, (long long)wait_ms) != REDIS_OK)) {
        set_error(c, CLUSTER_ERR_OOM, "out of memory");
        conn_close(n);
        return SENT_NOTHING;
    }
    int expected = 1 + asking + (cmd->min_replicas > 0);
    redisReply *r[3] = {NULL, NULL, NULL};
    for (int i = 0; i < expected; i++) {
        if (redisGetReply(n->ctx, (void **)&r[i]) != REDIS_OK || !r[i]) {
            set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port,
                      n->ctx->errstr[0] ? n->ctx->errstr : "connection lost");
            for (int j = 0; j < i; j++)
                freeReplyObject(r[j]);
            conn_close(n);
            return SENT_LOST;
        }
    }
    if (asking)
        freeReplyObject(r[0]);
    *reply = r[asking];
    *acked = -1;
    if (cmd->min_replicas > 0) {
        redisReply *w = r[expected - 1];
        /* A command refused (MOVED, ...) was never written: WAIT counts
         * nothing of it. */
        *acked = w->type == REDIS_REPLY_INTEGER ? w->integer : 0;
        freeReplyObject(w);
    }
    return SENT_OK;
}

/* Sleeps before the next attempt, doubling from 10 ms to 200 ms, never past
 * end. Returns 0, or -1 when no time is left. */
static int backoff(int64_t *delay_us, int64_t end)
{
    int64_t left = end - mono_us() - 1000;
    if (left <= 0)
        return -1;
    sleep_us(*delay_us < left ? *delay_us : left);
    *delay_us = *delay_us * 2 < 200000 ? *delay_us * 2 : 200000;
    atomic_fetch_add(&stat_retries, 1);
    return 0;
}

redisReply *cluster_run(cluster *c, const char *key, size_t key_len, const cluster_command *cmd)
{
    int64_t start = mono_us(), end = start + (int64_t)c->cfg.command_timeout_ms * 1000;
    int64_t delay = 10000;
    int slot = cluster_key_slot(key, key_len), attempts = 0, asking = 0;
    cluster_addr ask_to, moved_to;
    const cluster_addr *prefer = NULL;
    char deadline[24], last[sizeof(c->errstr)] = "no attempt";

    c->err = 0;
    c->errstr[0] = '\0';
    const char **argv = malloc((size_t)cmd->argc * sizeof(*argv));
    size_t *lens = malloc((size_t)cmd->argc * sizeof(*lens));
    if (!argv || !lens) {
        free(argv);
        free(lens);
        set_error(c, CLUSTER_ERR_OOM, "out of memory");
        return NULL;
    }
    memcpy(argv, cmd->argv, (size_t)cmd->argc * sizeof(*argv));
    memcpy(lens, cmd->lens, (size_t)cmd->argc * sizeof(*lens));
    if (cmd->deadline_arg >= 0)
        argv[cmd->deadline_arg] = deadline;

    redisReply *out = NULL;
    for (;; attempts++) {
        if (attempts > 0 && c->err) {
            snprintf(last, sizeof(last), "%s", c->errstr);
            c->err = 0;
        }
        if (mono_us() >= end - 1000)
            break;
        if (c->map_stale && refresh_map(c, prefer, end) != 0 && c->map.n_masters == 0) {
            if (backoff(&delay, end) != 0)
                break;
            continue;
        }
        prefer = NULL;
        node_conn *n;
        if (asking) {
            n = conn_for(c, &ask_to);
        } else if (c->map.owner[slot] < 0) {
            set_error(c, CLUSTER_ERR_IO, "slot %d is not served", slot);
            c->map_stale = 1;
            if (backoff(&delay, end) != 0)
                break;
            continue;
        } else {
            n = conn_for(c, &c->map.masters[c->map.owner[slot]]);
        }
        if (!n) {
            set_error(c, CLUSTER_ERR_OOM, "out of memory");
            goto done;
        }
        if (conn_ready(c, n, end) != 0 ||
            (cmd->script && !n->script_loaded && load_script(c, n, cmd->script) != 0)) {
            conn_close(n);
            c->map_stale = 1;
            asking = 0;
            if (backoff(&delay, end) != 0)
                break;
            continue;
        }
        if (cmd->script) {
            argv[0] = "EVALSHA";
            lens[0] = 7;
            argv[1] = c->script_sha;
            lens[1] = 40;
        }
        redisReply *r;
        long long acked;
        send_result sent = send_once(c, n, cmd, asking, end, argv, lens, deadline, &r, &acked);
        asking = 0;
        if (sent != SENT_OK) {
            c->map_stale = 1;
            if (c->err == CLUSTER_ERR_OOM)
                goto done;
            if (sent == SENT_LOST && !cmd->resend) {
                set_error(c, CLUSTER_ERR_IO, "%s (the command may have run; not sent again)",
                          c->errstr);
                goto done;
            }
            if (backoff(&delay, end) != 0)
                break;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            int to_slot;
            cluster_addr to;
            switch (cluster_reply_classify(r->str, r->len, &to_slot, &to)) {
            case CLUSTER_REPLY_MOVED:
                atomic_fetch_add(&stat_moved, 1);
                moved_to = to;
                prefer = &moved_to;
                /* Believed at once: should no node answer for the map, the
                 * next attempt still goes where the slot now lives. */
                if (to_slot == slot)
                    cluster_slot_map_assign(&c->map, slot, &to);
                c->map_stale = 1;
                set_error(c, CLUSTER_ERR_IO, "%.*s", (int)r->len, r->str);
                freeReplyObject(r);
                continue;
            case CLUSTER_REPLY_ASK:
                atomic_fetch_add(&stat_ask, 1);
                ask_to = to;
                asking = 1;
                set_error(c, CLUSTER_ERR_IO, "%.*s", (int)r->len, r->str);
                freeReplyObject(r);
                continue;
            case CLUSTER_REPLY_CLUSTERDOWN:
                c->map_stale = 1;
                /* fall through */
            case CLUSTER_REPLY_TRYAGAIN:
                set_error(c, CLUSTER_ERR_IO, "%s:%d: %.*s", n->addr.host, n->addr.port, (int)r->len,
                          r->str);
                freeReplyObject(r);
                if (backoff(&delay, end) != 0)
                    goto timed_out;
                continue;
            case CLUSTER_REPLY_NOSCRIPT:
                if (cmd->script) {
                    /* The master's script cache was flushed: load it again. */
                    n->script_loaded = 0;
                    set_error(c, CLUSTER_ERR_IO, "%.*s", (int)r->len, r->str);
                    freeReplyObject(r);
                    atomic_fetch_add(&stat_retries, 1);
                    continue;
                }
                break;
            case CLUSTER_REPLY_OTHER:
                break;
            }
        }
        if (cmd->min_replicas > 0 && r->type != REDIS_REPLY_ERROR && acked < cmd->min_replicas) {
            atomic_fetch_add(&stat_shortfalls, 1);
            set_error(c, CLUSTER_ERR_REPLICAS,
                      "written on master %s:%d, but %lld of %d replicas acknowledged it within "
                      "the timeout",
                      n->addr.host, n->addr.port, acked, cmd->min_replicas);
            freeReplyObject(r);
            goto done;
        }
        out = r;
        goto done;
    }
timed_out:
    if (c->err)
        snprintf(last, sizeof(last), "%s", c->errstr);
    set_error(c, CLUSTER_ERR_IO, "no answer within %d ms (%d attempts; last: %s)",
              c->cfg.command_timeout_ms, attempts + 1, last);
done:
    free(argv);
    free(lens);
    return out;
}

/* ---- Readiness ---- */

int cluster_check(cluster *c)
{
    int64_t end = mono_us() + (int64_t)c->cfg.command_timeout_ms * 1000;
    c->err = 0;
    c->errstr[0] = '\0';
    if (refresh_map(c, NULL, end) != 0)
        return -1;
    size_t served = cluster_slot_map_served(&c->map);
    if (served != CLUSTER_SLOTS) {
        set_error(c, CLUSTER_ERR_IO, "%zu of %d slots served", served, CLUSTER_SLOTS);
        return -1;
    }
    for (size_t i = 0; i < c->map.n_masters; i++) {
        node_conn *n = conn_for(c, &c->map.masters[i]);
        if (!n) {
            set_error(c, CLUSTER_ERR_OOM, "out of memory");
            return -1;
        }
        if (conn_ready(c, n, end) != 0)
            return -1;
        redisReply *r = redisCommand(n->ctx, "CLUSTER INFO");
        int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        if (!ok)
            set_error(c, CLUSTER_ERR_IO, "master %s:%d: %s", n->addr.host, n->addr.port,
                      r ? "cluster_state is not ok" : n->ctx->errstr);
        if (r)
            freeReplyObject(r);
        else
            conn_close(n);
        if (!ok)
            return -1;
    }
    return 0;
}
