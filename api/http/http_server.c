/* libmicrohttpd glue: per-request state, body collection under the size
 * limit and the memory budget, the one place responses are written, and the
 * server's start and graceful shutdown. Framing checks, the handler pool and
 * the slow-client watchdog are in http_framing.c, http_pool.c and
 * http_watchdog.c. */
#include "http_internal.h"

#include "mono_clock.h"
#include "ticker.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double seconds_since(int64_t t0_us)
{
    return (double)(mono_clock_us() - t0_us) / 1e6;
}

/* Reports a request to the metrics and the log once: when its response is
 * queued, so that a client that has its answer also finds it counted, or
 * when it ends unanswered. */
static void report(request_state *st, int status, const char *body, size_t len)
{
    if (st->reported)
        return;
    st->reported = 1;
    http_server *s = st->server;
    s->h.completed(&st->req, status, body, len, seconds_since(st->start_us), s->h.cls);
}

/* ---- Responses ---- */

/* A response body and the budget it holds, released when libmicrohttpd is
 * done with the response (sent, or the client gone). A large one is
 * handed over a block at a time, so that the watchdog sees how fast it
 * leaves. */
typedef struct {
    http_server *s;
    char *body;
    size_t len;
    conn_watch *w; /* the connection's; NULL when unwatched */
} held_body;

static void held_body_free(void *cls)
{
    held_body *h = cls;
    http_budget_release(h->s, h->len);
    free(h->body);
    free(h);
}

/* Called by libmicrohttpd only while the connection is open, so the watch
 * is still there. */
static ssize_t held_body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    held_body *h = cls;
    if (pos >= h->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = h->len - (size_t)pos < max ? h->len - (size_t)pos : max;
    memcpy(buf, h->body + pos, n);
    if (h->w)
        atomic_store(&h->w->out_taken, (size_t)pos + n);
    return (ssize_t)n;
}

/* libmicrohttpd copies a response through a buffer of this size at most;
 * a smaller answer gets one of its own size (a 64 KiB allocation per
 * answer costs glibc more than the copy). */
#define RESPONSE_BLOCK (64u << 10)

/* An answer of at most this size (a compaction's of tens of units) is
 * handed to libmicrohttpd whole, which sends it with its head in one
 * system call; a larger one is handed over a block at a time, and one a
 * client reads slowly is cut by the watchdog's pace (http_watchdog.c).
 * A small one is held at most until the connection's deadline. */
#define RESPONSE_WHOLE (32u << 10)

