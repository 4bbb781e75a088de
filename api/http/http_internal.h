/* What the HTTP front's files share: the server, one connection as the
 * watchdog sees it, one request's state. Only api/http/http_*.c include it. */
#ifndef COMPACTD_HTTP_INTERNAL_H
#define COMPACTD_HTTP_INTERNAL_H

#include "http_server.h"

#include "answer_account.h"

#include "mhd_compat.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

/* One connection as the watchdog sees it (see "Slow clients" below). */
typedef struct conn_watch {
    MHD_socket fd;
    atomic_int_fast64_t since_ms; /* when the current deadline began */
    atomic_int armed;             /* 1 while a request arrives or its response leaves */
    atomic_size_t out_len;        /* the response leaving: its size (0: none) */
    atomic_size_t out_taken;      /* and how much of it libmicrohttpd has taken to send */
    int cut;
    struct conn_watch *prev, *next;
} conn_watch;

typedef struct request_state request_state;
typedef struct http_server http_server;

typedef struct handler_pool handler_pool;

/* One thread of a pool, woken on a condition of its own. */
typedef struct {
    handler_pool *pool;
    pthread_t thread;
    pthread_cond_t wake;
    int idle; /* on the pool's idle stack */
} pool_worker;

/* One handler pool: a queue of suspended requests and the threads that
 * run them. A request wakes the thread that went idle last: its caches
 * and malloc arena are warm, and requests one after another then grow one
 * thread's memory, not every thread's. */
struct handler_pool {
    http_server *s;
    pthread_mutex_t lock; /* guards the queue, the idle stack and stop */
    request_state *head, *tail;
    int stop; /* 1: finish the queue and exit; 2: answer the queue 503 and exit */
    int size; /* threads running */
    int made; /* workers allocated, their conditions initialized */
    pool_worker *workers;
    pool_worker **idle; /* the idle stack, the last to go idle on top */
    int idle_n;
};

struct http_server {
    struct MHD_Daemon *daemon;
    http_handlers h;
    size_t max_body;
    int port;
    atomic_int in_flight;
    atomic_int stopping; /* 1: draining; 2: the drain time is over */
    atomic_int open;     /* connections between MHD's STARTED and CLOSED */
    int max_connections;

    size_t budget;          /* bytes that bodies and responses in flight may hold */
    size_t client_budget;   /* what one request (its body and answer) may hold of it */
    atomic_size_t buffered; /* bytes they hold now */

    int64_t request_timeout_ms;
    pthread_mutex_t watch_lock; /* guards the list, cut and watch_stop */
    pthread_cond_t watch_wake;
    conn_watch *watched;
    int watch_stop;
    pthread_t watchdog;

    /* The handler pools (http_pool.c), by http_pool_kind. */
    handler_pool pools[HTTP_POOLS];
};

/* One request's state, created when libmicrohttpd has read the request line
 * (the URI log callback) and freed in the completion callback, which also
 * runs when the client goes away. */
struct request_state {
    api_request req; /* first: api_release_body() finds the state from it */
    char *body;
    size_t len, cap;        /* cap bytes of the budget are held for the body */
    size_t answer_held;     /* bytes of the budget the answer being built holds */
    answer_account account; /* what the handler's writers take those bytes from */
    int too_large;
    int overloaded;         /* the budget could not hold the body */
    int begun;              /* the access handler has seen the headers */
    int runs_inline;        /* h.begin said so: answered on libmicrohttpd's threads */
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
    /* A handler's work handed on to the store pool (api_hand_on()): run
     * resume(job) there, or drop(job) when it cannot run. */
    void (*resume)(void *job, api_response *res);
    void (*drop)(void *job);
    void *job;
    /* Who holds the state: libmicrohttpd until the request completes, and
     * a handler that streams its answer until it returns (the connection
     * may close under it). The last to let go frees it. */
    atomic_int holders;
    int streamed;     /* the handler opened a stream (api_stream_open()) */
    int64_t start_us; /* mono_clock_us() when the request began */
    http_server *server;
    conn_watch *watch; /* NULL when the connection could not be watched */
    char raw_target[]; /* a copy of the raw target: req.target */
};

/* ---- Memory budget (http_budget.c) ---- */

/* Takes n bytes of s's budget: 0, or -1 (nothing taken) when they do not fit. */
int http_budget_take(http_server *s, size_t n);
void http_budget_release(http_server *s, size_t n);

/* Runs st's handler with its answer counted as it is built (st->account
 * bound to the thread): an answer that would pass what one client may
 * hold, or what is left of the budget, is replaced by a 413 or 503 error.
 * res is filled as by h.dispatch. When st holds work handed on
 * (st->resume), runs that instead, against the same account. When the
 * handler hands work on (res->resume), res holds nothing else. */
void http_run_handler(http_server *s, request_state *st, api_response *res);

/* Gives back what st's answer held while it was built (its bytes are then
 * counted as the response's). */
void http_answer_settle(request_state *st);

/* ---- Framing (http_framing.c) ---- */

/* NULL when the request is framed unambiguously, else why not (a static
 * string). */
const char *http_framing_fault(struct MHD_Connection *conn, const request_state *st,
                               const char *method, const char *version);

/* MHD_OPTION_UNESCAPE_CALLBACK: strict percent-decoding in place. */
size_t http_unescape(void *cls, struct MHD_Connection *conn, char *s);

/* ---- State and streams (http_request.c, http_stream.c) ---- */

/* Lets go of st for one holder; the last frees it. */
void http_request_release(request_state *st);
/* Frees the request's body and gives its bytes back to the budget. */
void http_body_free(request_state *st);

/* The libmicrohttpd response reading stream s (a response of unknown
 * length), or NULL when out of memory (the stream then fails its writes). */
struct MHD_Response *http_stream_response(struct api_stream *s);
/* For a stream whose response was never made (the connection ended
 * first): its writes fail. */
void http_stream_abandon(struct api_stream *s);

/* ---- Handler pool (http_pool.c) ---- */

/* Starts the store and local pools with hs->threads threads each, the
 * upstream pool with hs->upstream_threads. */
int http_pool_start(http_server *s, const http_settings *hs);
/* Hands a suspended connection's request to pool k (work a local handler
 * hands on then goes to the store pool). */
void http_pool_enqueue(http_server *s, request_state *st, http_pool_kind k);
/* 1 while pool k takes requests (0 once it stops: what is pushed to it
 * then is answered 503 unrun). */
int http_pool_open(http_server *s, http_pool_kind k);
/* Queues on the store pool the rest of a handler that ran where Redis is
 * never waited on and handed work on (res->resume), its connection
 * suspended. */
void http_pool_hand_on(http_server *s, request_state *st, const api_response *res);
/* how 1: run what is queued, 2: answer it 503 unrun. */
void http_pool_stop(http_server *s, int how);
void http_pool_destroy(http_server *s);

/* ---- Slow clients and the connection limit (http_watchdog.c) ---- */

/* The socket context of a connection that is counted but not watched. */
extern char http_unwatched;
/* The connection's watch from its socket context; NULL when unwatched. */
conn_watch *http_watch_of(void *socket_context);
/* Starts the connection's deadline over. */
void http_arm(conn_watch *w);
void http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
MHD_Result_t http_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
int http_watchdog_start(http_server *s);
void http_watchdog_stop(http_server *s);

#endif
