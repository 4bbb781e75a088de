/* libmicrohttpd glue: per-request state, refusal of ambiguously framed
 * requests, body collection under the size limit and the memory budget, the
 * handler pool, the one place responses are written, and graceful shutdown. */
#include "http_server.h"

#include "json_encode.h"
#include "mhd_compat.h"
#include "mono_clock.h"
#include "ticker.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One connection as the watchdog sees it (see "Slow clients" below). */
typedef struct conn_watch {
    MHD_socket fd;
    atomic_int_fast64_t since_ms; /* when the current deadline began */
    atomic_int armed;             /* 1 while a request arrives or its response leaves */
    int cut;
    struct conn_watch *prev, *next;
} conn_watch;

typedef struct request_state request_state;

struct http_server {
    struct MHD_Daemon *daemon;
    http_handlers h;
    size_t max_body;
    int port;
    atomic_int in_flight;
    atomic_int stopping;
    atomic_int open; /* connections between MHD's STARTED and CLOSED */
    int max_connections;

    size_t budget;          /* bytes that bodies and responses in flight may hold */
    atomic_size_t buffered; /* bytes they hold now */

    int64_t request_timeout_ms;
    pthread_mutex_t watch_lock; /* guards the list, cut and watch_stop */
    pthread_cond_t watch_wake;
    conn_watch *watched;
    int watch_stop;
    pthread_t watchdog;

    /* The handler pool (see "Handler pool" below). */
    pthread_mutex_t pool_lock; /* guards the queue and pool_stop */
    pthread_cond_t pool_wake;
    request_state *queue_head, *queue_tail;
    int pool_stop; /* 1: finish the queue and exit; 2: answer the queue 503 and exit */
    int pool_size;
    pthread_t *pool;
};

/* One request's state, created when libmicrohttpd has read the request line
 * (the URI log callback) and freed in the completion callback, which also
 * runs when the client goes away. */
struct request_state {
    api_request req; /* first: api_release_body() finds the state from it */
    char *body;
    size_t len, cap; /* cap bytes of the budget are held for the body */
    int too_large;
    int overloaded;         /* the budget could not hold the body */
    int begun;              /* the access handler has seen the headers */
    int bad_target;         /* a control byte in the raw request target */
    const char *target;     /* the raw target, as libmicrohttpd read it */
    const char *target_end; /* where the raw target's first NUL was */
    int status;             /* 0 until a response is queued */
    int reported;           /* handed to h.completed already */
    int close;              /* answer with Connection: close */
    int retry_after;        /* seconds for a Retry-After header; 0: none */
    atomic_int answered;    /* the pool has filled res */
    api_response res;       /* the pool's answer, sent when the connection resumes */
    request_state *next_job;
    int64_t start_us; /* mono_clock_us() when the request began */
    http_server *server;
    conn_watch *watch; /* NULL when the connection could not be watched */
};

static double seconds_since(int64_t t0_us)
{
    return (double)(mono_clock_us() - t0_us) / 1e6;
}

/* The socket context of a connection that is counted but not watched (out
 * of memory): MHD's idle timeout still applies to it. */
static char unwatched;

static conn_watch *watch_of(void *socket_context)
{
    return socket_context == &unwatched ? NULL : socket_context;
}

/* Starts the connection's deadline over: the next request, or the response
 * just queued, must be through within the connection timeout. */
static void arm(conn_watch *w)
{
    if (!w)
        return;
    atomic_store(&w->since_ms, ticker_now_ms());
    atomic_store(&w->armed, 1);
}

const char *api_query(const api_request *req, const char *name)
{
    const char *value = NULL;
    size_t len;
    /* A bare "?name" is present with an empty value, never absent. */
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &value,
                                      &len) != MHD_YES)
        return NULL;
    return value ? value : "";
}

const char *api_header(const api_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

typedef struct {
    const char *name;
    size_t n;
} header_count;

static MHD_Result_t count_named(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    header_count *c = cls;
    (void)kind;
    (void)value;
    if (strcasecmp(key, c->name) == 0)
        c->n++;
    return MHD_YES;
}

size_t api_header_count(const api_request *req, const char *name)
{
    header_count c = {name, 0};
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, count_named, &c);
    return c.n;
}

/* ---- Memory budget ---- */

/* Every body buffer and every response body counts against one budget, so
 * that many connections cannot together hold more than it: a body is held
 * only as its bytes arrive, and past the budget the request is answered 503
 * with Retry-After instead of being held. */

