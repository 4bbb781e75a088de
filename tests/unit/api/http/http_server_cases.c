/* The transport in process (api/http/): started on port 0 with a handler
 * table of the test's own and talked to over loopback sockets. What it
 * hands the application (method, decoded path, raw target, query,
 * headers, body), the per-request slot made by begin() and freed by end()
 * exactly once, where each request runs (inline, the local, store and
 * upstream pools, work handed on from the local pool to the store pool,
 * a local request the application calls quick on the connection's own
 * thread, and work handed on from there),
 * the pools' independence, and the refusals it asks the application to
 * word (framing, a body too large, the memory budget, an answer too
 * large), with completed() seeing each request once. */
#include "check.h"
#include "http_server.h"
#include "unit/api/loopback.h"

#include "answer_account.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- The test's application ---- */

typedef enum { AT_INLINE, AT_LOCAL, AT_STORE, AT_UPSTREAM } where;

typedef struct {
    where at;
    int id;
    pthread_t began_on; /* the connection's thread */
} test_call;

static atomic_int begun, ended, completed_n, completed_unbegun, next_id;
static atomic_int refusals[HTTP_REFUSALS];
static atomic_int last_completed_status, negative_seconds;

/* The blocking route's gate: a handler holds its pool's one thread until
 * the test opens it. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

static where where_of(const char *path)
{
    if (strncmp(path, "/inline", 7) == 0)
        return AT_INLINE;
    if (strncmp(path, "/local", 6) == 0 || strncmp(path, "/handon", 7) == 0 ||
        strncmp(path, "/here", 5) == 0)
        return AT_LOCAL;
    if (strncmp(path, "/upstream", 9) == 0)
        return AT_UPSTREAM;
    return AT_STORE;
}

static int t_begin(api_request *req, void *cls)
{
    (void)cls;
    test_call *c = calloc(1, sizeof(*c));
    if (!c)
        return HTTP_BEGIN_FAILED;
    c->at = where_of(req->path);
    c->id = atomic_fetch_add(&next_id, 1);
    c->began_on = pthread_self();
    req->app = c;
    atomic_fetch_add(&begun, 1);
    return c->at == AT_INLINE ? HTTP_RUNS_INLINE : HTTP_RUNS_IN_POOL;
}

static http_pool_kind t_pool(const api_request *req, void *cls)
{
    const test_call *c = req->app;
    (void)cls;
    return c->at == AT_LOCAL      ? HTTP_POOL_LOCAL
           : c->at == AT_UPSTREAM ? HTTP_POOL_UPSTREAM
                                  : HTTP_POOL_STORE;
}

/* Quick, says the application: /here... (local), and /storehere, which
 * the store pool runs all the same (only the local pool's requests are
 * asked). */
static int t_here(const api_request *req, void *cls)
{
    (void)cls;
    return strncmp(req->path, "/here", 5) == 0 || strcmp(req->path, "/storehere") == 0;
}

static void answer_text(api_response *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void answer_text(api_response *res, int status, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    res->status = status;
    res->body = strdup(buf);
    res->len = (size_t)n;
    res->content_type = "text/plain";
}

static void resumed(void *job, api_response *res)
{
    api_request *req = job;
    answer_text(res, 200, "resumed local=%d", req->local);
}

static void dropped(void *job)
{
    (void)job;
}

static void t_dispatch(api_request *req, api_response *res, void *cls)
{
    (void)cls;
    if (strcmp(req->path, "/handon") == 0 || strcmp(req->path, "/here/handon") == 0) {
        if (api_hand_on(req, res, 1, resumed, dropped, req))
            return;
        answer_text(res, 500, "not handed on");
        return;
    }
    if (strcmp(req->path, "/store/block") == 0) {
        pthread_mutex_lock(&gate_lock);
        gate_entered = 1;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open)
            pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        answer_text(res, 200, "unblocked");
        return;
    }
    if (strcmp(req->path, "/store/big") == 0) {
        /* An answer past one client's share: its writer's take is refused. */
        answer_refusal why = answer_take(1u << 20);
        if (why != ANSWER_OK)
            answer_refuse(why);
        else
            answer_give(1u << 20);
        answer_text(res, 500, "out of memory");
        return;
    }
    const char *q = api_query(req, "x"), *flag = api_query(req, "flag");
    const char *missing = api_query(req, "missing");
    answer_text(res, 200,
                "here=%d method=%s path=%s target=%s local=%d json=%d x=%s flag=%s missing=%s "
                "notes=%zu body=%.*s",
                pthread_equal(((test_call *)req->app)->began_on, pthread_self()) != 0, req->method,
                req->path, req->target, req->local, api_content_is_json(req), q ? q : "(none)",
                flag ? (flag[0] ? flag : "(empty)") : "(none)", missing ? missing : "(none)",
                api_header_count(req, "X-Note"), (int)req->body_len, req->body ? req->body : "");
}

