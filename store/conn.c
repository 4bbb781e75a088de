/* One Redis connection: non-blocking connect, every wait a poll() against
 * a deadline, deferred replies kept in step, scripts cached by digest. */
#include "conn.h"
#include "mono_clock.h"
#include "tls.h"

#include <hiredis/sds.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* conn_defer() drops a command rather than queue more than this behind a
 * Redis that has not answered (a worker sends one per request, and reads
 * the replies that have come at each): Redis is stalled by then. */
#define DEFER_MAX_REPLIES 16384
#define DEFER_MAX_BYTES (8u << 20)

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
    memcpy(c->user, cfg->user, sizeof(c->user));
    memcpy(c->password, cfg->password, sizeof(c->password));
    c->connect_timeout_ms = cfg->connect_timeout_ms;
    c->command_timeout_ms = cfg->command_timeout_ms;
    c->tls_on = cfg->tls.on;
    c->tls_ctx = c->tls_on ? tls_context_for(&cfg->tls) : NULL;
    snprintf(c->tls_name, sizeof(c->tls_name), "%s", cfg->tls.server_name);
}

void conn_init_like(store_conn *c, const store_conn *from, int command_timeout_ms)
{
    memset(c, 0, sizeof(*c));
    c->addr = from->addr;
    c->db = from->db;
    memcpy(c->user, from->user, sizeof(c->user));
    memcpy(c->password, from->password, sizeof(c->password));
    c->connect_timeout_ms = from->connect_timeout_ms;
    c->command_timeout_ms = command_timeout_ms;
    c->tls_on = from->tls_on;
    c->tls_ctx = from->tls_ctx;
    memcpy(c->tls_name, from->tls_name, sizeof(c->tls_name));
    c->ever_connected = 1; /* a new connection, counted as a reconnect */
}

void conn_close(store_conn *c)
{
    tls_link_free(c->tls); /* before hiredis closes the socket under it */
    c->tls = NULL;
    if (c->ctx)
        redisFree(c->ctx);
    c->ctx = NULL;
    c->connecting = c->clock_ok = c->setup_due = c->auth_first = c->answered = 0;
    c->deferred = c->pending = 0;
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
static int drop(store_conn *c, const char *what, const char *why)
{
    /* A Redis port that speaks TLS only cuts a plaintext client before any
     * reply: the likely mistake, named. */
    int tls_port = !why && !c->tls_on && !c->answered && !c->addr.unix_path[0];
    set_error(c, STORE_ERR_IO, "%s: %s%s", what,
              why                           ? why
              : c->ctx && c->ctx->errstr[0] ? c->ctx->errstr
              : c->tls                      ? tls_link_error(c->tls)
                                            : "I/O error",
              tls_port ? " (a TLS port? rediss:// speaks TLS)" : "");
    conn_close(c);
    return -1;
}

/* ---- Time ---- */

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

/* Waits until the socket is ready for events or the deadline (monotonic
 * us; 0: do not wait) passes. Returns 1 when ready, 0 at the deadline. */
static int wait_fd(const store_conn *c, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline ? deadline - mono_clock_us() : 0;
        struct pollfd p = {c->ctx->fd, events, 0};
        int n = poll(&p, 1, left > 0 ? (int)((left + 999) / 1000) : 0);
        if (n > 0)
            return 1;
        if (n == 0 && (!deadline || mono_clock_us() >= deadline))
            return 0;
        if (n < 0 && errno != EINTR)
            return 1; /* let the read or write report it */
    }
}

/* ---- Sending and receiving ---- */

/* flush() over TLS: hiredis's output buffer through the link. */
static int flush_tls(store_conn *c, int64_t deadline)
{
    for (;;) {
        size_t len = sdslen(c->ctx->obuf);
        short events;
        if (len == 0)
            return 1;
        ssize_t n = tls_link_write(c->tls, c->ctx->obuf, len, &events);
        if (n < 0)
            return drop(c, "write", NULL);
        if ((size_t)n == len) {
            /* As hiredis does: a large command's buffer is not kept. */
            sdsfree(c->ctx->obuf);
            c->ctx->obuf = sdsempty();
            if (!c->ctx->obuf)
                return drop(c, "write", "out of memory");
        } else if (n > 0) {
            sdsrange(c->ctx->obuf, (int)n, -1);
        } else if (!wait_fd(c, events, deadline)) {
            return 0;
        }
    }
}