static int budget_take(http_server *s, size_t n)
{
    size_t cur = atomic_load(&s->buffered);
    do {
        if (n > s->budget || cur > s->budget - n)
            return -1;
    } while (!atomic_compare_exchange_weak(&s->buffered, &cur, cur + n));
    return 0;
}

static void budget_release(http_server *s, size_t n)
{
    atomic_fetch_sub(&s->buffered, n);
}

size_t http_server_buffered_bytes(const void *s)
{
    return atomic_load(&((http_server *)s)->buffered);
}

static void body_free(request_state *st)
{
    free(st->body);
    budget_release(st->server, st->cap);
    st->body = NULL;
    st->len = st->cap = 0;
    st->req.body = NULL;
    st->req.body_len = 0;
}

void api_release_body(api_request *req)
{
    body_free((request_state *)req);
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
    s->h.completed(&st->req, status, seconds_since(st->start_us), s->h.cls);
}

/* ---- Responses ---- */

/* A response body and the budget it holds, released when libmicrohttpd is
 * done with the response (sent, or the client gone). */
typedef struct {
    http_server *s;
    char *body;
    size_t len;
} held_body;

static void held_body_free(void *cls)
{
    held_body *h = cls;
    budget_release(h->s, h->len);
    free(h->body);
    free(h);
}

/* The only writer of responses. Takes ownership of res->body. */
static MHD_Result_t send_response(struct MHD_Connection *conn, request_state *st, api_response *res)
{
    http_server *s = st->server;
    held_body *h = malloc(sizeof(*h));
    if (!h) {
        free(res->body);
        res->body = NULL;
        return MHD_NO;
    }
    *h = (held_body){s, res->body, res->len};
    res->body = NULL;
    /* Counted whatever the budget says: the bytes exist already. */
    atomic_fetch_add(&s->buffered, h->len);
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback_cls(h->len, h->body, held_body_free, h);
    if (!r) {
        held_body_free(h); /* still ours when creation fails */
        return MHD_NO;
    }
    if (res->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
    if (res->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, res->allow);
    if (res->www_authenticate)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, res->www_authenticate);
    for (const char *const *hd = res->headers; hd && hd[0]; hd += 2)
        MHD_add_response_header(r, hd[0], hd[1]);
    if (st->retry_after) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", st->retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (st->close || atomic_load(&s->stopping))
        /* A request that could not be framed, or shutting down: no further
         * request is read on this connection. */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    MHD_Result_t ok = MHD_queue_response(conn, (unsigned)res->status, r);
    MHD_destroy_response(r);
    if (ok == MHD_YES) {
        st->status = res->status;
        report(st, res->status);
        arm(st->watch); /* the response must leave within the deadline too */
    }
    return ok;
}

static MHD_Result_t send_error(struct MHD_Connection *conn, request_state *st, error_kind kind,
                               const char *message)
{
    compactd_error err = {kind, "", ""};
    snprintf(err.message, sizeof(err.message), "%s", message);
    api_response res = {.status = error_status(kind), .content_type = "application/json"};
    res.body = json_encode_error(&err, &res.len);
    if (!res.body)
        return MHD_NO;
    return send_response(conn, st, &res);
}

static MHD_Result_t send_overloaded(struct MHD_Connection *conn, request_state *st)
{
    st->retry_after = 1;
    return send_error(conn, st, ERR_OVERLOADED,
                      "the server holds as many request and response bytes as it may "
                      "(COMPACTD_MAX_INFLIGHT_BYTES); retry shortly");
}

/* ---- Framing ---- */

/* A request is refused, never guessed at, when a proxy in front of compactd
 * could read its framing differently: libmicrohttpd takes the first of two
 * Content-Lengths, prefers Transfer-Encoding over Content-Length, keeps a
 * space before a colon in the header's name (so "Content-Length : 5" frames
 * no body), appends an obs-fold line (one starting with a blank) to the
 * header's name rather than its value (so "Content-Length: 5\r\n 9" is a
 * header "Content-Length9" to it and "Content-Length: 5 9" to a proxy), and
 * keeps a bare CR inside a value (where a proxy may end the line), and cuts
 * the target at a raw NUL. Each of these let a body carry a second request.
 * The answer closes the connection, so that what follows the headers is
 * never read as a request. */

typedef struct {
    int content_lengths, transfer_encodings, bad_coding, bad_name, bad_token, bad_value, folded;
} framing;

