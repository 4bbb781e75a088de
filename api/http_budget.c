/* The memory budget that request bodies and responses in flight share
 * (COMPACTD_MAX_INFLIGHT_BYTES). */
#include "http_internal.h"

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
    atomic_fetch_sub(&s->buffered, n);
}

size_t http_server_buffered_bytes(const void *s)
{
    return atomic_load(&((http_server *)s)->buffered);
}