static void t_completed(const api_request *req, int status, const char *body, size_t len,
                        double seconds, void *cls)
{
    (void)body;
    (void)len;
    (void)cls;
    atomic_fetch_add(&completed_n, 1);
    if (!req->app)
        atomic_fetch_add(&completed_unbegun, 1);
    atomic_store(&last_completed_status, status);
    if (seconds < 0)
        atomic_fetch_add(&negative_seconds, 1);
}

static void t_refuse(http_refusal why, const char *detail, api_response *res, void *cls)
{
    static const int status[HTTP_REFUSALS] = {400, 413, 503, 413, 503, 503};
    (void)cls;
    atomic_fetch_add(&refusals[why], 1);
    answer_text(res, status[why], "refused %d: %s", (int)why, detail ? detail : "-");
}

static void t_end(api_request *req, void *cls)
{
    (void)cls;
    free(req->app);
    req->app = NULL;
    atomic_fetch_add(&ended, 1);
}

/* ---- Helpers ---- */

static http_server *start(size_t max_body, size_t inflight)
{
    http_settings hs = {.listen = "127.0.0.1:0",
                        .host = "127.0.0.1",
                        .port = 0,
                        .threads = 1,
                        .upstream_threads = 1,
                        .max_body_bytes = max_body,
                        .max_inflight_bytes = inflight,
                        .max_client_inflight_bytes = inflight / 2,
                        .max_connections = 64,
                        .connection_timeout_s = 30};
    http_handlers h = {t_begin, t_pool, t_dispatch, t_completed, t_refuse, t_end, NULL, t_here};
    char err[256];
    http_server *s = http_server_start(&hs, &h, err, sizeof(err));
    if (!s)
        fprintf(stderr, "http_server_start: %s\n", err);
    return s;
}

