/* libmicrohttpd glue: per-request state, body collection under the size
 * limit, the one place responses are written, and graceful shutdown. */
#include "http_server.h"

#include "json_encode.h"
#include "mhd_compat.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One connection as the watchdog sees it (see "Slow clients" below). */
typedef struct conn_watch {
    MHD_socket fd;
    atomic_int_fast64_t since_ms; /* when the wait for the current request began */
    atomic_int receiving;         /* 1 until the current request is fully received */
    int cut;
    struct conn_watch *prev, *next;
} conn_watch;

struct http_server {
    struct MHD_Daemon *daemon;
    http_handlers h;
    size_t max_body;
    int port;
    atomic_int in_flight;
    atomic_int stopping;
    atomic_int open; /* connections between MHD's STARTED and CLOSED */
    int max_connections;

    int64_t request_timeout_ms;
    pthread_mutex_t watch_lock; /* guards the list, cut and watch_stop */
    pthread_cond_t watch_wake;
    conn_watch *watched;
    int watch_stop;
    pthread_t watchdog;
};

/* One request's state, created on its first callback and freed in the
 * completion callback, which also runs when the client goes away. */
typedef struct {
    api_request req; /* first: api_release_body() finds the state from it */
    char *body;
    size_t len, cap;
    int too_large;
    int status;   /* 0 until a response is queued */
    int reported; /* handed to h.completed already */
    struct timespec start;
    http_server *server;
    conn_watch *watch; /* NULL when the connection could not be watched */
} request_state;

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The socket context of a connection that is counted but not watched (out
 * of memory): MHD's idle timeout still applies to it. */
static char unwatched;

static conn_watch *watch_of(void *socket_context)
{
    return socket_context == &unwatched ? NULL : socket_context;
}

const char *api_query(const api_request *req, const char *name)
{
    if (req->inner) {
        for (const char *const *q = req->inner_query; q && q[0]; q += 2)
            if (strcmp(q[0], name) == 0)
                return q[1];
        return NULL;
    }
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *api_header(const api_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

void api_release_body(api_request *req)
{
    if (req->inner) { /* the body is the outer request's */
        req->body = NULL;
        req->body_len = 0;
        return;
    }
    request_state *st = (request_state *)req;
    free(st->body);
    st->body = NULL;
    st->len = st->cap = 0;
    req->body = NULL;
    req->body_len = 0;
}

/* Reports a request to the metrics and the log once: when its response is
 * queued, so that a client that has its answer also finds it counted, or
 * when it ends unanswered. */
static void report(request_state *st, int status)
{
    if (st->reported)
        return;
    st->reported = 1;
    http_server *s = st->server;
    s->h.completed(&st->req, status, seconds_since(&st->start), s->h.cls);
}

/* ---- Responses ---- */

/* The only writer of responses. Takes ownership of res->body. */
static MHD_Result_t send_response(struct MHD_Connection *conn, request_state *st, api_response *res)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(res->len, res->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(res->body); /* still ours when creation fails */
        return MHD_NO;
    }
    res->body = NULL;
    if (res->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
    if (res->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, res->allow);
    if (res->www_authenticate)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, res->www_authenticate);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (atomic_load(&st->server->stopping))
        /* Shutting down: no further request on this connection. */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    MHD_Result_t ok = MHD_queue_response(conn, (unsigned)res->status, r);
    MHD_destroy_response(r);
    if (ok == MHD_YES) {
        st->status = res->status;
        report(st, res->status);
        if (st->watch) /* answered (maybe early): the watchdog's part is done */
            atomic_store(&st->watch->receiving, 0);
    }
    return ok;
}

static MHD_Result_t send_error(struct MHD_Connection *conn, request_state *st, error_kind kind,
                               const char *message)
{
    compactd_error err = {kind, "", ""};
    snprintf(err.message, sizeof(err.message), "%s", message);
    api_response res = {error_status(kind), NULL, 0, "application/json", NULL, NULL};
    res.body = json_encode_error(&err, &res.len);
    if (!res.body)
        return MHD_NO;
    return send_response(conn, st, &res);
}

/* ---- Requests ---- */

/* Content-Length, when given, decides an oversized body before any of it is
 * read. Returns 1 when it is over the limit. */
static int declared_too_large(struct MHD_Connection *conn, size_t max)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return 0;
    char *end;
    unsigned long long v = strtoull(cl, &end, 10);
    return *end == '\0' && v > max;
}

/* Appends a chunk, or drops the body for good once it passes the limit so
 * that no more than the limit is ever held. */
