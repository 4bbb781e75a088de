/* The route table: which handler answers which method and path, and how
 * the HTTP server, the metrics and the access log see each route. */
#ifndef COMPACTD_ROUTES_H
#define COMPACTD_ROUTES_H

#include "handlers.h"
#include "metrics.h"

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
 * counts, dry runs, MCP messages other than tools/call), 1 for the rest. */
int app_needs_store(const api_request *req, void *cls);

#endif
