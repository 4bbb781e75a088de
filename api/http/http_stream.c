/* Answers streamed as they are made (api_stream_open()): a ring buffer
 * between the handler that writes it and libmicrohttpd, which reads it
 * into a chunked response as the client takes it, parking the connection
 * while the ring is empty. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

struct api_stream {
    pthread_mutex_t lock;
    pthread_cond_t room; /* signalled when the reader takes bytes or goes */
    char *ring;
    size_t cap, start, len;
    int closed, failed;
    int gone;    /* libmicrohttpd is done with the response (sent or cut) */
    int parked;  /* the connection is suspended until there is more */
    int holders; /* the writer and the response */
    struct MHD_Connection *conn;
    http_server *s;
    conn_watch *w;
};

/* What a stream's ring holds at most: enough for a provider's largest
 * events, small beside one client's share. */
#define STREAM_RING (256u << 10)
/* What libmicrohttpd asks for at a time. */
#define STREAM_BLOCK (16u << 10)

static void stream_unhold(api_stream *s)
{
    pthread_mutex_lock(&s->lock);
    int last = --s->holders == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    http_budget_release(s->s, s->cap);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->room);
    free(s->ring);
    free(s);
}

/* Wakes the parked connection: there is more, or the end. Under the lock,
 * so that a resume always follows the suspend it undoes. */
static void unpark(api_stream *s)
{
    if (!s->parked)
        return;
    s->parked = 0;
    http_arm(s->w);
    MHD_resume_connection(s->conn);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    api_stream *s = cls;
    (void)pos;
    pthread_mutex_lock(&s->lock);
    if (s->len == 0) {
        ssize_t end =
            s->failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
        if (s->closed) {
            pthread_mutex_unlock(&s->lock);
            return end;
        }
        /* Nothing to send until the writer has more: the connection waits
         * off the event loop, and out of the watchdog's sight (the slow
         * one is the other server, whose own timeout holds it). */
        s->parked = 1;
        if (s->w)
            atomic_store(&s->w->armed, 0);
        MHD_suspend_connection(s->conn);
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    size_t n = 0;
    while (n < max && s->len > 0) {
        size_t run = s->cap - s->start < s->len ? s->cap - s->start : s->len;
        if (run > max - n)
            run = max - n;
        memcpy(buf + n, s->ring + s->start, run);
        s->start = (s->start + run) % s->cap;
        s->len -= run;
        n += run;
    }
    /* The client keeps up: its deadline starts over. */
    http_arm(s->w);
    pthread_cond_signal(&s->room);
    pthread_mutex_unlock(&s->lock);
    return (ssize_t)n;
}

static void stream_done(void *cls)
{
    api_stream *s = cls;
    pthread_mutex_lock(&s->lock);
    s->gone = 1;
    pthread_cond_signal(&s->room);
    pthread_mutex_unlock(&s->lock);
    stream_unhold(s);
}

void http_stream_abandon(api_stream *s)
{
    stream_done(s);
}

struct MHD_Response *http_stream_response(api_stream *s)
{
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
                                                               stream_read, s, stream_done);
    if (!r)
        stream_done(s); /* the response's hold, never taken */
    return r;
}

api_stream *api_stream_open(api_request *req, int status, const char *content_type,
                            char *header_block)
{
    request_state *st = (request_state *)req;
    http_server *srv = st->server;
    size_t held = st->cap + st->answer_held;
    size_t room = srv->client_budget > held ? srv->client_budget - held : 0;
    size_t cap = room < STREAM_RING ? room : STREAM_RING;
    api_stream *s = cap >= STREAM_BLOCK ? calloc(1, sizeof(*s)) : NULL;
    char *ring = s ? malloc(cap) : NULL;
    if (!ring || http_budget_take(srv, cap) != 0) {
        free(ring);
        free(s);
        free(header_block);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->room, NULL);
    s->ring = ring;
    s->cap = cap;
    s->holders = 2;
    s->conn = req->conn;
    s->s = srv;
    s->w = st->watch;
    /* The connection goes on with the answer while the handler still runs:
     * the state is held for the handler too. */
    atomic_fetch_add(&st->holders, 1);
    st->streamed = 1;
    st->res = (api_response){
        .status = status, .content_type = content_type, .header_block = header_block, .stream = s};
    atomic_store(&st->answered, 1);
    MHD_resume_connection(req->conn);
    return s;
}

int api_stream_write(api_stream *s, const char *data, size_t len)
{
    pthread_mutex_lock(&s->lock);
    while (len > 0 && !s->gone) {
        if (s->len == s->cap) {
            /* Bounded: a client that takes nothing is cut by the watchdog
             * within the connection timeout, and then gone. */
            pthread_cond_wait(&s->room, &s->lock);
            continue;
        }
        size_t at = (s->start + s->len) % s->cap;
        size_t run = s->cap - at < s->cap - s->len ? s->cap - at : s->cap - s->len;
        if (run > len)
            run = len;
        memcpy(s->ring + at, data, run);
        s->len += run;
        data += run;
        len -= run;
        unpark(s);
    }
    int rc = s->gone ? -1 : 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void api_stream_close(api_stream *s, int failed)
{
    pthread_mutex_lock(&s->lock);
    s->closed = 1;
    s->failed = failed;
    unpark(s);
    pthread_mutex_unlock(&s->lock);
    stream_unhold(s);
}

int api_request_abandoned(const api_request *req)
{
    const request_state *st = (const request_state *)req;
    return atomic_load(&st->server->stopping) == 2;
}