/* Adds the headers every answer has, and res's own, to r. */
static void add_headers(struct MHD_Response *r, const request_state *st, const api_response *res)
{
    if (res->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
    if (res->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, res->allow);
    if (res->www_authenticate)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, res->www_authenticate);
    for (const char *const *hd = res->headers; hd && hd[0]; hd += 2)
        MHD_add_response_header(r, hd[0], hd[1]);
    for (const char *hb = res->header_block; hb && *hb;) {
        const char *value = hb + strlen(hb) + 1;
        MHD_add_response_header(r, hb, value);
        hb = value + strlen(value) + 1;
    }
    if (st->retry_after) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", st->retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    /* No answer is to be read as another type than the one it names. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
    if (st->close || atomic_load(&st->server->stopping))
        /* A request that could not be framed, or shutting down: no further
         * request is read on this connection. */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

/* Queues response r with res's headers (res's header block freed), and on
 * success reports the request with body (len bytes, or NULL) and starts
 * the deadline the response must leave within. */
static MHD_Result_t queue(struct MHD_Connection *conn, request_state *st, api_response *res,
                          struct MHD_Response *r, const char *body, size_t len)
{
    add_headers(r, st, res);
    free(res->header_block);
    res->header_block = NULL;
    MHD_Result_t ok = MHD_queue_response(conn, (unsigned)res->status, r);
    MHD_destroy_response(r);
    if (ok == MHD_YES) {
        st->status = res->status;
        report(st, res->status, body, len);
        http_arm(st->watch);
    }
    return ok;
}

/* A streamed answer (api_stream_open()): its body leaves as it is made. */
static MHD_Result_t send_stream(struct MHD_Connection *conn, request_state *st, api_response *res)
{
    struct MHD_Response *r = http_stream_response(res->stream);
    res->stream = NULL; /* the response's now, or abandoned */
    if (!r) {
        free(res->header_block);
        res->header_block = NULL;
        return MHD_NO;
    }
    if (st->watch)
        atomic_store(&st->watch->out_len, 0); /* no length to pace it by */
    return queue(conn, st, res, r, NULL, 0);
}

/* The only writer of responses. Takes ownership of res->body. */
static MHD_Result_t send_response(struct MHD_Connection *conn, request_state *st, api_response *res)
{
    http_server *s = st->server;
    if (res->stream)
        return send_stream(conn, st, res);
    held_body *h = malloc(sizeof(*h));
    if (!h) {
        free(res->body);
        free(res->header_block);
        res->body = NULL;
        res->header_block = NULL;
        return MHD_NO;
    }
    *h = (held_body){s, res->body, res->len, st->watch};
    res->body = NULL;
    /* Counted whatever the budget says: the bytes exist already. What the
     * answer held while it was built goes back. */
    atomic_fetch_add(&s->buffered, h->len);
    http_answer_settle(st);
    if (h->w) {
        atomic_store(&h->w->out_taken, 0);
        atomic_store(&h->w->out_len, h->len);
    }
    struct MHD_Response *r;
    if (h->len <= RESPONSE_WHOLE) {
        /* Handed over whole: its pace is the socket's, which takes it at once. */
        if (h->w)
            atomic_store(&h->w->out_taken, h->len);
        r = MHD_create_response_from_buffer_with_free_callback_cls(h->len, h->body, held_body_free,
                                                                   h);
    } else {
        size_t block = h->len < RESPONSE_BLOCK ? h->len + 1 : RESPONSE_BLOCK;
        r = MHD_create_response_from_callback(h->len, block, held_body_read, h, held_body_free);
    }
    if (!r) {
        held_body_free(h); /* still ours when creation fails */
        free(res->header_block);
        res->header_block = NULL;
        return MHD_NO;
    }
    /* Still ours: libmicrohttpd sends it only once this handler returns. */
    return queue(conn, st, res, r, h->body, h->len);
}

/* Answers with the application's words for a refusal of the transport's
 * own (http_handlers.refuse). */
static MHD_Result_t send_refusal(struct MHD_Connection *conn, request_state *st, http_refusal why,
                                 const char *detail)
{
    http_server *s = st->server;
    api_response res = {.status = 500};
    if (why == HTTP_REFUSED_OVERLOADED)
        st->retry_after = 1;
    s->h.refuse(why, detail, &res, s->h.cls);
    if (!res.body)
        return MHD_NO;
    return send_response(conn, st, &res);
}

/* The raw request target, as libmicrohttpd read it (before any decoding):
 * the request's state starts here, so that the access handler can tell
 * whether the client's target held a NUL or another control byte. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    http_server *s = cls;
    size_t len = strlen(uri);
    /* The raw target is kept (libmicrohttpd decodes it in place later),
     * after the state, in one allocation. */
    request_state *st = calloc(1, sizeof(*st) + len + 1);
    if (!st)
        return NULL;
    st->start_us = mono_clock_us();
    st->server = s;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    st->watch = ci ? http_watch_of(ci->socket_context) : NULL;
    for (const char *p = uri; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            st->bad_target = 1;
    st->target = uri;
    st->target_end = uri + len;
    memcpy(st->raw_target, uri, len + 1);
    st->req.target = st->raw_target;
    st->req.method = "";
    st->req.path = "";
    atomic_init(&st->holders, 1);
    atomic_fetch_add(&s->in_flight, 1);
    return st;
}

/* ---- Requests ---- */

/* The declared Content-Length, or 0 when there is none (libmicrohttpd has
 * refused a malformed one already). */
static unsigned long long declared_length(struct MHD_Connection *conn)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl ? strtoull(cl, NULL, 10) : 0;
}

/* Appends a chunk, growing the buffer (and its share of the budget) only as
 * bytes arrive; drops the body for good once it passes the size limit or
 * the budget, so that no more than either is ever held. */