/* Writes the output buffer out, waiting up to deadline (0: only what the
 * socket takes now). Returns 1 when all is written, 0 when some is left,
 * -1 when the connection failed (dropped). */
static int flush(store_conn *c, int64_t deadline)
{
    int done = 0;
    if (c->connecting)
        return 0;
    if (c->tls)
        return flush_tls(c, deadline);
    /* Write first: the socket almost always takes it, and a poll() saved
     * is a syscall saved on every command. */
    for (;;) {
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK)
            return drop(c, "write", NULL);
        if (done)
            return 1;
        if (!wait_fd(c, POLLOUT, deadline))
            return 0;
    }
}

/* Feeds hiredis's reader what the TLS link has, waiting up to deadline
 * (0: only what has arrived). Returns 1 when something was fed, 0 at the
 * deadline, -1 when the connection failed (dropped). */
static int read_tls(store_conn *c, int64_t deadline)
{
    char buf[16 * 1024]; /* hiredis reads as much at a time */
    for (;;) {
        short events;
        ssize_t n = tls_link_read(c->tls, buf, sizeof(buf), &events);
        if (n < 0)
            return drop(c, "read", NULL);
        if (n > 0)
            return redisReaderFeed(c->ctx->reader, buf, (size_t)n) == REDIS_OK
                       ? 1
                       : drop(c, "read", "out of memory");
        if (!wait_fd(c, events, deadline))
            return 0;
    }
}

/* Reads one reply, waiting up to deadline (0: only what has arrived).
 * Returns 1 with *r set, 0 when none is complete yet, -1 when the
 * connection failed (dropped). */
static int read_reply(store_conn *c, int64_t deadline, redisReply **r)
{
    if (c->connecting)
        return 0; /* nothing can have come yet (only conn_defer() gets here so) */
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c->ctx, &reply) != REDIS_OK)
            return drop(c, "read", NULL);
        if (reply) {
            *r = reply;
            c->answered = 1;
            return 1;
        }
        if (c->tls) {
            /* Read before polling: the link may hold data already read
             * from the socket. */
            int got = read_tls(c, deadline);
            if (got <= 0)
                return got;
            continue;
        }
        if (!wait_fd(c, POLLIN, deadline))
            return 0;
        if (redisBufferRead(c->ctx) != REDIS_OK)
            return drop(c, "read", NULL);
    }
}

/* The reply to a new connection's AUTH or SELECT: 0, or -1 when Redis
 * refused it (dropped, the connection unusable as configured). */
static int setup_reply(store_conn *c, const redisReply *r)
{
    int auth = c->auth_first;
    c->setup_due--;
    c->auth_first = 0;
    if (r->type != REDIS_REPLY_ERROR)
        return 0;
    if (!auth)
        return drop(c, "select", "Redis refused the database number");
    /* Redis's own words (WRONGPASS, or AUTH where it has no password):
     * they never repeat the password. */
    char why[100];
    snprintf(why, sizeof(why), "Redis refused the credentials: %.60s", r->str ? r->str : "");
    return drop(c, "auth", why);
}

/* Reads the replies due for deferred commands (and the AUTH and SELECT of
 * a new connection), waiting up to deadline (0: only those that have
 * arrived). Returns 0 when none is due any more, 1 when some still are, -1
 * when the connection failed or is out of step (dropped). */
static int drain(store_conn *c, int64_t deadline)
{
    while (c->setup_due || c->deferred > 0) {
        redisReply *r = NULL;
        int got = read_reply(c, deadline, &r);
        if (got <= 0)
            return got < 0 ? -1 : 1;
        if (c->setup_due) {
            int rc = setup_reply(c, r);
            freeReplyObject(r);
            if (rc != 0)
                return -1;
            continue;
        }
        int bad = r->type == REDIS_REPLY_ERROR;
        freeReplyObject(r);
        c->deferred--;
        if (bad)
            conn_count_error();
    }
    return 0;
}

/* ---- Connecting ---- */

/* Starts a non-blocking connect and queues the AUTH and SELECT (their
 * replies read by drain()). Returns 0, or -1. */
