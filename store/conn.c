/* One Redis connection: connect, reconnect lazily after any failure, run
 * commands and scripts, keep deferred replies in step. */
#include "conn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static atomic_uint_fast64_t stat_errors;
static atomic_uint_fast64_t stat_reconnects;

void conn_count_error(void)
{
    atomic_fetch_add(&stat_errors, 1);
}

void conn_get_stats(store_stats *out)
{
    out->errors = atomic_load(&stat_errors);
    out->reconnects = atomic_load(&stat_reconnects);
}

void conn_init(store_conn *c, const store_node_addr *addr, const store_config *cfg)
{
    memset(c, 0, sizeof(*c));
    c->addr = *addr;
    c->db = cfg->db;
    c->connect_timeout_ms = cfg->connect_timeout_ms;
    c->command_timeout_ms = cfg->command_timeout_ms;
}

void conn_close(store_conn *c)
{
    if (c->ctx)
        redisFree(c->ctx);
    c->ctx = NULL;
    c->deferred = 0;
}

static void set_error(store_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(store_conn *c, int code, const char *fmt, ...)
{
    va_list ap;
    c->err = code;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    conn_count_error();
}

/* A connection that failed once may be half-read: drop it and start over on
 * the next call rather than guess its state. */
void conn_drop(store_conn *c, const char *what)
{
    set_error(c, STORE_ERR_IO, "%s: %s", what,
              c->ctx && c->ctx->errstr[0] ? c->ctx->errstr : "I/O error");
    conn_close(c);
}

static struct timeval ms_to_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

static int64_t realtime_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

int64_t conn_redis_time_us(const store_conn *c)
{
    return realtime_us() + c->clock_offset_us;
}

/* Measures Redis's clock against ours, so that a commit can carry a deadline
 * in Redis's own time (see layout_commit_script). Returns 0, or -1. */
static int measure_clock(store_conn *c)
{
    int64_t before = realtime_us();
    redisReply *r = redisCommand(c->ctx, "TIME");
    int64_t after = realtime_us();
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok) {
        int64_t redis_us =
            strtoll(r->element[0]->str, NULL, 10) * 1000000 + strtoll(r->element[1]->str, NULL, 10);
        c->clock_offset_us = redis_us - before - (after - before) / 2;
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Whether a connection that sat idle is still fit for a command. A Redis
 * that restarted (or dropped the client) has closed it, which shows as end
 * of file before anything is sent: reconnect then, instead of failing the
 * one request that finds out. Bytes waiting where no reply is due mean the
 * connection is out of step: not fit either. */
static int connection_fit(const redisContext *ctx)
{
    char b;
    ssize_t n = recv(ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

/* Reads the replies of deferred commands (see conn_defer()); they have
 * usually long arrived. Returns 0, or -1 when the connection failed. */
static int drain_deferred(store_conn *c)
{
    for (; c->deferred > 0; c->deferred--) {
        redisReply *r = NULL;
        if (redisGetReply(c->ctx, (void **)&r) != REDIS_OK || !r) {
            c->deferred = 0;
            conn_count_error();
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR)
            conn_count_error();
        freeReplyObject(r);
    }
    return 0;
}

int conn_ensure(store_conn *c)
{
    c->err = 0;
    c->errstr[0] = '\0';
    if (c->ctx) {
        /* A reply just read proves the connection as well as a peek. */
        if (c->deferred > 0 ? drain_deferred(c) == 0 : connection_fit(c->ctx))
            return 0;
        conn_close(c);
    }

    struct timeval ct = ms_to_tv(c->connect_timeout_ms);
    if (c->addr.unix_path[0])
        c->ctx = redisConnectUnixWithTimeout(c->addr.unix_path, ct);
    else
        c->ctx = redisConnectWithTimeout(c->addr.host, c->addr.port, ct);
    if (!c->ctx || c->ctx->err) {
        conn_drop(c, "connect");
        return -1;
    }
    if (redisSetTimeout(c->ctx, ms_to_tv(c->command_timeout_ms)) != REDIS_OK) {
        conn_drop(c, "set timeout");
        return -1;
    }
    if (c->db != 0) {
        redisReply *r = redisCommand(c->ctx, "SELECT %d", c->db);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (!ok) {
            conn_drop(c, "select");
            return -1;
        }
    }
    if (measure_clock(c) != 0) {
        conn_drop(c, "time");
        return -1;
    }
    for (size_t i = 0; i < CONN_SCRIPTS_MAX; i++)
        c->scripts[i].sha[0] = '\0';
    if (c->ever_connected)
        atomic_fetch_add(&stat_reconnects, 1);
    c->ever_connected = 1;
    return 0;
}

/* Sends one command on a connection known to be up and reads its reply. */
static redisReply *run(store_conn *c, int argc, const char **argv, const size_t *lens)
{
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, lens);
    if (!r) {
        conn_drop(c, argv[0]);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        set_error(c, STORE_ERR_PROTOCOL, "%s: %.*s", argv[0], (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

redisReply *conn_command(store_conn *c, int argc, const char **argv, const size_t *lens)
{
    if (conn_ensure(c) != 0)
        return NULL;
    return run(c, argc, argv, lens);
}

/* ---- Scripts ---- */

/* The cache slot of script: its digest once loaded on this connection. */
static char *script_slot(store_conn *c, const char *script)
{
    for (size_t i = 0; i < CONN_SCRIPTS_MAX; i++)
        if (c->scripts[i].text == script || !c->scripts[i].text) {
            if (!c->scripts[i].text) {
                c->scripts[i].text = script;
                c->scripts[i].sha[0] = '\0';
            }
            return c->scripts[i].sha;
        }
    return NULL;
}

/* Loaded once per connection, so each run sends 40 bytes of digest
 * instead of the script. */
static int script_load(store_conn *c, const char *script, char *sha)
{
    const char *argv[] = {"SCRIPT", "LOAD", script};
    size_t lens[] = {6, 4, strlen(script)};
    redisReply *r = run(c, 3, argv, lens);
    int loaded = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (loaded)
        memcpy(sha, r->str, 41);
    else if (r)
        set_error(c, STORE_ERR_PROTOCOL, "SCRIPT LOAD: unexpected reply");
    if (r)
        freeReplyObject(r);
    return loaded ? 0 : -1;
}

int conn_script_prepare(store_conn *c, const char *script)
{
    if (conn_ensure(c) != 0)
        return -1;
    char *sha = script_slot(c, script);
    if (!sha) {
        set_error(c, STORE_ERR_PROTOCOL, "too many scripts");
        return -1;
    }
    return sha[0] ? 0 : script_load(c, script, sha);
}

redisReply *conn_script(store_conn *c, const char *script, int argc, const char **argv,
                        size_t *lens)
{
    if (conn_script_prepare(c, script) != 0)
        return NULL;
    char *sha = script_slot(c, script);
    argv[0] = "EVALSHA";
    lens[0] = 7;
    argv[1] = sha;
    lens[1] = 40;
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, lens);
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* The script cache was flushed under us: send the script itself,
         * and load it again next time. */
        freeReplyObject(r);
        sha[0] = '\0';
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = script;
        lens[1] = strlen(script);
        r = redisCommandArgv(c->ctx, argc, argv, lens);
    }
    if (!r) {
        conn_drop(c, "script");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        set_error(c, STORE_ERR_PROTOCOL, "script: %.*s", (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* ---- Deferred replies ---- */

int conn_defer(store_conn *c, int argc, const char **argv, const size_t *lens)
{
    if (conn_ensure(c) != 0)
        return -1;
    int done = 0;
    if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK) {
        conn_drop(c, argv[0]);
        return -1;
    }
    while (!done)
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK) {
            conn_drop(c, argv[0]);
            return -1;
        }
    c->deferred++;
    return 0;
}
