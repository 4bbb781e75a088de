/* The handler pool: the threads that run handlers for suspended
 * connections. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- Handler pool ---- */

/* libmicrohttpd's threads only move bytes and answer the routes that need
 * neither Redis nor a body (liveness, readiness from its cache, metrics,
 * the spec): every other request's connection is suspended and its handler
 * runs on one of these threads, which resume the connection with the
 * answer. A liveness probe then never waits behind a long /verify or a
 * stalled Redis. Requests that never wait on Redis (token counts, dry
 * runs, MCP messages other than tool calls) have a pool of their own, so
 * that a stalled Redis, which holds every thread of the store pool, does
 * not queue them behind requests that wait on it. A compaction is planned
 * on the local pool too, and only a commit that waits on Redis (spills, a
 * refusal's log entry, a cluster's awaited entry) is handed on to the
 * store pool: one that spills nothing answers where it was planned. A
 * request the application says is quick (http_handlers.here) runs as on
 * the local pool but on the connection's own thread (http_server.c), and
 * hands on from there.
 * Requests that wait on another server (the proxy's upstream calls, a
 * stream for minutes) have a third pool, so that they never hold the
 * threads compactions and spill reads need. */

static void answer_unrun(http_server *s, api_response *res)
{
    s->h.refuse(HTTP_REFUSED_SHUTTING_DOWN, NULL, res, s->h.cls);
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

/* Queues st on pool p; once p has stopped (shutting down) it is answered
 * 503 at once instead, and work handed on to it is dropped. */
static void pool_push(handler_pool *p, request_state *st)
{
    pthread_mutex_lock(&p->lock);
    if (p->stop) {
        pthread_mutex_unlock(&p->lock);
        if (st->drop)
            st->drop(st->job);
        st->resume = NULL;
        st->drop = NULL;
        api_response res = {.status = 503};
        answer_unrun(p->s, &res);
        job_done(st, &res);
        return;
    }
    st->next_job = NULL;
    if (p->tail)
        p->tail->next_job = st;
    else
        p->head = st;
    p->tail = st;
    if (p->idle_n > 0) {
        pool_worker *w = p->idle[--p->idle_n];
        w->idle = 0;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&p->lock);
}

void http_pool_enqueue(http_server *s, request_state *st, http_pool_kind k)
{
    pool_push(&s->pools[k >= 0 && k < HTTP_POOLS ? k : HTTP_POOL_STORE], st);
}

int http_pool_open(http_server *s, http_pool_kind k)
{
    handler_pool *p = &s->pools[k];
    pthread_mutex_lock(&p->lock);
    int open = !p->stop;
    pthread_mutex_unlock(&p->lock);
    return open;
}

void http_pool_hand_on(http_server *s, request_state *st, const api_response *res)
{
    st->resume = res->resume;
    st->drop = res->drop;
    st->job = res->job;
    pool_push(&s->pools[HTTP_POOL_STORE], st);
}

/* Runs st on pool p. A handler on the local pool that hands work on (it
 * would wait on Redis) has it queued on the store pool, the connection
 * still suspended. */
static void pool_run(handler_pool *p, request_state *st, int give_up)
{
    http_server *s = p->s;
    api_response res = {.status = 500, .content_type = "application/json"};
    if (give_up) {
        if (st->drop)
            st->drop(st->job);
        st->resume = NULL;
        st->drop = NULL;
        answer_unrun(s, &res);
        job_done(st, &res);
        return;
    }
    st->req.local = p == &s->pools[HTTP_POOL_LOCAL];
    http_run_handler(s, st, &res);
    st->req.local = 0;
    if (st->streamed) {
        /* Answered already, as it was made (api_stream_open()). */
        free(res.body);
        free(res.header_block);
        http_request_release(st);
        return;
    }
    if (res.resume) {
        http_pool_hand_on(s, st, &res);
        return;
    }
    job_done(st, &res);
}

/* Takes w off the idle stack, where a spurious wakeup or a stop left it. */
static void unidle(handler_pool *p, pool_worker *w)
{
    for (int i = 0; w->idle && i < p->idle_n; i++) {
        if (p->idle[i] == w) {
            memmove(&p->idle[i], &p->idle[i + 1], (size_t)(p->idle_n - i - 1) * sizeof(*p->idle));
            p->idle_n--;
            w->idle = 0;
        }
    }
}

static void *pool_work(void *arg)
{
    pool_worker *w = arg;
    handler_pool *p = w->pool;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->head && !p->stop) {
            if (!w->idle) {
                p->idle[p->idle_n++] = w;
                w->idle = 1;
            }
            pthread_cond_wait(&w->wake, &p->lock);
        }
        unidle(p, w);
        request_state *st = p->head;
        int give_up = p->stop == 2;
        if (st) {
            p->head = st->next_job;
            if (!p->head)
                p->tail = NULL;
        }
        pthread_mutex_unlock(&p->lock);
        if (!st)
            return NULL; /* stopping and nothing left */
        pool_run(p, st, give_up);
    }
}

int http_pool_start(http_server *s, const http_settings *hs)
{
    int ok = 1;
    for (int k = 0; k < HTTP_POOLS; k++) {
        handler_pool *p = &s->pools[k];
        int n = k == HTTP_POOL_UPSTREAM ? hs->upstream_threads : hs->threads;
        /* Static initializers cannot fail, so http_pool_stop() may always run. */
        p->s = s;
        p->lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        p->workers = calloc((size_t)n, sizeof(*p->workers));
        p->idle = calloc((size_t)n, sizeof(*p->idle));
        for (p->made = 0; p->workers && p->made < n; p->made++) {
            p->workers[p->made].pool = p;
            p->workers[p->made].wake = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
        }
        for (p->size = 0; p->workers && p->idle && p->size < n; p->size++)
            if (pthread_create(&p->workers[p->size].thread, NULL, pool_work,
                               &p->workers[p->size]) != 0)
                break;
        ok &= p->size == n;
    }
    return ok ? 0 : -1;
}

/* how 1: run what is queued, 2: answer it 503 unrun. The lock stays for
 * requests that arrive until the daemon stops: they are answered 503. The
 * local pool stops before the store pool, since its handlers hand work on
 * to it. */
void http_pool_stop(http_server *s, int how)
{
    static const int order[HTTP_POOLS] = {HTTP_POOL_LOCAL, HTTP_POOL_UPSTREAM, HTTP_POOL_STORE};
    for (int k = 0; k < HTTP_POOLS; k++) {
        handler_pool *p = &s->pools[order[k]];
        pthread_mutex_lock(&p->lock);
        p->stop = how;
        for (int i = 0; i < p->size; i++)
            pthread_cond_signal(&p->workers[i].wake);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < p->size; i++)
            pthread_join(p->workers[i].thread, NULL);
        p->size = 0;
    }
}

void http_pool_destroy(http_server *s)
{
    for (int k = 0; k < HTTP_POOLS; k++) {
        handler_pool *p = &s->pools[k];
        pthread_mutex_destroy(&p->lock);
        for (int i = 0; p->workers && i < p->made; i++)
            pthread_cond_destroy(&p->workers[i].wake);
        free(p->workers);
        free(p->idle);
        p->workers = NULL;
        p->idle = NULL;
    }
}