static int connect_start(store_conn *c)
{
    if (c->tls_on && (!c->tls_ctx || tls_context_error(c->tls_ctx))) {
        set_error(c, STORE_ERR_IO, "connect: %s",
                  c->tls_ctx ? tls_context_error(c->tls_ctx) : "TLS: out of memory");
        return -1;
    }
    if (c->addr.unix_path[0])
        c->ctx = redisConnectUnixNonBlock(c->addr.unix_path);
    else
        c->ctx = redisConnectNonBlock(c->addr.host, c->addr.port);
    if (!c->ctx || c->ctx->err)
        return drop(c, "connect", NULL);
    c->connecting = 1;
    for (size_t i = 0; i < CONN_SCRIPTS_MAX; i++)
        c->scripts[i].sha[0] = '\0';
    if (c->password[0]) {
        /* AUTH password, or AUTH user password for an ACL user. */
        const char *argv[3] = {"AUTH"};
        size_t lens[3] = {4}, n = 1;
        if (c->user[0]) {
            argv[n] = c->user;
            lens[n++] = strlen(c->user);
        }
        argv[n] = c->password;
        lens[n++] = strlen(c->password);
        if (redisAppendCommandArgv(c->ctx, (int)n, argv, lens) != REDIS_OK)
            return drop(c, "auth", NULL);
        c->setup_due++;
        c->auth_first = 1;
    }
    if (c->db != 0) {
        char db[16];
        const char *argv[] = {"SELECT", db};
        size_t lens[] = {6, (size_t)snprintf(db, sizeof(db), "%d", c->db)};
        if (redisAppendCommandArgv(c->ctx, 2, argv, lens) != REDIS_OK)
            return drop(c, "select", NULL);
        c->setup_due++;
    }
    return 0;
}

/* The TLS handshake of a connection whose TCP connect is done, waiting up
 * to deadline (0: not at all). Returns 1 when done, 0 when still in
 * progress, -1 when it failed (dropped). */
static int handshake(store_conn *c, int64_t deadline)
{
    for (;;) {
        short events;
        int done = tls_link_handshake(c->tls, &events);
        if (done != 0)
            return done > 0 ? 1 : drop(c, "connect", NULL);
        if (!wait_fd(c, events, deadline))
            return deadline ? drop(c, "connect",
                                   "TLS handshake timed out (does Redis speak TLS on this port?)")
                            : 0;
    }
}

/* Sees the connect through, waiting up to deadline (0: not at all), and
 * over TLS the handshake after it, waiting up to handshake_by (0: not at
 * all). Returns 1 when connected, 0 when still in progress, -1 when it
 * failed. */