/* RFC 9110's tchar: what a header name may hold. */
static int is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A value may hold visible bytes, SP, HTAB and obs-text; no other control. */
static int value_is_clean(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return 0;
    return 1;
}

/* libmicrohttpd 0.9.75 splits a line in place: a header's name, the NUL
 * that replaced its colon, optional blanks, the value (and so the method,
 * the NUL over the space, the target). A folded header's name is a copy
 * made elsewhere, so its value does not follow it. */
static int parsed_in_place(const char *key, const char *value)
{
    uintptr_t p = (uintptr_t)(key + strlen(key)) + 1, v = (uintptr_t)value;
    if (v < p)
        return 0;
    for (; p < v; p++)
        if (*(const char *)p != ' ' && *(const char *)p != '\t')
            return 0;
    return 1;
}

static MHD_Result_t note_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    framing *f = cls;
    (void)kind;
    if (key[0] == '\0' || strpbrk(key, " \t"))
        f->bad_name = 1;
    for (const char *p = key; *p; p++)
        if (!is_tchar((unsigned char)*p))
            f->bad_token = 1;
    if (value && !value_is_clean(value))
        f->bad_value = 1;
    if (value && !parsed_in_place(key, value))
        f->folded = 1;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->content_lengths++;
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->transfer_encodings++;
        if (strcasecmp(value, "chunked") != 0)
            f->bad_coding = 1;
    }
    return MHD_YES;
}

/* Returns NULL when the request is framed unambiguously, else why not. */
static const char *framing_fault(struct MHD_Connection *conn, const request_state *st,
                                 const char *method, const char *version)
{
    if (st->bad_target)
        return "the request target holds a control character";
    /* The method ends where libmicrohttpd wrote a NUL over the space before
     * the target: a method cut short by the client's NUL does not. */
    const char *m = method;
    while (*m && is_tchar((unsigned char)*m))
        m++;
    if (m == method || *m || !parsed_in_place(method, st->target))
        return "the request method is not a token";
    /* libmicrohttpd 0.9.75 ends the raw target with a NUL written just
     * before the version, in the same buffer: a NUL found earlier was the
     * client's, and the target was cut short there. */
    if (version && (uintptr_t)st->target_end + 1 != (uintptr_t)version)
        return "the request target holds a NUL byte";
    framing f = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, note_header, &f);
    if (f.folded)
        return "a header line starts with a blank (obs-fold is not accepted)";
    if (f.bad_name)
        return "a header name holds whitespace (none is allowed before the colon)";
    if (f.bad_token)
        return "a header name holds a byte other than a token character";
    if (f.bad_value)
        return "a header value holds a control byte other than tab (a bare CR, for one)";
    if (f.content_lengths > 1)
        return "more than one Content-Length header";
    if (f.transfer_encodings && f.content_lengths)
        return "Content-Length and Transfer-Encoding together";
    if (f.transfer_encodings > 1 || f.bad_coding)
        return "Transfer-Encoding other than a single \"chunked\"";
    return NULL;
}

/* The raw request target, as libmicrohttpd read it (before any decoding):
 * the request's state starts here, so that the access handler can tell
 * whether the client's target held a NUL or another control byte. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    http_server *s = cls;
    request_state *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->start_us = mono_clock_us();
    st->server = s;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    st->watch = ci ? watch_of(ci->socket_context) : NULL;
    const char *p = uri;
    for (; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            st->bad_target = 1;
    st->target = uri;
    st->target_end = p;
    st->req.facts.route = -1;
    st->req.facts.route_name = "unmatched";
    st->req.method = "";
    st->req.path = "";
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
        body_free(st);
        return;
    }
    if (st->len + size + 1 > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + size + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        if (budget_take(st->server, cap - st->cap) != 0) {
            st->overloaded = 1;
            body_free(st);
            return;
        }
        char *p = realloc(st->body, cap);
        if (!p) {
            budget_release(st->server, cap - st->cap);
            st->overloaded = 1; /* the body could not be held: answered 503 */
            body_free(st);
            return;
        }
        st->body = p;
        st->cap = cap;
    }
    memcpy(st->body + st->len, data, size);
    st->len += size;
}