static void collect(request_state *st, const char *data, size_t size, size_t max)
{
    if (st->too_large || st->overloaded)
        return;
    if (size > max - st->len) {
        st->too_large = 1;
        http_body_free(st);
        return;
    }
    if (st->len + size + 1 > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + size + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        if (http_budget_take(st->server, cap - st->cap) != 0) {
            st->overloaded = 1;
            http_body_free(st);
            return;
        }
        char *p = realloc(st->body, cap);
        if (!p) {
            http_budget_release(st->server, cap - st->cap);
            st->overloaded = 1; /* the body could not be held: answered 503 */
            http_body_free(st);
            return;
        }
        st->body = p;
        st->cap = cap;
    }
    memcpy(st->body + st->len, data, size);
    st->len += size;
}

/* Runs st's handler on the connection's thread and answers, inline or,
 * with local, as the local pool would run it: work it hands on goes to the
 * store pool, the connection suspended until that answers. */
static MHD_Result_t run_here(struct MHD_Connection *conn, http_server *s, request_state *st,
                             int local)
{
    api_response res = {.status = 500, .content_type = "application/json"};
    st->req.local = local;
    http_run_handler(s, st, &res);
    st->req.local = 0;
    assert(!st->streamed);
    if (res.resume) {
        MHD_suspend_connection(conn);
        http_pool_hand_on(s, st, &res);
        return MHD_YES;
    }
    if (!res.body) { /* 204, or a handler out of memory */
        res.body = malloc(1);
        res.len = 0;
        if (!res.body)
            return MHD_NO;
    }
    return send_response(conn, st, &res);
}