/* Waits (boundedly) for every connection's end to reach the server. */
static int settle(http_server *s)
{
    for (int i = 0; i < LOOPBACK_PATIENCE_S * 1000 && !http_server_idle(s); i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    return http_server_idle(s);
}

static int contains(const loopback_reply *r, const char *text)
{
    return r->body && strstr(r->body, text) != NULL;
}

/* ---- Cases ---- */

static void what_a_handler_sees(int port)
{
    loopback_reply r;
    int rc = loopback_request(port, "POST", "/store/a%2Fb?x=1&flag",
                              "Content-Type: application/json; charset=utf-8\r\n"
                              "X-Note: one\r\nX-Note: two\r\n",
                              "{\"hello\":1}", &r);
    check(rc == 0 && r.status == 200, "echo: rc %d status %d", rc, r.status);
    check(contains(&r, "method=POST path=/store/a/b target=/store/a%2Fb?x=1&flag local=0 json=1"),
          "echo: %s", r.body);
    check(contains(&r, "x=1 flag=(empty) missing=(none) notes=2 body={\"hello\":1}"), "echo: %s",
          r.body);
    char v[64];
    check(loopback_header(&r, "Cache-Control", v, sizeof(v)) && strcmp(v, "no-store") == 0,
          "every answer is no-store");
    loopback_reply_free(&r);

    rc = loopback_request(port, "POST", "/store/plain", "Content-Type: application/jsonx\r\n", "1",
                          &r);
    check(rc == 0 && contains(&r, "json=0"), "application/jsonx is not JSON: %s", r.body);
    loopback_reply_free(&r);
}

static void where_each_request_runs(int port)
{
    loopback_reply r;
    int rc = loopback_request(port, "GET", "/inline", NULL, NULL, &r);
    check(rc == 0 && r.status == 200 && contains(&r, "local=0"), "inline: %d %s", r.status, r.body);
    loopback_reply_free(&r);
    rc = loopback_request(port, "GET", "/local", NULL, NULL, &r);
    check(rc == 0 && contains(&r, "local=1"), "the local pool runs with local set: %s", r.body);
    loopback_reply_free(&r);
    rc = loopback_request(port, "GET", "/upstream", NULL, NULL, &r);
    check(rc == 0 && contains(&r, "local=0"), "the upstream pool: %s", r.body);
    loopback_reply_free(&r);
    /* Work a local handler hands on runs on the store pool, where Redis
     * may be waited on. */
    rc = loopback_request(port, "GET", "/handon", NULL, NULL, &r);
    check(rc == 0 && r.status == 200 && contains(&r, "resumed local=0"), "handed on: %d %s",
          r.status, r.body);
    loopback_reply_free(&r);
    /* A pool thread is not the connection's; a quick local request runs on
     * the connection's, as the local pool runs it. */
    rc = loopback_request(port, "GET", "/local", NULL, NULL, &r);
    check(rc == 0 && contains(&r, "here=0 "), "the local pool's own thread: %s", r.body);
    loopback_reply_free(&r);
    rc = loopback_request(port, "POST", "/here", NULL, "body", &r);
    check(rc == 0 && r.status == 200 && contains(&r, "here=1 ") && contains(&r, "local=1") &&
              contains(&r, "body=body"),
          "a quick local request on the connection's thread: %d %s", r.status, r.body);
    loopback_reply_free(&r);
    rc = loopback_request(port, "GET", "/storehere", NULL, NULL, &r);
    check(rc == 0 && contains(&r, "here=0 ") && contains(&r, "local=0"),
          "the store pool's request stays there: %s", r.body);
    loopback_reply_free(&r);
    /* What it hands on goes to the store pool, the connection held until
     * that answers. */
    for (int i = 0; i < 3; i++) {
        rc = loopback_request(port, "GET", "/here/handon", NULL, NULL, &r);
        check(rc == 0 && r.status == 200 && contains(&r, "resumed local=0"),
              "handed on from the connection's thread: %d %s", r.status, r.body);
        loopback_reply_free(&r);
    }
}

typedef struct {
    int port;
    loopback_reply r;
    atomic_int done;
} blocked_call;

static void *call_blocked(void *arg)
{
    blocked_call *b = arg;
    loopback_request(b->port, "GET", "/store/block", NULL, NULL, &b->r);
    atomic_store(&b->done, 1);
    return NULL;
}

/* With the store pool's one thread held, the local and upstream pools and
 * the inline route still answer. */
static void pools_are_independent(int port)
{
    blocked_call b = {.port = port};
    pthread_t t;
    pthread_create(&t, NULL, call_blocked, &b);
    pthread_mutex_lock(&gate_lock);
    while (!gate_entered)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);

    static const char *const others[] = {"/upstream", "/local", "/inline", "/here"};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        loopback_reply r;
        int rc = loopback_request(port, "GET", others[i], NULL, NULL, &r);
        check(rc == 0 && r.status == 200, "%s while the store pool is held: %d", others[i],
              r.status);
        check(!atomic_load(&b.done), "%s answered after the blocked call", others[i]);
        loopback_reply_free(&r);
    }
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    pthread_join(t, NULL);
    check(b.r.status == 200 && contains(&b.r, "unblocked"), "the blocked call: %d", b.r.status);
    loopback_reply_free(&b.r);
}

static void refusals_are_the_applications(http_server *s, int port)
{
    loopback_reply r;
    /* Two Content-Lengths: refused before begin(), so completed() sees no
     * application state and end() is never called for it. */
    int unbegun = atomic_load(&completed_unbegun), b0 = atomic_load(&begun);
    const char two[] = "POST /store/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
                       "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    int rc = loopback_exchange(port, two, sizeof(two) - 1, &r);
    check(rc == 0 && r.status == 400 && contains(&r, "refused 0: more than one Content-Length"),
          "framing: %d %s", r.status, r.body);
    loopback_reply_free(&r);
    check(settle(s), "idle after the framing refusal");
    check(atomic_load(&completed_unbegun) == unbegun + 1, "completed() without state: %d",
          atomic_load(&completed_unbegun) - unbegun);
    check(atomic_load(&begun) == b0, "begin() ran for a badly framed request");

    /* A declared body past max_body_bytes (4096). */
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "POST /store/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n"
                     "Connection: close\r\n\r\n");
    rc = loopback_exchange(port, head, (size_t)n, &r);
    check(rc == 0 && r.status == 413 && contains(&r, "refused 1: -"), "too large: %d %s", r.status,
          r.body);
    check(atomic_load(&last_completed_status) == 413, "completed() with 413");
    loopback_reply_free(&r);

    /* An answer past one client's share (8192 of 16384). */
    rc = loopback_request(port, "GET", "/store/big", NULL, NULL, &r);
    check(rc == 0 && r.status == 413 && contains(&r, "refused 3: -"), "answer too large: %d %s",
          r.status, r.body);
    loopback_reply_free(&r);
}