static void enqueue(http_server *s, request_state *st);

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
        const char *fault = framing_fault(conn, st, method, version);
        if (fault) {
            st->close = 1;
            return send_error(conn, st, ERR_INVALID_REQUEST, fault);
        }
        unsigned long long declared = declared_length(conn);
        if (declared > s->max_body) {
            st->too_large = 1;
            return send_error(conn, st, ERR_PAYLOAD_TOO_LARGE,
                              "request body is larger than the configured limit "
                              "(COMPACTD_MAX_BODY_BYTES)");
        }
        /* Nothing is held yet; a body that cannot fit in what is left of the
         * budget now is refused before the client sends it, and past the
         * budget (responses count whatever it says) so is any request that
         * would make another response, except the operator's probes. */
        size_t held = atomic_load(&s->buffered);
        if ((held > s->budget || declared > s->budget - held) &&
            !s->h.runs_inline(&st->req, s->h.cls)) {
            st->overloaded = 1;
            return send_overloaded(conn, st);
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
        return send_error(conn, st, ERR_PAYLOAD_TOO_LARGE,
                          "request body is larger than the configured limit "
                          "(COMPACTD_MAX_BODY_BYTES)");
    if (st->overloaded)
        return send_overloaded(conn, st);

    if (st->body)
        st->body[st->len] = '\0';
    st->req.body = st->body;
    st->req.body_len = st->len;
    if (s->h.runs_inline(&st->req, s->h.cls)) {
        api_response res = {.status = 500, .content_type = "application/json"};
        s->h.dispatch(&st->req, &res, s->h.cls);
        if (!res.body) { /* 204, or a handler out of memory */
            res.body = malloc(1);
            res.len = 0;
            if (!res.body)
                return MHD_NO;
        }
        return send_response(conn, st, &res);
    }
    MHD_suspend_connection(conn);
    enqueue(s, st);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    request_state *st = *con_cls;
    (void)toe;
    if (!st)
        return;
    if (st->begun) {
        report(st, st->status);
    } else {
        /* libmicrohttpd refused the request line or headers on its own
         * (answered, or closed without an answer): counted with its status
         * when it sent one. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        if (ci && ci->http_status)
            report(st, (int)ci->http_status);
    }
    arm(st->watch); /* the wait for the next request on this connection */
    body_free(st);
    free(st->res.body); /* an answer never sent */
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

/* ---- Handler pool ---- */

/* libmicrohttpd's threads only move bytes and answer the routes that need
 * neither Redis nor a body (liveness, readiness from its cache, metrics,
 * the spec): every other request's connection is suspended and its handler
 * runs on one of these threads, which resume the connection with the
 * answer. A liveness probe then never waits behind a long /verify or a
 * stalled Redis. */

static void answer_unrun(api_response *res, const char *why)
{
    compactd_error err = {ERR_OVERLOADED, "", ""};
    snprintf(err.message, sizeof(err.message), "%s", why);
    res->status = error_status(err.kind);
    res->body = json_encode_error(&err, &res->len);
    res->content_type = "application/json";
}

/* Finishes a job: the answer goes back with the connection's resumption. */
static void job_done(request_state *st, api_response *res)
{
    if (!res->body) { /* 204, or out of memory */
        res->body = malloc(1);
        res->len = 0;
        if (!res->body)
            res->status = 500;
    }
    st->res = *res;
    atomic_store(&st->answered, 1);
    MHD_resume_connection(st->req.conn);
}

/* Hands a suspended connection's request to the pool; once the pool has
 * stopped (shutting down) it is answered 503 at once instead. */
static void enqueue(http_server *s, request_state *st)
{
    pthread_mutex_lock(&s->pool_lock);
    if (s->pool_stop) {
        pthread_mutex_unlock(&s->pool_lock);
        api_response res = {.status = 503, .content_type = "application/json"};
        answer_unrun(&res, "shutting down: the request was not run");
        job_done(st, &res);
        return;
    }
    st->next_job = NULL;
    if (s->queue_tail)
        s->queue_tail->next_job = st;
    else
        s->queue_head = st;
    s->queue_tail = st;
    pthread_cond_signal(&s->pool_wake);
    pthread_mutex_unlock(&s->pool_lock);
}

static void *pool_worker(void *arg)
{
    http_server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->pool_lock);
        while (!s->queue_head && !s->pool_stop)
            pthread_cond_wait(&s->pool_wake, &s->pool_lock);
        request_state *st = s->queue_head;
        int give_up = s->pool_stop == 2;
        if (st) {
            s->queue_head = st->next_job;
            if (!s->queue_head)
                s->queue_tail = NULL;
        }
        pthread_mutex_unlock(&s->pool_lock);
        if (!st)
            return NULL; /* stopping and nothing left */

        api_response res = {.status = 500, .content_type = "application/json"};
        if (give_up)
            answer_unrun(&res, "shutting down: the request was not run");
        else
            s->h.dispatch(&st->req, &res, s->h.cls);
        job_done(st, &res);
    }
}

