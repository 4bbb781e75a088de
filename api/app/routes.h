/* The route table: one row per route with its method, path pattern and
 * handler, where it runs, what the dispatch checks before the handler
 * (flags) and what the metrics count it as. A request is matched once,
 * when its headers are in (route_find()); the match is kept with the
 * request, and everything after reads the row. */
#ifndef COMPACTD_ROUTES_H
#define COMPACTD_ROUTES_H

#include "handlers.h"
#include "http_server.h"
#include "metrics.h"

/* Where a route's handler runs: on libmicrohttpd's own threads, on one of
 * the transport's pools, or on a pool a rule reads off the body (each rule
 * written once, in route_pool()). */
typedef enum {
    ROUTE_RUNS_INLINE,       /* needs neither Redis nor a body: the I/O threads */
    ROUTE_RUNS_LOCAL,        /* never waits on Redis; hands on a commit that does */
    ROUTE_RUNS_STORE,        /* may wait on Redis */
    ROUTE_RUNS_UPSTREAM,     /* waits on a provider's answer */
    ROUTE_RUNS_BY_DRY_RUN,   /* the local pool with "dry_run": true, else the store's */
    ROUTE_RUNS_BY_RPC_METHOD /* the local pool for one JSON-RPC message other than
                              * tools/call, else the store's */
} route_runs;

/* What the dispatch checks before the handler, or-ed. */
enum {
    /* The body must be sent as application/json: 415 otherwise. */
    ROUTE_JSON_BODY = 1 << 0,
    /* With API keys, compactd's key in "Authorization: Bearer": 401
     * otherwise. */
    ROUTE_KEY_BEARER = 1 << 1,
    /* compactd's key in X-Compactd-Key (the proxy: Authorization is the
     * provider's). */
    ROUTE_KEY_HEADER = 1 << 2,
    /* The handler checks Host and Origin itself, and the key after them
     * (MCP answers a refusal as JSON-RPC). */
    ROUTE_OWN_GUARD = 1 << 3,
    /* Not a check: a request of a ROUTE_RUNS_LOCAL row whose body is at
     * most ROUTE_HERE_MAX_BODY bytes runs on its connection's own thread
     * (route_runs_here()). */
    ROUTE_SMALL_HERE = 1 << 4,
};

/* The largest body a ROUTE_SMALL_HERE request runs on its connection's
 * thread with: a compaction of it is read and planned in a few hundred
 * microseconds, the longest the other connections of that thread (a probe
 * among them) then wait. */
#define ROUTE_HERE_MAX_BODY (64 * 1024)

typedef struct {
    const char *method;
    const char *pattern; /* {session}: one segment; {key}: the rest of the path */
    handler_fn fn;
    route_runs runs;
    unsigned flags;
    route_metrics_kind metrics;
} route;

/* What route_find() found for a request. Its pointers point into the path
 * it was given. */
typedef struct {
    const route *row;    /* the route serving the method and path; NULL: none */
    int index;           /* the path's route in the table (for a 405 too); -1: none */
    const char *session; /* the {session} segment, its syntax unchecked */
    size_t session_len;
    const char *key; /* the {key} rest of the path */
    char allow[64];  /* no row: the methods the path allows, "" when none (404) */
} route_match;

/* Matches a request's method and path (percent-decoded) against the
 * table; GET routes serve HEAD too. session_len, when not 0, is the
 * {session} segment's decoded length as the raw target delimits it (an id
 * written agent%2F42 is one segment): route_session_length(). */
void route_find(const char *method, const char *path, size_t session_len, route_match *m);

/* The decoded length of the raw target's segment after "/v1/sessions/", or
 * 0 when it has none. */
size_t route_session_length(const char *target);

/* Where a request matched to row (NULL: none, answered at once) runs:
 * HTTP_RUNS_INLINE or HTTP_RUNS_IN_POOL. */
int route_runs_inline(const route *row);

/* The pool of a request matched to row that does not run inline, read off
 * its body for the rows that decide by it. */
http_pool_kind route_pool(const route *row, const char *body, size_t len);

/* 1 when a request matched to row with a body of len bytes, put on the
 * local pool, runs on its connection's thread instead (http_handlers.here). */
int route_runs_here(const route *row, size_t len);

/* The table, for the metrics and the tests: n rows, row i. */
size_t route_count(void);
const route *route_at(size_t i);
const char *route_pattern(size_t i);
route_metrics_kind route_metrics(size_t i);

#endif
