/* The memory budget that request bodies and responses in flight share
 * (COMPACTD_MAX_INFLIGHT_BYTES). */
#include "http_internal.h"

#include <assert.h>
#include <stdlib.h>

/* ---- Memory budget ---- */

/* Every body buffer and every response body counts against one budget, so
 * that many connections cannot together hold more than it: a body is held
 * only as its bytes arrive, and past the budget the request is answered 503
 * with Retry-After instead of being held. */

int http_budget_take(http_server *s, size_t n)
{
    size_t cur = atomic_load(&s->buffered);
    do {
        if (n > s->budget || cur > s->budget - n)
            return -1;
    } while (!atomic_compare_exchange_weak(&s->buffered, &cur, cur + n));
    return 0;
}

void http_budget_release(http_server *s, size_t n)
{
    size_t before = atomic_fetch_sub(&s->buffered, n);
    /* Nothing gives back more than it took. */
    assert(before >= n);
    (void)before;
}

size_t http_server_buffered_bytes(const void *s)
{
    return atomic_load(&((http_server *)s)->buffered);
}

/* ---- Answers ---- */

/* An answer is counted as its writers allocate it, before it exists: one
 * request (one client connection, which has one request at a time) may hold
 * at most client_budget bytes, its body included, and all together at most
 * the budget. */

static answer_refusal answer_take_bytes(void *cls, size_t n, int force)
{
    request_state *st = cls;
    http_server *s = st->server;
    if (force) {
        atomic_fetch_add(&s->buffered, n);
    } else {
        if (!answer_fits(s->client_budget, st->cap + st->answer_held, n))
            return ANSWER_TOO_LARGE;
        if (http_budget_take(s, n) != 0)
            return ANSWER_OVERLOADED;
    }
    st->answer_held += n;
    return ANSWER_OK;
}

static void answer_give_bytes(void *cls, size_t n)
{
    request_state *st = cls;
    if (n > st->answer_held)
        n = st->answer_held;
    st->answer_held -= n;
    http_budget_release(st->server, n);
}

void http_answer_settle(request_state *st)
{
    http_budget_release(st->server, st->answer_held);
    st->answer_held = 0;
}

void http_run_handler(http_server *s, request_state *st, api_response *res)
{
    void (*resume)(void *, api_response *) = st->resume;
    if (!resume) /* a continuation keeps counting on the request's account */
        st->account = (answer_account){answer_take_bytes, answer_give_bytes, st, ANSWER_OK, 0, 0,
                                       s->client_budget};
    st->resume = NULL;
    st->drop = NULL;
    answer_bind(&st->account);
    if (resume)
        resume(st->job, res);
    else
        s->h.dispatch(&st->req, res, s->h.cls);
    answer_bind(NULL);
    if (res->resume || st->account.refused == ANSWER_OK)
        return;
    /* What the handler made of a refused answer (most often a 500 "out
     * of memory") is replaced: the answer would have passed a limit. */
    free(res->body);
    free(res->header_block);
    int overloaded = st->account.refused == ANSWER_OVERLOADED;
    *res = (api_response){.status = overloaded ? 503 : 413};
    if (overloaded)
        st->retry_after = 1;
    s->h.refuse(overloaded ? HTTP_REFUSED_ANSWER_OVERLOADED : HTTP_REFUSED_ANSWER_TOO_LARGE, NULL,
                res, s->h.cls);
}
