/* The handler pool: the threads that run handlers for suspended
 * connections. */
#include "http_internal.h"

#include "json_encode.h"

#include <stdio.h>
#include <stdlib.h>

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
void http_pool_enqueue(http_server *s, request_state *st)
{
    pthread_mutex_lock(&s->pool_lock);
    if (s->pool_stop) {
        pthread_mutex_unlock(&s->pool_lock);
        api_response res = {503, NULL, 0, "application/json", NULL, NULL};
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

        api_response res = {500, NULL, 0, "application/json", NULL, NULL};
        if (give_up)
            answer_unrun(&res, "shutting down: the request was not run");
        else
            http_run_handler(s, st, &res);
        job_done(st, &res);
    }
}

int http_pool_start(http_server *s, int n)
{
    /* Static initializers cannot fail, so http_pool_stop() may always run. */
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
void http_pool_stop(http_server *s, int how)
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

void http_pool_destroy(http_server *s)
{
    pthread_mutex_destroy(&s->pool_lock);
    pthread_cond_destroy(&s->pool_wake);
}