static MHD_Result_t on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_size, void **con_cls)
{
    http_server *s = cls;
    request_state *st = *con_cls;

    if (!st)
        return MHD_NO; /* out of memory when the request line was read */
    if (!st->begun) {
        st->begun = 1;
        st->req.method = method;
        st->req.path = url;
        st->req.conn = conn;
        const char *fault = http_framing_fault(conn, st, method, version);
        if (fault) {
            st->close = 1;
            return send_refusal(conn, st, HTTP_REFUSED_FRAMING, fault);
        }
        /* The application matches the request once, here, and keeps what
         * it found in req.app. */
        int runs = s->h.begin(&st->req, s->h.cls);
        if (runs == HTTP_BEGIN_FAILED)
            return MHD_NO;
        st->runs_inline = runs == HTTP_RUNS_INLINE;
        unsigned long long declared = declared_length(conn);
        if (declared > s->max_body) {
            st->too_large = 1;
            return send_refusal(conn, st, HTTP_REFUSED_TOO_LARGE, NULL);
        }
        /* Nothing is held yet; a body that cannot fit in what is left of the
         * budget now is refused before the client sends it, and past the
         * budget (responses count whatever it says) so is any request that
         * would make another response, except the operator's probes. */
        size_t held = atomic_load(&s->buffered);
        if ((held > s->budget || declared > s->budget - held) && !st->runs_inline) {
            st->overloaded = 1;
            return send_refusal(conn, st, HTTP_REFUSED_OVERLOADED, NULL);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        collect(st, upload_data, *upload_size, s->max_body);
        *upload_size = 0;
        return MHD_YES;
    }
    if (atomic_load(&st->answered)) { /* resumed: the pool's answer is ready */
        atomic_store(&st->answered, 0);
        return send_response(conn, st, &st->res);
    }
    /* The whole request is in: the watchdog's deadline is met, however long
     * the handler then waits on Redis. */
    if (st->watch)
        atomic_store(&st->watch->armed, 0);
    if (st->status)
        return MHD_YES; /* answered already (early) */
    if (st->too_large)
        return send_refusal(conn, st, HTTP_REFUSED_TOO_LARGE, NULL);
    if (st->overloaded)
        return send_refusal(conn, st, HTTP_REFUSED_OVERLOADED, NULL);

    if (st->body)
        st->body[st->len] = '\0';
    st->req.body = st->body;
    st->req.body_len = st->len;
    if (st->runs_inline)
        return run_here(conn, s, st, 0);
    http_pool_kind k = s->h.pool(&st->req, s->h.cls);
    if (k == HTTP_POOL_LOCAL && s->h.here && s->h.here(&st->req, s->h.cls) &&
        http_pool_open(s, HTTP_POOL_LOCAL))
        return run_here(conn, s, st, 1);
    MHD_suspend_connection(conn);
    http_pool_enqueue(s, st, k);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    request_state *st = *con_cls;
    (void)cls;
    (void)toe;
    if (!st)
        return;
    if (st->begun) {
        report(st, st->status, NULL, 0);
    } else {
        /* libmicrohttpd refused the request line or headers on its own
         * (answered, or closed without an answer): counted with its status
         * when it sent one. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        if (ci && ci->http_status)
            report(st, (int)ci->http_status, NULL, 0);
    }
    if (st->watch)
        atomic_store(&st->watch->out_len, 0);
    http_arm(st->watch); /* the wait for the next request on this connection */
    st->watch = NULL;    /* gone with the connection; a streaming handler may go on */
    *con_cls = NULL;
    http_request_release(st);
}

/* ---- Lifecycle ---- */

static int bind_address(const http_settings *hs, struct sockaddr_storage *ss, int *ipv6, char *err,
                        size_t errlen)
{
    struct addrinfo hints = {0}, *ai = NULL;
    char port[8];
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(port, sizeof(port), "%d", hs->port);
    int rc = getaddrinfo(hs->host, port, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(err, errlen, "listen: cannot resolve '%s': %s", hs->host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *ipv6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return 0;
}

/* libmicrohttpd's own threads: they move bytes and answer the inline
 * routes; handlers run on two pools of hs->threads threads each
 * (http_pool.c). Two, so that one can collect a large body while the other
 * answers a probe. */
#define IO_THREADS 2

http_server *http_server_start(const http_settings *hs, const http_handlers *h, char *err,
                               size_t errlen)
{
    struct sockaddr_storage ss;
    int ipv6 = 0;
    if (bind_address(hs, &ss, &ipv6, err, errlen) != 0)
        return NULL;

    http_server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->h = *h;
    s->max_body = hs->max_body_bytes;
    s->budget = hs->max_inflight_bytes;
    s->client_budget = hs->max_client_inflight_bytes;
    s->request_timeout_ms = (int64_t)hs->connection_timeout_s * 1000;
    s->max_connections = hs->max_connections;
    if (http_watchdog_start(s) != 0) {
        snprintf(err, errlen, "cannot start the connection watchdog thread");
        free(s);
        return NULL;
    }
    if (http_pool_start(s, hs) != 0) {
        snprintf(err, errlen, "cannot start %d handler threads",
                 2 * hs->threads + hs->upstream_threads);
        goto fail;
    }
    unsigned flags = COMPACTD_MHD_FLAGS | MHD_ALLOW_SUSPEND_RESUME | (ipv6 ? MHD_USE_IPv6 : 0);
    s->daemon = MHD_start_daemon(
        flags, 0, http_on_accept, s, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)IO_THREADS, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(hs->max_connections + IO_THREADS), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)hs->connection_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_UNESCAPE_CALLBACK, http_unescape, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, s, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use or not available)", hs->listen);
        goto fail;
    }

    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
        s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return s;
fail:
    http_pool_stop(s, 1);
    http_pool_destroy(s);
    http_watchdog_stop(s);
    free(s);
    return NULL;
}

int http_server_idle(const http_server *s)
{
    http_server *m = (http_server *)s; /* atomics are read, never written */
    return atomic_load(&m->open) == 0 && atomic_load(&m->in_flight) == 0 &&
           atomic_load(&m->buffered) == 0;
}

int http_server_port(const http_server *s)
{
    return s->port;
}

void http_server_stop(http_server *s, int drain_ms)
{
    atomic_store(&s->stopping, 1);
    MHD_socket listen_fd = MHD_quiesce_daemon(s->daemon);
    /* MHD wants the socket open until it stops, but a quiesced socket that
     * is still listening lets the kernel complete handshakes nobody will
     * serve. Shut down, it refuses new connections at once. */
    if (listen_fd != MHD_INVALID_SOCKET)
        shutdown(listen_fd, SHUT_RDWR);
    int64_t deadline = ticker_now_ms() + drain_ms;
    struct timespec pause = {0, 10 * 1000 * 1000};
    while (atomic_load(&s->in_flight) > 0 && ticker_now_ms() < deadline)
        nanosleep(&pause, NULL);
    atomic_store(&s->stopping, 2); /* streams and upstream waits give up */
    /* Handlers still running finish (bounded by the Redis timeouts); what
     * is still queued is answered 503. No connection stays suspended,
     * which libmicrohttpd requires of a daemon it stops. */
    http_pool_stop(s, 2);
    MHD_stop_daemon(s->daemon);
    http_pool_destroy(s);
    http_watchdog_stop(s);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
    free(s);
}
