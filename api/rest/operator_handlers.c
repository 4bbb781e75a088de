/* Handlers an operator uses: liveness, readiness, metrics and the served
 * spec. */
#include "handlers.h"

#include "metrics.h"
#include "readiness.h"

#include <stdlib.h>
#include <string.h>

static void respond_static(api_response *res, int status, const char *type, const char *body,
                           size_t len)
{
    res->body = malloc(len + 1);
    if (!res->body) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        return;
    }
    memcpy(res->body, body, len);
    res->body[len] = '\0';
    res->len = len;
    res->status = status;
    res->content_type = type;
}

void handle_healthz(const app *a, api_request *req, api_response *res)
{
    static const char ok[] = "{\"status\":\"ok\"}";
    (void)a;
    (void)req;
    respond_static(res, 200, "application/json", ok, sizeof(ok) - 1);
}

void handle_readyz(const app *a, api_request *req, api_response *res)
{
    static const char ready[] = "{\"status\":\"ready\"}";
    char why[320];
    (void)a;
    if (!readiness_ready(why, sizeof(why))) {
        api_call_of(req)->facts.outcome = OUTCOME_STORE_UNAVAILABLE;
        respond_fail(res, ERR_STORE_UNAVAILABLE, "%s", why);
        return;
    }
    respond_static(res, 200, "application/json", ready, sizeof(ready) - 1);
}

void handle_metrics(const app *a, api_request *req, api_response *res)
{
    size_t len;
    (void)a;
    (void)req;
    char *body = metrics_render(&len);
    if (!body) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        return;
    }
    res->status = 200;
    res->body = body;
    res->len = len;
    res->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

extern const char openapi_spec[];
extern const size_t openapi_spec_len;

void handle_openapi(const app *a, api_request *req, api_response *res)
{
    (void)a;
    (void)req;
    respond_static(res, 200, "application/yaml", openapi_spec, openapi_spec_len);
}
