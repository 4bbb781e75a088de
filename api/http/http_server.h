/* The HTTP front: a libmicrohttpd daemon that collects each request body
 * within the configured limit and hands complete requests to a dispatcher.
 * The only module that includes microhttpd.h. */
#ifndef COMPACTD_HTTP_SERVER_H
#define COMPACTD_HTTP_SERVER_H

#include "request.h"

#include <stddef.h>

/* What the server is started with (the process's settings fill it). */
typedef struct {
    const char *listen; /* as configured, for messages */
    const char *host;   /* the name or address to bind */
    int port;           /* 0: any free port */
    int threads;        /* handler threads in each of the two pools */
    size_t max_body_bytes;
    size_t max_inflight_bytes;        /* bodies and answers held at once */
    size_t max_client_inflight_bytes; /* of those, what one request may hold */
    int max_connections;
    int connection_timeout_s;
} http_settings;

typedef struct {
    /* Handles one complete request; must set res->status and may set a body. */
    void (*dispatch)(api_request *req, api_response *res, void *cls);
    /* Called once per request: when its response is queued, with its body
     * (body NULL when it had none or ended otherwise), or when it ends
     * unanswered (status 0). */
    void (*completed)(const api_request *req, int status, const char *body, size_t len,
                      double seconds, void *cls);
    /* 1 when the request needs neither Redis nor its body, and is answered
     * on libmicrohttpd's own threads instead of waiting for the pool. */
    int (*runs_inline)(const api_request *req, void *cls);
    /* 1 when the request (complete, body included) may wait on Redis; 0
     * when it never does, or hands what would wait on to the other pool
     * (api_hand_on()), and runs on a pool of its own. */
    int (*needs_store)(const api_request *req, void *cls);
    void *cls;
} http_handlers;

typedef struct http_server http_server;

/* Starts listening on hs->host and hs->port with hs->threads workers in
 * each pool. Returns a new server, or NULL with a message in err. hs and h
 * are copied. */
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