/* A body that cannot fit what is left of the memory budget is refused
 * 503 with Retry-After, before it is sent. */
static void the_budget_refuses_before_the_body(void)
{
    http_server *s = start(16384, 16384);
    if (!s) {
        fail("the second server did not start");
        return;
    }
    int port = http_server_port(s);
    /* A body the size of the whole budget is held while another waits:
     * send only its headers and keep the connection open. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "POST /store/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 16000\r\n\r\n");
    static char chunk[12000];
    memset(chunk, 'a', sizeof(chunk));
    check(send(fd, head, (size_t)n, 0) == n && send(fd, chunk, sizeof(chunk), 0) > 0,
          "the held body's first bytes");
    /* The server holds at least 12000 bytes of the budget once it read
     * them: wait until it has. */
    for (int i = 0; i < LOOPBACK_PATIENCE_S * 1000 && http_server_buffered_bytes(s) < 12000; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    check(http_server_buffered_bytes(s) >= 12000, "held %zu", http_server_buffered_bytes(s));

    loopback_reply r;
    n = snprintf(head, sizeof(head),
                 "POST /store/y HTTP/1.1\r\nHost: localhost\r\nContent-Length: 8000\r\n"
                 "Connection: close\r\n\r\n");
    int rc = loopback_exchange(port, head, (size_t)n, &r);
    char v[16];
    check(rc == 0 && r.status == 503 && contains(&r, "refused 2: -"), "overloaded: %d %s", r.status,
          r.body);
    check(loopback_header(&r, "Retry-After", v, sizeof(v)) && strcmp(v, "1") == 0,
          "Retry-After on an overloaded refusal");
    loopback_reply_free(&r);
    close(fd);
    check(settle(s), "idle once the held body's connection closed");
    http_server_stop(s, 1000);
}

static void unescaped_lengths(void)
{
    static const struct {
        const char *raw;
        size_t want;
    } cases[] = {
        {"agent", 5}, {"agent%2F42", 8}, {"%41%42", 2}, {"a%00b", 5}, /* %00 kept */
        {"a%2", 3},   {"a%zz", 4},       {"%", 1},      {"", 0},      {"%2f%2F", 2}, {"+%20+", 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t got = api_unescaped_length(cases[i].raw, strlen(cases[i].raw));
        check(got == cases[i].want, "api_unescaped_length(%s) = %zu, want %zu", cases[i].raw, got,
              cases[i].want);
    }
    /* Bounded by n: an escape cut by the bound is three bytes. */
    check(api_unescaped_length("a%2F", 3) == 3, "an escape past n is not decoded");
}

int main(void)
{
    unescaped_lengths();
    http_server *s = start(4096, 16384);
    if (!s)
        return 1;
    int port = http_server_port(s);
    check(port > 0, "bound port %d", port);

    what_a_handler_sees(port);
    where_each_request_runs(port);
    pools_are_independent(port);
    refusals_are_the_applications(s, port);

    check(settle(s), "the server comes back to idle");
    check(atomic_load(&begun) > 0 && atomic_load(&begun) == atomic_load(&ended),
          "every begin() has its end(): %d begun, %d ended", atomic_load(&begun),
          atomic_load(&ended));
    check(atomic_load(&completed_n) == atomic_load(&begun) + atomic_load(&completed_unbegun),
          "completed() once per request: %d completed, %d begun, %d refused before",
          atomic_load(&completed_n), atomic_load(&begun), atomic_load(&completed_unbegun));
    check(atomic_load(&refusals[HTTP_REFUSED_FRAMING]) == 1 &&
              atomic_load(&refusals[HTTP_REFUSED_TOO_LARGE]) == 1 &&
              atomic_load(&refusals[HTTP_REFUSED_ANSWER_TOO_LARGE]) == 1,
          "each refusal worded once by the application");
    check(atomic_load(&negative_seconds) == 0, "a request took negative time");
    http_server_stop(s, 1000);

    the_budget_refuses_before_the_body();
    return check_done("http_server_cases");
}
