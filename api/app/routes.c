/* The route table and the dispatch in front of every handler: match the
 * path, check the method, the session id, the caller's key and the body's
 * media type, then hand over. */
#include "routes.h"

#include "answers.h"
#include "host_guard.h"
#include "json_span.h"
#include "mcp.h"
#include "proxy.h"
#include "session_id.h"
#include "tenants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    const char *method;
    const char *pattern; /* {session}: one segment; {key}: the rest of the path */
    handler_fn fn;
    int takes_body;
    route_metrics_kind metrics;
} route;

static const route routes[] = {
    {"POST", "/v1/sessions/{session}/compact", handle_compact, 1, ROUTE_METRICS_COMPACTION},
    {"POST", "/v1/sessions/{session}/verify", handle_verify, 1, ROUTE_METRICS_AUDIT},
    {"POST", "/v1/sessions/{session}/messages/compact", handle_messages_compact, 1,
     ROUTE_METRICS_COMPACTION},
    {"POST", "/v1/sessions/{session}/messages/verify", handle_messages_verify, 1,
     ROUTE_METRICS_AUDIT},
    {"POST", "/v1/tokens", handle_tokens, 1, ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/spills", handle_spill_list, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/spills/{key}", handle_spill_get, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/events", handle_events, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/v1/sessions/{session}/tools", handle_session_tools, 0, ROUTE_METRICS_PLAIN},
    {"POST", "/v1/sessions/{session}/reacquire", handle_session_reacquire, 1, ROUTE_METRICS_PLAIN},
    /* Checks its media type itself, as /mcp does. */
    {"POST", "/v1/sessions/{session}/mcp", handle_session_mcp, 0, ROUTE_METRICS_PLAIN},
    {"DELETE", "/v1/sessions/{session}", handle_session_delete, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/healthz", handle_healthz, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/readyz", handle_readyz, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/metrics", handle_metrics, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/openapi.yaml", handle_openapi, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/ui", handle_ui, 0, ROUTE_METRICS_PLAIN},
    {"GET", "/ui/{key}", handle_ui, 0, ROUTE_METRICS_PLAIN},
    /* Authenticates and checks its media type itself: MCP's Origin check
     * comes first. */
    {"POST", "/mcp", handle_mcp, 0, ROUTE_METRICS_PLAIN},
    /* The providers' APIs, compacted on the way (docs/proxy.md). */
    {"POST", "/proxy/openai/v1/chat/completions", handle_proxy_chat, 1, ROUTE_METRICS_COMPACTION},
    {"POST", "/proxy/openai/v1/responses", handle_proxy_responses, 1, ROUTE_METRICS_COMPACTION},
    {"POST", "/proxy/anthropic/v1/messages", handle_proxy_messages, 1, ROUTE_METRICS_COMPACTION},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

size_t route_count(void)
{
    return NROUTES;
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

/* ---- Dispatch ---- */

void app_dispatch(api_request *req, api_response *res, void *cls)
{
    const app *a = cls;
    const route *found = NULL;
    const char *session = NULL, *key = NULL;
    size_t session_len = 0;
    char allow[64] = "";

    for (size_t i = 0; i < NROUTES; i++) {
        const char *s = NULL, *k = NULL;
        size_t sl = 0;
        if (!match(routes[i].pattern, req->path, req->session_len, &s, &sl, &k))
            continue;
        req->facts.route = (int)i;
        req->facts.route_name = routes[i].pattern;
        if (method_serves(routes[i].method, req->method)) {
            found = &routes[i];
            session = s;
            session_len = sl;
            key = k;
            break;
        }
        if (!strstr(allow, routes[i].method))
            snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
                     allow[0] ? ", " : "", routes[i].method);
    }

    if (!found && allow[0]) {
        static _Thread_local char allow_header[64];
        memcpy(allow_header, allow, sizeof(allow));
        respond_fail(res, ERR_METHOD_NOT_ALLOWED, "method %s is not allowed on %s; allowed: %s",
                     req->method, req->path, allow);
        res->allow = allow_header;
        return;
    }
    if (!found) {
        respond_fail(res, ERR_NOT_FOUND, "no route for %s %s", req->method, req->path);
        return;
    }

    /* DNS rebinding: a foreign Origin, or without API keys a Host that is
     * not ours, is refused on every route (/mcp answers it as JSON-RPC). */
    const char *refused = found->fn == handle_mcp ? NULL
                                                  : host_guard_refusal(&a->hosts, a->keys == NULL,
                                                                       api_header(req, "Host"),
                                                                       api_header(req, "Origin"));
    if (refused) {
        respond_fail(res, ERR_FORBIDDEN, "%s", refused);
        return;
    }

    /* Every /v1 route needs the caller's key, with or without a session. */
    const char *tenant = "default";
    if (strncmp(found->pattern, "/v1/", 4) == 0 && a->keys &&
        !(tenant = tenants_authenticate_request(a->keys, req))) {
        respond_fail(res, ERR_UNAUTHORIZED,
                     "exactly one valid \"Authorization: Bearer <api-key>\" header is required");
        res->www_authenticate = "Bearer realm=\"compactd\"";
        return;
    }
    /* A proxied request's Authorization is the provider's: compactd's key
     * comes in X-Compactd-Key. */
    if (strncmp(found->pattern, "/proxy/", 7) == 0 && !(req->tenant = proxy_tenant(a, req))) {
        respond_fail(res, ERR_UNAUTHORIZED,
                     "exactly one valid \"X-Compactd-Key: <api-key>\" header is required");
        return;
    }
    if (session) {
        if (!session_id_valid(session, session_len)) {
            respond_fail(res, ERR_INVALID_REQUEST,
                         "session id must be " SESSION_ID_RULE ", a '/' written %%2F in a path");
            return;
        }
        memcpy(req->session, session, session_len);
        req->session[session_len] = '\0';
        req->tenant = tenant;
        snprintf(req->ns, sizeof(req->ns), "%s:%s", tenant, req->session);
        req->tail = key;
    }

    if (found->takes_body && !api_content_is_json(req)) {
        respond_fail(res, ERR_UNSUPPORTED_MEDIA_TYPE,
                     "the request body must be sent as Content-Type: application/json");
        return;
    }
    found->fn(a, req, res);
}

/* The operator's routes and the inspector page's files need neither Redis
 * (readiness is cached) nor a body: they are answered without waiting
 * behind work in the pool. */
int app_runs_inline(const api_request *req, void *cls)
{
    (void)cls;
    for (size_t i = 0; i < NROUTES; i++) {
        const char *s = NULL, *k = NULL;
        size_t sl = 0;
        handler_fn fn = routes[i].fn;
        if (method_serves(routes[i].method, req->method) &&
            match(routes[i].pattern, req->path, req->session_len, &s, &sl, &k))
            return fn == handle_healthz || fn == handle_readyz || fn == handle_metrics ||
                   fn == handle_openapi || fn == handle_ui;
    }
    return 1; /* 404 or 405: nothing to run */
}

/* 1 when the body's top-level member name is exactly the JSON text want
 * (written without escapes, as compactd's clients write them). */
static int member_is(const api_request *req, const char *name, const char *want)
{
    size_t v0, v1, n = strlen(want);
    return req->body && json_span_member(req->body, req->body_len, 0, name, &v0, &v1) == 0 &&
           v1 - v0 == n && memcmp(req->body + v0, want, n) == 0;
}

/* Token counts, dry runs (which write neither spills nor the decision log)
 * and a single MCP message other than tools/call never wait on Redis: they
 * run on a pool of their own, never queued behind requests a stalled Redis
 * holds. Compactions start there too: they are planned there, and only a
 * commit that waits on Redis is handed on (api_hand_on()). A body this
 * scan misreads only lands in the other pool; the handler still decodes it
 * strictly. */
int app_needs_store(const api_request *req, void *cls)
{
    (void)cls;
    for (size_t i = 0; i < NROUTES; i++) {
        const char *s = NULL, *k = NULL;
        size_t sl = 0;
        handler_fn fn = routes[i].fn;
        if (!method_serves(routes[i].method, req->method) ||
            !match(routes[i].pattern, req->path, req->session_len, &s, &sl, &k))
            continue;
        if (fn == handle_tokens || fn == handle_compact || fn == handle_messages_compact ||
            fn == handle_session_tools)
            return 0;
        if (fn == handle_verify || fn == handle_messages_verify)
            return !member_is(req, "dry_run", "true");
        if (fn == handle_mcp || fn == handle_session_mcp) {
            size_t at = req->body ? json_span_skip_ws(req->body, 0, req->body_len) : 0;
            size_t v0, v1;
            if (!req->body || at >= req->body_len || req->body[at] != '{' ||
                json_span_member(req->body, req->body_len, at, "method", &v0, &v1) != 0)
                return 1;
            /* An escaped name may spell tools/call: counted as one. */
            return member_is(req, "method", "\"tools/call\"") ||
                   memchr(req->body + v0, '\\', v1 - v0) != NULL;
        }
        return 1;
    }
    return 1;
}