static int connect_finish(store_conn *c, int64_t deadline, int64_t handshake_by)
{
    if (!c->connecting)
        return 1;
    if (!c->tls) {
        if (!wait_fd(c, POLLOUT, deadline))
            return deadline ? drop(c, "connect", "timed out") : 0;
        int so_error = 0;
        socklen_t len = sizeof(so_error);
        if (getsockopt(c->ctx->fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0 || so_error != 0)
            return drop(c, "connect", strerror(so_error ? so_error : errno));
        if (c->tls_on &&
            !(c->tls = tls_link_new(c->tls_ctx, c->ctx->fd, c->addr.host, c->tls_name)))
            return drop(c, "connect", "TLS: out of memory");
    }
    if (c->tls) {
        int done = handshake(c, handshake_by);
        if (done <= 0)
            return done;
    }
    c->connecting = 0;
    if (c->ever_connected)
        atomic_fetch_add(&stat_reconnects, 1);
    c->ever_connected = 1;
    return 1;
}

/* Whether a connection that sat idle is still fit for a command. A Redis
 * that restarted (or dropped the client) has closed it, which shows as end
 * of file before anything is sent: reconnect then, instead of failing the
 * one request that finds out. Bytes waiting where no reply is due mean the
 * connection is out of step: not fit either. */
static int connection_fit(store_conn *c)
{
    if (c->tls)
        return tls_link_idle_fit(c->tls);
    char b;
    ssize_t n = recv(c->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

/* Makes the connection ready for a command that waits for its reply:
 * connected (within the connect timeout), everything queued sent and every
 * reply due read. Returns the command's deadline (monotonic us), or 0 with
 * the error set. */
static int64_t begin(store_conn *c)
{
    c->sent = 0;
    /* Twice at most: a connection found closed while reading the replies
     * due (Redis restarted since) gives way to a new one, as an idle one
     * found closed does. */
    for (int attempt = 0;; attempt++) {
        c->err = 0;
        c->errstr[0] = '\0';
        if (c->ctx && !c->connecting && !c->setup_due && c->deferred == 0 && c->pending == 0 &&
            !connection_fit(c))
            conn_close(c);
        if (!c->ctx && connect_start(c) != 0)
            return 0;
        int64_t connected_by = mono_clock_us() + (int64_t)c->connect_timeout_ms * 1000;
        if (connect_finish(c, connected_by, connected_by) < 0)
            return 0;
        int64_t deadline = mono_clock_us() + (int64_t)c->command_timeout_ms * 1000;
        if (!c->setup_due && c->deferred == 0)
            return deadline;
        int f = flush(c, deadline);
        int d = f < 0 ? -1 : drain(c, deadline);
        if (f < 0 || d < 0) {
            if (attempt == 0)
                continue;
            return 0;
        }
        if (f == 0 || d > 0) {
            drop(c, "earlier commands", "Redis did not answer within the timeout");
            return 0;
        }
        return deadline;
    }
}

int conn_ensure(store_conn *c)
{
    return begin(c) ? 0 : -1;
}

/* ---- Commands ---- */

/* Sends what is queued and reads one reply, by deadline. */
static redisReply *exchange(store_conn *c, const char *what, int64_t deadline)
{
    redisReply *r = NULL;
    int f = flush(c, deadline);
    if (f < 0)
        return NULL;
    if (f == 0) {
        drop(c, what, "timed out sending");
        return NULL;
    }
    c->sent = 1;
    int got = read_reply(c, deadline, &r);
    if (got == 0)
        drop(c, what, "Redis did not answer within the timeout");
    return got > 0 ? r : NULL;
}

static redisReply *checked(store_conn *c, const char *what, redisReply *r)
{
    if (r && r->type == REDIS_REPLY_ERROR) {
        set_error(c, STORE_ERR_PROTOCOL, "%s: %.*s", what, (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static redisReply *run(store_conn *c, int64_t deadline, int argc, const char **argv,
                       const size_t *lens)
{
    if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK) {
        drop(c, argv[0], "out of memory");
        return NULL;
    }
    return exchange(c, argv[0], deadline);
}

redisReply *conn_command(store_conn *c, int argc, const char **argv, const size_t *lens)
{
    int64_t deadline = begin(c);
    if (!deadline)
        return NULL;
    return checked(c, argv[0], run(c, deadline, argc, argv, lens));
}

int conn_append(store_conn *c, int argc, const char **argv, const size_t *lens)
{
    if (c->pending == 0 && !begin(c))
        return -1;
    if (!c->ctx)
        return -1;
    if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK) {
        drop(c, argv[0], "out of memory");
        return -1;
    }
    c->pending++;
    return 0;
}

int conn_read_by(store_conn *c, redisReply **replies, size_t n, int64_t deadline)
{
    c->sent = 0;
    if (!c->ctx || c->pending != n) {
        if (c->ctx)
            drop(c, "pipeline", "replies out of step");
        return -1;
    }
    int f = flush(c, deadline);
    if (f <= 0) {
        if (f == 0)
            drop(c, "pipeline", "timed out sending");
        return -1;
    }
    c->sent = 1;
    for (size_t i = 0; i < n; i++) {
        int got = read_reply(c, deadline, &replies[i]);
        if (got <= 0) {
            if (got == 0)
                drop(c, "pipeline", "Redis did not answer within the timeout");
            for (size_t j = 0; j < i; j++)
                freeReplyObject(replies[j]);
            return -1;
        }
    }
    c->pending = 0;
    return 0;
}

/* ---- Clock ---- */

/* Measures Redis's clock against ours, so that a commit can carry a
 * deadline in Redis's own time (see layout_commit_script). */
static int measure_clock(store_conn *c, int64_t deadline)
{
    const char *argv[] = {"TIME"};
    size_t lens[] = {4};
    int64_t before = realtime_us();
    redisReply *r = checked(c, "TIME", run(c, deadline, 1, argv, lens));
    int64_t after = realtime_us();
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok) {
        int64_t redis_us =
            strtoll(r->element[0]->str, NULL, 10) * 1000000 + strtoll(r->element[1]->str, NULL, 10);
        c->clock_offset_us = redis_us - before - (after - before) / 2;
        c->clock_ok = 1;
    } else if (r) {
        set_error(c, STORE_ERR_PROTOCOL, "TIME: unexpected reply");
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
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
static int script_load(store_conn *c, int64_t deadline, const char *script, char *sha)
{
    const char *argv[] = {"SCRIPT", "LOAD", script};
    size_t lens[] = {6, 4, strlen(script)};
    redisReply *r = checked(c, "SCRIPT LOAD", run(c, deadline, 3, argv, lens));
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
    int64_t deadline = begin(c);
    if (!deadline)
        return -1;
    if (!c->clock_ok && measure_clock(c, deadline) != 0)
        return -1;
    char *sha = script_slot(c, script);
    if (!sha) {
        set_error(c, STORE_ERR_PROTOCOL, "too many scripts");
        return -1;
    }
    return sha[0] ? 0 : script_load(c, deadline, script, sha);
}

redisReply *conn_script(store_conn *c, const char *script, int argc, const char **argv,
                        size_t *lens)
{
    int64_t deadline = begin(c);
    if (!deadline)
        return NULL;
    char *sha = script_slot(c, script);
    if (!sha) {
        set_error(c, STORE_ERR_PROTOCOL, "too many scripts");
        return NULL;
    }
    redisReply *r = NULL;
    if (sha[0]) {
        argv[0] = "EVALSHA";
        lens[0] = 7;
        argv[1] = sha;
        lens[1] = 40;
        r = run(c, deadline, argc, argv, lens);
        if (!r || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOSCRIPT", 8) != 0)
            return checked(c, "script", r);
        /* The script cache was flushed under us: send the script itself,
         * and load it again next time. */
        freeReplyObject(r);
        sha[0] = '\0';
    }
    argv[0] = "EVAL";
    lens[0] = 4;
    argv[1] = script;
    lens[1] = strlen(script);
    return checked(c, "script", run(c, deadline, argc, argv, lens));
}

/* ---- Deferred replies ---- */

int conn_defer(store_conn *c, int argc, const char **argv, const size_t *lens)
{
    c->err = 0;
    c->errstr[0] = '\0';
    if (c->pending > 0)
        return drop(c, argv[0], "a pipeline is open");
    /* Twice at most, as begin(): an idle connection Redis closed (seen
     * once the replies due are read) would take the command and lose it
     * unseen; a new one is tried, which fails now if Redis is gone. */
    for (int attempt = 0;; attempt++) {
        if (!c->ctx && connect_start(c) != 0)
            return -1;
        /* A connect is seen through (the kernel completes it even while
         * Redis is stalled), so that the command leaves now rather than
         * with the connection's next one. Past that (a TLS handshake
         * included, which needs Redis), take what has arrived; wait for
         * nothing. (Sent is not yet run: a read on another connection may
         * be served first, which is why such reads conn_settle() this
         * one.) */
        int64_t connected_by =
            c->connecting ? mono_clock_us() + (int64_t)c->connect_timeout_ms * 1000 : 0;
        if (connect_finish(c, connected_by, 0) < 0 || flush(c, 0) < 0 || drain(c, 0) < 0)
            return -1;
        if (attempt > 0 || c->connecting || c->setup_due || c->deferred > 0 || connection_fit(c))
            break;
        conn_close(c);
    }
    if (c->deferred >= DEFER_MAX_REPLIES || sdslen(c->ctx->obuf) >= DEFER_MAX_BYTES) {
        set_error(c, STORE_ERR_IO, "%s: dropped, Redis has not answered the %zu before it", argv[0],
                  c->deferred);
        return -1;
    }
    if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK)
        return drop(c, argv[0], "out of memory");
    c->deferred++;
    return flush(c, 0) >= 0 ? 0 : -1;
}

int conn_settle(store_conn *c)
{
    if (!c->ctx || (!c->setup_due && c->deferred == 0))
        return 0;
    int connected = connect_finish(c, 0, 0);
    if (connected <= 0)
        return connected < 0 ? -1 : 1;
    int f = flush(c, 0);
    int d = f < 0 ? -1 : drain(c, 0);
    return d < 0 ? -1 : f == 0 || d > 0;
}
