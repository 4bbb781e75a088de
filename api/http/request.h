/* What a handler sees of an HTTP request and what it hands back. Handlers
 * fill an api_response; only http_server.c turns it into bytes on the wire. */
#ifndef COMPACTD_REQUEST_H
#define COMPACTD_REQUEST_H

#include <stddef.h>

/* One request as the transport carries it: its method, path and body, and
 * a slot for the application's own state. The transport knows nothing of
 * routes, tenants or sessions: the application keeps those in app. */
typedef struct {
    const char *method;
    const char *path; /* percent-decoded */
    /* The raw request target, as the client wrote it (before decoding; up
     * to a NUL the client wrote, which the framing check refuses). */
    const char *target;
    const char *body; /* borrowed; NUL-terminated; NULL when empty */
    size_t body_len;
    void *conn; /* for api_query() and api_header() */
    /* The application's state for this request: set by
     * http_handlers.begin, freed by http_handlers.end, opaque to the
     * transport. */
    void *app;
    /* 1 while the handler runs where Redis must never be waited on: work
     * that would wait is handed on with api_hand_on(). */
    int local;
} api_request;

typedef struct api_response {
    int status;
    char *body; /* owned; freed with free() */
    size_t len;
    const char *content_type;
    const char *allow;            /* Allow header for 405 */
    const char *www_authenticate; /* WWW-Authenticate header for 401 */
    /* More headers: name, value pairs ending in NULL; static, never freed. */
    const char *const *headers;
    /* More headers made for this answer: "name\0value\0" pairs ending in an
     * empty name; owned, freed with free(). */
    char *header_block;
    /* Set by api_stream_open(): the answer's body is that stream's. */
    struct api_stream *stream;
    /* Set by api_hand_on(): the answer is not made yet. The front runs
     * resume(job, res) where Redis may be waited on, which fills res as a
     * handler does, or drop(job) when it cannot run; either frees job. */
    void (*resume)(void *job, struct api_response *res);
    void (*drop)(void *job);
    void *job;
} api_response;

/* Hands the rest of a handler's work on when it waits on Redis and req
 * runs where Redis must never be waited on: res then says to run
 * resume(job, res) later, where it may wait, and the handler returns at
 * once. Returns 1 when handed on, 0 when the caller goes on itself. */
static inline int api_hand_on(const api_request *req, api_response *res, int waits,
                              void (*resume)(void *, api_response *), void (*drop)(void *),
                              void *job)
{
    if (!waits || !req->local)
        return 0;
    res->resume = resume;
    res->drop = drop;
    res->job = job;
    return 1;
}

/* ---- Answers streamed as they are made ---- */

typedef struct api_stream api_stream;

/* Sends the answer's status and headers now (header_block as in
 * api_response, taken whatever happens) and opens its body, of unknown
 * length, for api_stream_write(): a front that relays what another server
 * sends, chunk by chunk. The body waits in a buffer of at most what one
 * request may still hold (COMPACTD_MAX_CLIENT_INFLIGHT_BYTES, less its
 * body): a writer ahead of the client waits for room, and a client that
 * takes nothing within the connection timeout is cut, which fails the
 * writes. From the call on, req's headers and query may no longer be read
 * (the connection may close under them); everything else of req stays
 * until the handler returns, which then answers nothing more. Returns the
 * stream, or NULL (nothing sent: answer as usual) when its buffer cannot
 * be had. */
api_stream *api_stream_open(api_request *req, int status, const char *content_type,
                            char *header_block);

/* Appends len bytes to the stream, waiting for room as the client reads.
 * 0, or -1 when the client is gone or was cut (the rest is not wanted). */
int api_stream_write(api_stream *s, const char *data, size_t len);

/* Ends the stream: the client gets the end of the body, or with failed a
 * body cut short (no last chunk), so that it never takes a broken answer
 * for a whole one. s is gone after the call. */
void api_stream_close(api_stream *s, int failed);

/* 1 once the server is stopping and its drain time is over: work that
 * waits on another server should give up. */
int api_request_abandoned(const api_request *req);

/* A query-string argument or a request header of the request, or NULL
 * when absent (a bare "?name" is "", not absent). Borrowed: valid while the
 * request is being handled. */
const char *api_query(const api_request *req, const char *name);
const char *api_header(const api_request *req, const char *name);

/* How many times the request carries header name (case-insensitive). */
size_t api_header_count(const api_request *req, const char *name);

/* 1 when the request's Content-Type is application/json (parameters
 * allowed). */
int api_content_is_json(const api_request *req);

/* The length of raw's first n bytes once percent-decoded as the path is
 * ("%XX" one byte, "%00" kept as it is). */
size_t api_unescaped_length(const char *raw, size_t n);

/* Frees the request body early, once the handler no longer needs it (after
 * decoding, every string has been copied out): the largest requests then
 * never hold the body and its parsed tree and the response all at once. */
void api_release_body(api_request *req);

#endif