static void collect(request_state *st, const char *data, size_t size, size_t max)
{
    if (st->too_large)
        return;
    if (size > max - st->len) {
        st->too_large = 1;
        free(st->body);
        st->body = NULL;
        st->len = st->cap = 0;
        return;
    }
    if (st->len + size + 1 > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + size + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        char *p = realloc(st->body, cap);
        if (!p) {
            st->too_large = 1; /* answered as 413: the body could not be held */
            free(st->body);
            st->body = NULL;
            st->len = st->cap = 0;
            return;
        }
        st->body = p;
        st->cap = cap;
    }
    memcpy(st->body + st->len, data, size);
    st->len += size;
}

static request_state *request_begin(http_server *s, struct MHD_Connection *conn, const char *url,
                                    const char *method)
{
    request_state *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &st->start);
    st->server = s;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    st->watch = ci ? watch_of(ci->socket_context) : NULL;
    st->req.method = method;
    st->req.path = url;
    st->req.conn = conn;
    st->req.facts.route = -1;
    st->req.facts.route_name = "unmatched";
    atomic_fetch_add(&s->in_flight, 1);

    /* Size the buffer once when the length is known: no realloc chain. */
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
    if (want > 0 && want <= s->max_body) {
        st->body = malloc((size_t)want + 1);
        st->cap = st->body ? (size_t)want + 1 : 0;
    }
    return st;
}

static MHD_Result_t on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_size, void **con_cls)
{
    http_server *s = cls;
    request_state *st = *con_cls;
    (void)version;

    if (!st) {
        st = request_begin(s, conn, url, method);
        if (!st)
            return MHD_NO;
        *con_cls = st;
        if (declared_too_large(conn, s->max_body)) {
            st->too_large = 1;
            return send_error(conn, st, ERR_PAYLOAD_TOO_LARGE,
                              "request body is larger than the configured limit "
                              "(COMPACTD_MAX_BODY_BYTES)");
        }
        return MHD_YES;
    }
    if (*upload_size) {
        collect(st, upload_data, *upload_size, s->max_body);
        *upload_size = 0;
        return MHD_YES;
    }
    /* The whole request is in: the watchdog's deadline is met, however long
     * the handler then waits on Redis. */
    if (st->watch)
        atomic_store(&st->watch->receiving, 0);
    if (st->status)
        return MHD_YES; /* answered already (an early 413) */
    if (st->too_large)
        return send_error(conn, st, ERR_PAYLOAD_TOO_LARGE,
                          "request body is larger than the configured limit "
                          "(COMPACTD_MAX_BODY_BYTES)");

    if (st->body)
        st->body[st->len] = '\0';
    st->req.body = st->body;
    st->req.body_len = st->len;
    api_response res = {500, NULL, 0, "application/json", NULL, NULL};
    s->h.dispatch(&st->req, &res, s->h.cls);
    if (!res.body) { /* 204, or a handler out of memory */
        res.body = malloc(1);
        res.len = 0;
        if (!res.body)
            return MHD_NO;
    }
    return send_response(conn, st, &res);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    request_state *st = *con_cls;
    (void)conn;
    (void)toe;
    if (!st)
        return;
    report(st, st->status);
    if (st->watch) { /* the wait for the next request on this connection */
        atomic_store(&st->watch->since_ms, now_ms());
        atomic_store(&st->watch->receiving, 1);
    }
    free(st->body);
    free(st);
    *con_cls = NULL;
    atomic_fetch_sub(&s->in_flight, 1);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Strict percent-decoding for paths and query values: "%XX" only; '+' is
 * itself, since keys may hold it. "%00" stays as it is: a NUL would cut the
 * string short, so that DELETE /v1/sessions/s%00/x would act on session s.
 * Kept encoded it fails the session syntax, and no key can hold a NUL. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    char *o = s;
    (void)cls;
    (void)conn;
    for (const char *p = s; *p; p++) {
        int hi, lo;
        if (p[0] == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0 && (hi | lo) != 0) {
            *o++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return (size_t)(o - s);
}

/* ---- Slow clients ---- */

/* libmicrohttpd's connection timeout counts from the last byte received, so a
 * client that sends a byte a second holds a connection for ever (slowloris,
 * and its slow-body variant). The watchdog holds every request to a deadline
 * instead: headers and body must have arrived within the connection timeout
 * of the end of the previous request on that connection (or of its accept).
 * A late connection is cut with shutdown(2), which MHD then sees as a client
 * gone; the descriptor stays MHD's to close, and the entry leaves the list
 * (under the lock) before MHD closes it. */

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http_server *s = cls;
    conn_watch *w;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->open, 1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        w = ci ? calloc(1, sizeof(*w)) : NULL;
        if (!w) {
            *socket_context = &unwatched;
            return;
        }
        w->fd = ci->connect_fd;
        atomic_store(&w->since_ms, now_ms());
        atomic_store(&w->receiving, 1);
        pthread_mutex_lock(&s->watch_lock);
        w->next = s->watched;
        if (s->watched)
            s->watched->prev = w;
        s->watched = w;
        pthread_mutex_unlock(&s->watch_lock);
        *socket_context = w;
        return;
    }
    if (!*socket_context)
        return; /* never started */
    atomic_fetch_sub(&s->open, 1);
    w = watch_of(*socket_context);
    *socket_context = NULL;
    if (!w)
        return;
    pthread_mutex_lock(&s->watch_lock);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->watched = w->next;
    if (w->next)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&s->watch_lock);
    free(w);
}

