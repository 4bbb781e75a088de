/* What every handler shares: the configuration and the process-wide parts
 * built from it at start-up. */
#ifndef COMPACTD_HANDLERS_H
#define COMPACTD_HANDLERS_H

#include "config.h"
#include "host_guard.h"
#include "metrics.h"
#include "request.h"

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

#endif
