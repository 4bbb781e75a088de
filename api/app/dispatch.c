/* What the application hands the transport (http_server.h's callbacks): a
 * request matched once when its headers are in, its pool read off its
 * route, the checks in front of every handler (Host and Origin, the key,
 * the session id, the media type), the words of the transport's own
 * refusals, and the request's end (metrics, access log). */
#include "dispatch.h"

#include "access_log.h"
#include "answers.h"
#include "host_guard.h"
#include "proxy.h"
#include "routes.h"
#include "session_id.h"
#include "tenants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The application's state for one request (api_request.app). */
typedef struct {
    api_call call; /* first: api_call_of() reads it */
    route_match match;
} app_request;

/* ---- Begin and end ---- */

static int app_begin(api_request *req, void *cls)
{
    (void)cls;
    app_request *ar = calloc(1, sizeof(*ar));
    if (!ar)
        return HTTP_BEGIN_FAILED;
    route_find(req->method, req->path, route_session_length(req->target), &ar->match);
    ar->call.facts.route = ar->match.index;
    ar->call.facts.route_name =
        ar->match.index >= 0 ? route_pattern((size_t)ar->match.index) : "unmatched";
    req->app = ar;
    return route_runs_inline(ar->match.row);
}

static http_pool_kind app_pool(const api_request *req, void *cls)
{
    const app_request *ar = req->app;
    (void)cls;
    return route_pool(ar->match.row, req->body, req->body_len);
}

static int app_here(const api_request *req, void *cls)
{
    const app_request *ar = req->app;
    (void)cls;
    return route_runs_here(ar->match.row, req->body_len);
}

static void app_end(api_request *req, void *cls)
{
    (void)cls;
    free(req->app);
    req->app = NULL;
}

static void app_completed(const api_request *req, int status, const char *body, size_t len,
                          double seconds, void *cls)
{
    static const request_facts unmatched = {.route = -1, .route_name = "unmatched"};
    const app *a = cls;
    const api_call *c = api_call_of(req);
    metrics_record(c ? &c->facts : &unmatched, status, seconds);
    access_log_write(a->cfg->log_level, req, status, body, len, seconds);
}

/* ---- The transport's own refusals ---- */

static void app_refuse(http_refusal why, const char *detail, api_response *res, void *cls)
{
    const app *a = cls;
    switch (why) {
    case HTTP_REFUSED_FRAMING:
        respond_fail(res, ERR_INVALID_REQUEST, "%s", detail ? detail : "the request is malformed");
        return;
    case HTTP_REFUSED_TOO_LARGE:
        respond_fail(res, ERR_TOO_LARGE,
                     "request body is larger than the configured limit (COMPACTD_MAX_BODY_BYTES)");
        return;
    case HTTP_REFUSED_OVERLOADED:
        respond_fail(res, ERR_OVERLOADED,
                     "the server holds as many request and response bytes as it may "
                     "(COMPACTD_MAX_INFLIGHT_BYTES); retry shortly");
        return;
    case HTTP_REFUSED_ANSWER_TOO_LARGE:
        respond_fail(res, ERR_TOO_LARGE,
                     "the answer would be larger than the %zu bytes one client may hold, its "
                     "request body included (COMPACTD_MAX_CLIENT_INFLIGHT_BYTES)",
                     a->cfg->max_client_inflight_bytes);
        return;
    case HTTP_REFUSED_ANSWER_OVERLOADED:
        respond_fail(res, ERR_OVERLOADED,
                     "the answer does not fit in what the server may hold now "
                     "(COMPACTD_MAX_INFLIGHT_BYTES); retry shortly");
        return;
    case HTTP_REFUSED_SHUTTING_DOWN:
    case HTTP_REFUSALS:
        break;
    }
    respond_fail(res, ERR_OVERLOADED, "shutting down: the request was not run");
}

/* ---- Dispatch ---- */

/* Who asks: the tenant the row's key check opens, "default" without API
 * keys or when the row checks no key; NULL (answered 401) when the key is
 * wrong or missing. */
static const char *caller(const app *a, const route *row, api_request *req, api_response *res)
{
    if ((row->flags & ROUTE_KEY_BEARER) && a->keys) {
        const char *tenant = tenants_authenticate_request(a->keys, req);
        if (!tenant) {
            respond_fail(res, ERR_UNKNOWN_CALLER,
                         "exactly one valid \"Authorization: Bearer <api-key>\" header is "
                         "required");
            res->www_authenticate = "Bearer realm=\"compactd\"";
        }
        return tenant;
    }
    if (row->flags & ROUTE_KEY_HEADER) {
        const char *tenant = proxy_tenant(a, req);
        if (!tenant)
            respond_fail(res, ERR_UNKNOWN_CALLER,
                         "exactly one valid \"X-Compactd-Key: <api-key>\" header is required");
        return tenant;
    }
    return "default";
}

static void app_dispatch(api_request *req, api_response *res, void *cls)
{
    const app *a = cls;
    app_request *ar = req->app;
    const route_match *m = &ar->match;
    const route *row = m->row;
    api_call *c = &ar->call;

    if (!row && m->allow[0]) {
        respond_fail(res, ERR_WRONG_METHOD, "method %s is not allowed on %s; allowed: %s",
                     req->method, req->path, m->allow);
        res->allow = m->allow;
        return;
    }
    if (!row) {
        respond_fail(res, ERR_NOT_FOUND, "no route for %s %s", req->method, req->path);
        return;
    }
    /* DNS rebinding: a foreign Origin, or without API keys a Host that is
     * not ours, is refused on every route (/mcp answers it as JSON-RPC). */
    const char *refused =
        row->flags & ROUTE_OWN_GUARD
            ? NULL
            : host_guard_refusal(&a->hosts, a->keys == NULL, api_header(req, "Host"),
                                 api_header(req, "Origin"));
    if (refused) {
        respond_fail(res, ERR_FOREIGN_ORIGIN, "%s", refused);
        return;
    }
    const char *tenant = caller(a, row, req, res);
    if (!tenant)
        return;
    if (row->flags & ROUTE_KEY_HEADER)
        c->tenant = tenant;
    if (m->session) {
        if (!session_id_valid(m->session, m->session_len)) {
            respond_fail(res, ERR_INVALID_REQUEST,
                         "session id must be " SESSION_ID_RULE ", a '/' written %%2F in a path");
            return;
        }
        memcpy(c->session, m->session, m->session_len);
        c->session[m->session_len] = '\0';
        c->tenant = tenant;
        snprintf(c->ns, sizeof(c->ns), "%s:%s", tenant, c->session);
        c->tail = m->key;
    }
    if ((row->flags & ROUTE_JSON_BODY) && !api_content_is_json(req)) {
        respond_fail(res, ERR_NOT_JSON,
                     "the request body must be sent as Content-Type: application/json");
        return;
    }
    row->fn(a, req, res);
}

http_handlers app_http_handlers(const app *a)
{
    http_handlers h = {app_begin,  app_pool, app_dispatch, app_completed,
                       app_refuse, app_end,  (void *)a,    app_here};
    return h;
}
