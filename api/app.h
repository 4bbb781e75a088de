/* What every handler shares: the configuration and the process-wide parts
 * built from it at start-up. */
#ifndef COMPACTD_APP_H
#define COMPACTD_APP_H

#include "config.h"
#include "request.h"

typedef struct tenants tenants;

typedef struct {
    const config *cfg;
    const tenants *keys; /* NULL: one open tenant */
} app;

/* ---- Handlers (one per route) ---- */

typedef void (*handler_fn)(const app *a, api_request *req, api_response *res);

void handle_compact(const app *a, api_request *req, api_response *res);
void handle_verify(const app *a, api_request *req, api_response *res);
void handle_messages_compact(const app *a, api_request *req, api_response *res);
void handle_messages_verify(const app *a, api_request *req, api_response *res);
void handle_tokens(const app *a, api_request *req, api_response *res);
void handle_spill_list(const app *a, api_request *req, api_response *res);
void handle_spill_get(const app *a, api_request *req, api_response *res);
void handle_session_delete(const app *a, api_request *req, api_response *res);
void handle_events(const app *a, api_request *req, api_response *res);
void handle_healthz(const app *a, api_request *req, api_response *res);
void handle_readyz(const app *a, api_request *req, api_response *res);
void handle_metrics(const app *a, api_request *req, api_response *res);
void handle_openapi(const app *a, api_request *req, api_response *res);
void handle_mcp(const app *a, api_request *req, api_response *res);
void handle_session_mcp(const app *a, api_request *req, api_response *res);
void handle_session_tools(const app *a, api_request *req, api_response *res);
void handle_session_reacquire(const app *a, api_request *req, api_response *res);
void handle_ui(const app *a, api_request *req, api_response *res);

/* ---- Response helpers for handlers ---- */

/* Answers with err's status and JSON body. */
void respond_error(api_response *res, const compactd_error *err);

/* Answers with kind and a printf-style message. */
void respond_fail(api_response *res, error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Answers status with body (owned; NULL means out of memory: answered 500). */
void respond_json(api_response *res, int status, char *body, size_t len);

/* 1 when s (n bytes) is a valid session id: 1-128 of [A-Za-z0-9._~-]. */
int session_id_valid(const char *s, size_t n);

/* 1 when the Content-Type value ct is application/json (parameters allowed). */
int is_json_media_type(const char *ct);

/* What the metrics count a route's outcomes as. */
typedef enum {
    ROUTE_METRICS_PLAIN = 0,  /* requests and durations only */
    ROUTE_METRICS_COMPACTION, /* also compactd_compactions_total by outcome */
    ROUTE_METRICS_AUDIT       /* also compactd_verifications_total by verdict */
} route_metrics_kind;

/* The route table, for the metrics: patterns and kinds by index, i <
 * route_count(). */
size_t route_count(void);
const char *route_pattern(size_t i);
route_metrics_kind route_metrics(size_t i);

/* Dispatches one request through the route table (http_handlers.dispatch). */
void app_dispatch(api_request *req, api_response *res, void *cls);

/* http_handlers.runs_inline: 1 for the operator's routes and for requests
 * that match no route or method (answered 404 or 405 at once). */
int app_runs_inline(const api_request *req, void *cls);

/* http_handlers.needs_store: 0 for requests that never wait on Redis (token
 * counts, tool definitions, dry runs, MCP messages other than tools/call),
 * 1 for the rest. */
int app_needs_store(const api_request *req, void *cls);

#endif
