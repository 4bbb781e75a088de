/* The route table (routes.h) and its matching: a request is matched once,
 * when its headers are in, and its pool is read off its row. */
#include "routes.h"

#include "json_span.h"
#include "mcp.h"
#include "proxy.h"

#include <stdio.h>
#include <string.h>

/* Every /v1 route needs the caller's key, with or without a session. */
#define V1 ROUTE_KEY_BEARER
#define V1_JSON (ROUTE_KEY_BEARER | ROUTE_JSON_BODY)

static const route routes[] = {
    /* Small compactions are read and planned on the connection's thread:
     * one that spills nothing answers there, with no hand-off. */
    {"POST", "/v1/sessions/{session}/compact", handle_compact, ROUTE_RUNS_LOCAL,
     V1_JSON | ROUTE_SMALL_HERE, ROUTE_METRICS_COMPACTION},
    {"POST", "/v1/sessions/{session}/verify", handle_verify, ROUTE_RUNS_BY_DRY_RUN, V1_JSON,
     ROUTE_METRICS_AUDIT},
    {"POST", "/v1/sessions/{session}/messages/compact", handle_messages_compact, ROUTE_RUNS_LOCAL,
     V1_JSON, ROUTE_METRICS_COMPACTION},
    {"POST", "/v1/sessions/{session}/messages/verify", handle_messages_verify,
     ROUTE_RUNS_BY_DRY_RUN, V1_JSON, ROUTE_METRICS_AUDIT},
    {"POST", "/v1/tokens", handle_tokens, ROUTE_RUNS_LOCAL, V1_JSON, ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/spills", handle_spill_list, ROUTE_RUNS_STORE, V1,
     ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/spills/{key}", handle_spill_get, ROUTE_RUNS_STORE, V1,
     ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/events", handle_events, ROUTE_RUNS_STORE, V1,
     ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/tools", handle_session_tools, ROUTE_RUNS_LOCAL, V1,
     ROUTE_METRICS_PLAIN},
    {"POST", "/v1/sessions/{session}/reacquire", handle_session_reacquire, ROUTE_RUNS_STORE,
     V1_JSON, ROUTE_METRICS_PLAIN},
    /* Checks its media type itself, as /mcp does. */
    {"POST", "/v1/sessions/{session}/mcp", handle_session_mcp, ROUTE_RUNS_BY_RPC_METHOD, V1,
     ROUTE_METRICS_PLAIN},
    {"DELETE", "/v1/sessions/{session}", handle_session_delete, ROUTE_RUNS_STORE, V1,
     ROUTE_METRICS_PLAIN},
    /* The operator's routes and the inspector page's files need neither
     * Redis (readiness is cached) nor a body: answered without waiting
     * behind work in the pools. */
    {"GET", "/healthz", handle_healthz, ROUTE_RUNS_INLINE, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/readyz", handle_readyz, ROUTE_RUNS_INLINE, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/metrics", handle_metrics, ROUTE_RUNS_INLINE, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/openapi.yaml", handle_openapi, ROUTE_RUNS_INLINE, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/ui", handle_ui, ROUTE_RUNS_INLINE, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/ui/{key}", handle_ui, ROUTE_RUNS_INLINE, 0, ROUTE_METRICS_PLAIN},
    /* Checks Host and Origin, then the key and its media type itself:
     * MCP's Origin check comes first, answered as JSON-RPC. */
    {"POST", "/mcp", handle_mcp, ROUTE_RUNS_BY_RPC_METHOD, ROUTE_OWN_GUARD, ROUTE_METRICS_PLAIN},
    /* The providers' APIs, compacted on the way (docs/proxy.md): a call
     * holds its thread until the upstream's answer is through. */
    {"POST", "/proxy/openai/v1/chat/completions", handle_proxy_chat, ROUTE_RUNS_UPSTREAM,
     ROUTE_KEY_HEADER | ROUTE_JSON_BODY, ROUTE_METRICS_COMPACTION},
    {"POST", "/proxy/openai/v1/responses", handle_proxy_responses, ROUTE_RUNS_UPSTREAM,
     ROUTE_KEY_HEADER | ROUTE_JSON_BODY, ROUTE_METRICS_COMPACTION},
    {"POST", "/proxy/anthropic/v1/messages", handle_proxy_messages, ROUTE_RUNS_UPSTREAM,
     ROUTE_KEY_HEADER | ROUTE_JSON_BODY, ROUTE_METRICS_COMPACTION},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

size_t route_count(void)
{
    return NROUTES;
}

const route *route_at(size_t i)
{
    return &routes[i];
}

const char *route_pattern(size_t i)
{
    return routes[i].pattern;
}

route_metrics_kind route_metrics(size_t i)
{
    return routes[i].metrics;
}

/* ---- Matching ---- */

/* Whether a route of method serves a request of method asked: its own, and
 * HEAD where it is GET (libmicrohttpd sends the headers of a HEAD answer,
 * Content-Length included, and no body). */
static int method_serves(const char *method, const char *asked)
{
    return strcmp(method, asked) == 0 || (strcmp(asked, "HEAD") == 0 && strcmp(method, "GET") == 0);
}

/* Matches path against pattern, capturing {session} and {key}. Returns 1 on
 * a match. The session is captured whatever its syntax and checked later,
 * so that a bad id is a clear 400 rather than a 404. seg_len, when not 0,
 * is the session's decoded length as the raw target delimits it (an id
 * written agent%2F42 is one segment). */
static int match(const char *pattern, const char *path, size_t seg_len, const char **session,
                 size_t *session_len, const char **key)
{
    const char *p = pattern, *s = path;
    while (*p) {
        if (strncmp(p, "{session}", 9) == 0) {
            size_t n = seg_len && seg_len <= strlen(s) ? seg_len : strcspn(s, "/");
            if (n == 0)
                return 0;
            *session = s;
            *session_len = n;
            s += n;
            p += 9;
        } else if (strncmp(p, "{key}", 5) == 0) {
            if (*s == '\0')
                return 0;
            *key = s;
            return p[5] == '\0';
        } else {
            if (*p != *s)
                return 0;
            p++;
            s++;
        }
    }
    return *s == '\0';
}

void route_find(const char *method, const char *path, size_t session_len, route_match *m)
{
    *m = (route_match){.index = -1};
    for (size_t i = 0; i < NROUTES; i++) {
        const char *sess = NULL, *key = NULL;
        size_t sl = 0;
        if (!match(routes[i].pattern, path, session_len, &sess, &sl, &key))
            continue;
        m->index = (int)i;
        if (method_serves(routes[i].method, method)) {
            m->row = &routes[i];
            m->session = sess;
            m->session_len = sl;
            m->key = key;
            m->allow[0] = '\0';
            return;
        }
        if (!strstr(m->allow, routes[i].method))
            snprintf(m->allow + strlen(m->allow), sizeof(m->allow) - strlen(m->allow), "%s%s",
                     m->allow[0] ? ", " : "", routes[i].method);
    }
}

size_t route_session_length(const char *target)
{
    static const char prefix[] = "/v1/sessions/";
    if (!target || strncmp(target, prefix, sizeof(prefix) - 1) != 0)
        return 0;
    const char *seg = target + sizeof(prefix) - 1;
    return api_unescaped_length(seg, strcspn(seg, "/?"));
}

/* ---- Where a route runs ---- */

int route_runs_inline(const route *row)
{
    /* No route: a 404 or 405, answered at once. */
    return !row || row->runs == ROUTE_RUNS_INLINE ? HTTP_RUNS_INLINE : HTTP_RUNS_IN_POOL;
}

/* 1 when the body's top-level member name is exactly the JSON text want
 * (written without escapes, as compactd's clients write them). */
static int member_is(const char *body, size_t len, const char *name, const char *want)
{
    size_t v0, v1, n = strlen(want);
    return body && json_span_member(body, len, 0, name, &v0, &v1) == 0 && v1 - v0 == n &&
           memcmp(body + v0, want, n) == 0;
}

/* A single JSON-RPC message whose method cannot be tools/call never waits
 * on Redis; a batch, a body that is no object, and an escaped name that
 * may spell tools/call count as one that may. */
static int rpc_may_call_tools(const char *body, size_t len)
{
    size_t at = body ? json_span_skip_ws(body, 0, len) : 0;
    size_t v0, v1;
    if (!body || at >= len || body[at] != '{' ||
        json_span_member(body, len, at, "method", &v0, &v1) != 0)
        return 1;
    return member_is(body, len, "method", "\"tools/call\"") || memchr(body + v0, '\\', v1 - v0);
}

/* Token counts, dry runs (which write neither spills nor the decision log)
 * and a single MCP message other than tools/call never wait on Redis: they
 * run on a pool of their own, never queued behind requests a stalled Redis
 * holds. Compactions start there too: they are planned there, and only a
 * commit that waits on Redis is handed on (api_hand_on()). A body these
 * rules misread only lands in the other pool; the handler still decodes it
 * strictly. */
http_pool_kind route_pool(const route *row, const char *body, size_t len)
{
    switch (row ? row->runs : ROUTE_RUNS_STORE) {
    case ROUTE_RUNS_LOCAL:
        return HTTP_POOL_LOCAL;
    case ROUTE_RUNS_UPSTREAM:
        return HTTP_POOL_UPSTREAM;
    case ROUTE_RUNS_BY_DRY_RUN:
        return member_is(body, len, "dry_run", "true") ? HTTP_POOL_LOCAL : HTTP_POOL_STORE;
    case ROUTE_RUNS_BY_RPC_METHOD:
        return rpc_may_call_tools(body, len) ? HTTP_POOL_STORE : HTTP_POOL_LOCAL;
    case ROUTE_RUNS_INLINE:
    case ROUTE_RUNS_STORE:
        break;
    }
    return HTTP_POOL_STORE;
}

int route_runs_here(const route *row, size_t len)
{
    return row && row->runs == ROUTE_RUNS_LOCAL && (row->flags & ROUTE_SMALL_HERE) &&
           len <= ROUTE_HERE_MAX_BODY;
}