#define WATCH_TICK_MS 200

static void *watchdog(void *arg)
{
    http_server *s = arg;
    pthread_mutex_lock(&s->watch_lock);
    while (!s->watch_stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_wake, &s->watch_lock, &until);
        int64_t now = now_ms();
        for (conn_watch *w = s->watched; w; w = w->next)
            if (!w->cut && atomic_load(&w->receiving) &&
                now - atomic_load(&w->since_ms) > s->request_timeout_ms) {
                shutdown(w->fd, SHUT_RDWR);
                w->cut = 1;
            }
    }
    pthread_mutex_unlock(&s->watch_lock);
    return NULL;
}

static int watchdog_start(http_server *s)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&s->watch_wake, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -1;
    if (pthread_mutex_init(&s->watch_lock, NULL) != 0) {
        pthread_cond_destroy(&s->watch_wake);
        return -1;
    }
    if (pthread_create(&s->watchdog, NULL, watchdog, s) != 0) {
        pthread_mutex_destroy(&s->watch_lock);
        pthread_cond_destroy(&s->watch_wake);
        return -1;
    }
    return 0;
}

static void watchdog_stop(http_server *s)
{
    pthread_mutex_lock(&s->watch_lock);
    s->watch_stop = 1;
    pthread_cond_signal(&s->watch_wake);
    pthread_mutex_unlock(&s->watch_lock);
    pthread_join(s->watchdog, NULL);
    pthread_mutex_destroy(&s->watch_lock);
    pthread_cond_destroy(&s->watch_wake);
}

/* ---- Connection limit ---- */

/* MHD's own limit is split evenly over the worker threads and, once a
 * worker reaches its share, that worker stops accepting: connections then
 * wait unserved in the kernel's queue. Counted here over all workers, a
 * connection past the limit is closed at once instead, so a client knows.
 * MHD's limit is set one per thread above this one, so that some worker is
 * always still accepting. Workers accepting at the same moment can pass the
 * check together: the count may pass the limit by fewer than the number of
 * threads, briefly. */
static MHD_Result_t on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    http_server *s = cls;
    (void)addr;
    (void)addrlen;
    return atomic_load(&s->open) < s->max_connections ? MHD_YES : MHD_NO;
}

/* ---- Lifecycle ---- */

static int bind_address(const config *cfg, struct sockaddr_storage *ss, int *ipv6, char *err,
                        size_t errlen)
{
    struct addrinfo hints = {0}, *ai = NULL;
    char port[8];
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(port, sizeof(port), "%d", cfg->listen_port);
    int rc = getaddrinfo(cfg->listen_host, port, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(err, errlen, "listen: cannot resolve '%s': %s", cfg->listen_host,
                 gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *ipv6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return 0;
}

http_server *http_server_start(const config *cfg, const http_handlers *h, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    int ipv6 = 0;
    if (bind_address(cfg, &ss, &ipv6, err, errlen) != 0)
        return NULL;

    http_server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->h = *h;
    s->max_body = cfg->max_body_bytes;
    s->request_timeout_ms = (int64_t)cfg->connection_timeout_s * 1000;
    s->max_connections = cfg->max_connections;
    if (watchdog_start(s) != 0) {
        snprintf(err, errlen, "cannot start the connection watchdog thread");
        free(s);
        return NULL;
    }
    unsigned flags = COMPACTD_MHD_FLAGS | (ipv6 ? MHD_USE_IPv6 : 0);
    s->daemon = MHD_start_daemon(
        flags, 0, on_accept, s, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(cfg->max_connections + cfg->threads), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->connection_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use or not available)", cfg->listen);
        watchdog_stop(s);
        free(s);
        return NULL;
    }

    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
        s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return s;
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
    int64_t deadline = now_ms() + drain_ms;
    struct timespec pause = {0, 10 * 1000 * 1000};
    while (atomic_load(&s->in_flight) > 0 && now_ms() < deadline)
        nanosleep(&pause, NULL);
    MHD_stop_daemon(s->daemon);
    watchdog_stop(s);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
    free(s);
}
