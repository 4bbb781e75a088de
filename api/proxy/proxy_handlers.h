/* One proxied call as its handler carries it through its steps: the
 * compaction (proxy_compact.c), then the upstream's rounds and the relay
 * of the answer (proxy_handlers.c). Only api/proxy/ includes it. */
#ifndef COMPACTD_PROXY_HANDLERS_H
#define COMPACTD_PROXY_HANDLERS_H

#include "proxy_internal.h"

typedef struct {
    const app *a;
    api_request *req;
    api_response *res;
    const proxy_api *api;
    proxy_headers h;
    proxy_body b;
    ops_scope scope;
    char *tool; /* the reacquire tool's definition, or NULL; owned */
    /* What the compaction did, for the answer's headers. */
    int64_t budget, used_tokens;
    int64_t room; /* tokens the budget still has beside the history */
    char plan[32];
    size_t pointers;
    int tool_added;
    int rounds;     /* reacquire rounds answered */
    json_t *usage;  /* every round's usage, summed (proxy_usage_add()) */
    json_t *shown;  /* whole answers: what the client sees of earlier rounds */
    char *upstream; /* the upstream's body; owned */
    size_t upstream_len;
} proxy_call;

/* Compacts pc's history and makes the upstream's body. 0, or -1 with
 * pc->res answered. */
int proxy_compact(proxy_call *pc);

/* Makes body (len bytes, taken) the upstream's, its bytes counted in what
 * the request may hold (answer_account.h) in place of the last one's. 0, or
 * -1 with pc->res answered (413 or 503: it would pass a limit; 500). */
int proxy_set_upstream(proxy_call *pc, char *body, size_t len);
/* Frees the upstream's body and gives its bytes back. */
void proxy_drop_upstream(proxy_call *pc);

#endif
