/* What every handler shares: the configuration and the process-wide parts
 * built from it at start-up. */
#ifndef COMPACTD_HANDLERS_H
#define COMPACTD_HANDLERS_H

#include "api_call.h"
#include "config.h"
#include "host_guard.h"
#include "metrics.h"
#include "request.h"
#include "respond.h"

typedef struct tenants tenants;

typedef struct {
    const config *cfg;
    const tenants *keys; /* NULL: one open tenant */
    host_rules hosts;    /* borrowed from cfg */
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
void handle_ui(const app *a, api_request *req, api_response *res);

#endif
