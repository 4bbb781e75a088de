/* The HTTP front: a libmicrohttpd daemon that collects each request body
 * within the configured limit and hands complete requests to a dispatcher.
 * The only module that includes microhttpd.h. */
#ifndef COMPACTD_HTTP_SERVER_H
#define COMPACTD_HTTP_SERVER_H

#include "request.h"

#include <stddef.h>

/* The handler pools a request may run on, besides libmicrohttpd's own
 * threads. */
typedef enum {
    HTTP_POOL_STORE = 0, /* may wait on Redis */
    HTTP_POOL_LOCAL,     /* never waits on Redis: what would is handed on
                          * to the store pool (api_hand_on()) */
    HTTP_POOL_UPSTREAM,  /* waits on another server's answer, for minutes */
    HTTP_POOLS
} http_pool_kind;

/* What the server is started with (the process's settings fill it). */
typedef struct {
    const char *listen;   /* as configured, for messages */
    const char *host;     /* the name or address to bind */
    int port;             /* 0: any free port */
    int threads;          /* handler threads in each of the store and local pools */
    int upstream_threads; /* handler threads in the upstream pool */
    size_t max_body_bytes;
    size_t max_inflight_bytes;        /* bodies and answers held at once */
    size_t max_client_inflight_bytes; /* of those, what one request may hold */
    int max_connections;
    int connection_timeout_s;
} http_settings;

/* The answers the transport gives itself, before or instead of a handler. */
typedef enum {
    HTTP_REFUSED_FRAMING,           /* 400: framed ambiguously (detail: how) */
    HTTP_REFUSED_TOO_LARGE,         /* 413: the body passes max_body_bytes */
    HTTP_REFUSED_OVERLOADED,        /* 503: the body does not fit the budget */
    HTTP_REFUSED_ANSWER_TOO_LARGE,  /* 413: the answer passes one client's share */
    HTTP_REFUSED_ANSWER_OVERLOADED, /* 503: the answer does not fit the budget */
    HTTP_REFUSED_SHUTTING_DOWN,     /* 503: stopping; the request was not run */
    HTTP_REFUSALS
} http_refusal;

/* Where begin() says a request runs. */
enum { HTTP_BEGIN_FAILED = -1, HTTP_RUNS_IN_POOL = 0, HTTP_RUNS_INLINE = 1 };

/* What the application hands the transport. Every callback may run on any
 * thread, several at once. */
typedef struct {
    /* Called once a request's headers are in (req->method, path, target and
     * headers readable; no body yet): sets req->app to the application's
     * state for the request, which end() frees. Returns HTTP_RUNS_INLINE
     * when the request needs neither Redis nor its body (answered on
     * libmicrohttpd's own threads, even past the memory budget),
     * HTTP_RUNS_IN_POOL, or HTTP_BEGIN_FAILED (out of memory: req->app
     * left NULL, the connection is closed). */
    int (*begin)(api_request *req, void *cls);
    /* The pool a request that does not run inline runs on, asked once its
     * body is in. */
    http_pool_kind (*pool)(const api_request *req, void *cls);
    /* Handles one complete request; must set res->status and may set a body. */
    void (*dispatch)(api_request *req, api_response *res, void *cls);
    /* Called once per request: when its response is queued, with its body
     * (body NULL when it had none or ended otherwise), or when it ends
     * unanswered (status 0). req->app is NULL when the request ended
     * before begin() (refused while its request line or headers were
     * read). */
    void (*completed)(const api_request *req, int status, const char *body, size_t len,
                      double seconds, void *cls);
    /* Fills res (status, a body freed with free(), its content type) with
     * the answer to a request the transport refuses itself; detail is the
     * transport's reason for HTTP_REFUSED_FRAMING, else NULL. */
    void (*refuse)(http_refusal why, const char *detail, api_response *res, void *cls);
    /* Called once the transport lets go of a request begin() accepted
     * (after completed(), and after a handler that streams returns): frees
     * req->app. */
    void (*end)(api_request *req, void *cls);
    void *cls;
    /* Optional (NULL: never), asked once the body is in for a request
     * pool() puts on the local pool: 1 when it runs on the connection's
     * own thread instead, as it would on that pool (req->local set: what
     * would wait on Redis is handed on to the store pool), for a handler
     * that answers in well under a millisecond and never streams. It saves
     * the hand-off to a pool thread and back; the other connections of that
     * thread wait while it runs. */
    int (*here)(const api_request *req, void *cls);
} http_handlers;

typedef struct http_server http_server;

/* Starts listening on hs->host and hs->port with hs->threads workers in
 * the store and local pools and hs->upstream_threads in the upstream
 * pool. Returns a new server, or NULL with a message in err. hs and h are
 * copied. */
http_server *http_server_start(const http_settings *hs, const http_handlers *h, char *err,
                               size_t errlen);

/* Bytes server s holds now for request bodies and responses in flight (the
 * budget COMPACTD_MAX_INFLIGHT_BYTES bounds); s is an http_server. */
size_t http_server_buffered_bytes(const void *s);

/* 1 when no connection is open, no request is in flight and no byte is
 * held for one: what every connection's end must come back to. */
int http_server_idle(const http_server *s);

/* The port actually bound (useful with port 0). */
int http_server_port(const http_server *s);

/* Refuses new connections at once, waits up to drain_ms milliseconds for
 * requests in flight to finish (answering each with "Connection: close"),
 * then closes what is left, stops and frees the server. */
void http_server_stop(http_server *s, int drain_ms);

#endif