static int pool_start(http_server *s, int n)
{
    /* Static initializers cannot fail, so pool_stop() may always run. */
    s->pool_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    s->pool_wake = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    s->pool = calloc((size_t)n, sizeof(*s->pool));
    for (s->pool_size = 0; s->pool && s->pool_size < n; s->pool_size++)
        if (pthread_create(&s->pool[s->pool_size], NULL, pool_worker, s) != 0)
            break;
    return s->pool_size == n ? 0 : -1;
}

/* how 1: run what is queued, 2: answer it 503 unrun. The lock stays for
 * requests that arrive until the daemon stops: they are answered 503. */
static void pool_stop(http_server *s, int how)
{
    pthread_mutex_lock(&s->pool_lock);
    s->pool_stop = how;
    pthread_cond_broadcast(&s->pool_wake);
    pthread_mutex_unlock(&s->pool_lock);
    for (int i = 0; i < s->pool_size; i++)
        pthread_join(s->pool[i], NULL);
    free(s->pool);
    s->pool = NULL;
    s->pool_size = 0;
}

static void pool_destroy(http_server *s)
{
    pthread_mutex_destroy(&s->pool_lock);
    pthread_cond_destroy(&s->pool_wake);
}

/* ---- Slow clients ---- */

/* libmicrohttpd's connection timeout counts from the last byte received, so a
 * client that sends a byte a second holds a connection for ever (slowloris,
 * and its slow-body variant), and one that reads a byte a second holds a
 * large response as long. The watchdog holds every request to a deadline
 * instead: headers and body must have arrived within the connection timeout
 * of the end of the previous request on that connection (or of its accept),
 * and a response must have been taken in full within the connection timeout
 * of being queued. A late connection is cut with shutdown(2), which MHD then sees as a client
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
        arm(w);
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
        ticker_wait(&s->watch_wake, &s->watch_lock, WATCH_TICK_MS);
        int64_t now = ticker_now_ms();
        for (conn_watch *w = s->watched; w; w = w->next)
            if (!w->cut && atomic_load(&w->armed) &&
                now - atomic_load(&w->since_ms) > s->request_timeout_ms) {
                /* What is queued for a slow reader is dropped, not
                 * delivered at its pace: MHD's close then resets. */
                struct linger drop = {1, 0};
                setsockopt(w->fd, SOL_SOCKET, SO_LINGER, &drop, sizeof(drop));
                shutdown(w->fd, SHUT_RDWR);
                w->cut = 1;
            }
    }
    pthread_mutex_unlock(&s->watch_lock);
    return NULL;
}

static int watchdog_start(http_server *s)
{
    if (ticker_cond_init(&s->watch_wake) != 0)
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

/* libmicrohttpd's own threads: they move bytes and answer the inline
 * routes; handlers run on cfg->threads pool threads. Two, so that one can
 * collect a large body while the other answers a probe. */
#define IO_THREADS 2

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
    s->budget = cfg->max_inflight_bytes;
    s->request_timeout_ms = (int64_t)cfg->connection_timeout_s * 1000;
    s->max_connections = cfg->max_connections;
    if (watchdog_start(s) != 0) {
        snprintf(err, errlen, "cannot start the connection watchdog thread");
        free(s);
        return NULL;
    }
    if (pool_start(s, cfg->threads) != 0) {
        snprintf(err, errlen, "cannot start %d handler threads", cfg->threads);
        goto fail;
    }
    unsigned flags = COMPACTD_MHD_FLAGS | MHD_ALLOW_SUSPEND_RESUME | (ipv6 ? MHD_USE_IPv6 : 0);
    s->daemon = MHD_start_daemon(
        flags, 0, on_accept, s, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)IO_THREADS, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(cfg->max_connections + IO_THREADS), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->connection_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use or not available)", cfg->listen);
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
    pool_stop(s, 1);
    pool_destroy(s);
    watchdog_stop(s);
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
    /* Handlers still running finish (bounded by the Redis timeouts); what
     * is still queued is answered 503. No connection stays suspended,
     * which libmicrohttpd requires of a daemon it stops. */
    pool_stop(s, 2);
    MHD_stop_daemon(s->daemon);
    pool_destroy(s);
    watchdog_stop(s);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
    free(s);
}
