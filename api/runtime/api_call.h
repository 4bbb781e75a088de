/* One request as the application sees it, beyond what the transport
 * carries: the route it matched, who asked and for which session, and the
 * facts the access log and the metrics report. The dispatch makes one when
 * a request's headers are in and hangs it on api_request.app (the
 * transport's opaque slot); the transport has it freed when it lets go of
 * the request (http_handlers.begin and end). */
#ifndef COMPACTD_API_CALL_H
#define COMPACTD_API_CALL_H

#include "outcome.h"
#include "plan.h"
#include "request.h"
#include "session_id.h"
#include "tenants.h"

#include <stdint.h>

/* "tenant:session": the Redis namespace of a session. */
#define NAMESPACE_MAX (TENANT_MAX + 1 + SESSION_ID_MAX)

/* Per-request facts the access log and the metrics report. */
typedef struct {
    int route;              /* index in the route table; -1 when no route matched */
    const char *route_name; /* the route's pattern, or "unmatched" */
    call_outcome outcome;   /* OUTCOME_NONE until a front or an operation sets it */
    size_t units;
    size_t units_by[UNIT_CLASSES][PLAN_DECISIONS];
    int64_t tokens_by[PLAN_DECISIONS];
    size_t spill_bytes;
    const char *mcp_method; /* /mcp: the JSON-RPC method ("batch" for several) */
    const char *mcp_tool;   /* /mcp tools/call: the tool's name */
} request_facts;

typedef struct {
    request_facts facts;
    char session[SESSION_ID_MAX + 1]; /* the route's {session}; "" when none */
    const char *tail;                 /* the {key} part of a spill path, decoded */
    const char *tenant;               /* who asked; NULL until known */
    char ns[NAMESPACE_MAX + 1];       /* "tenant:session" */
} api_call;

/* The call a request carries (api_request.app, whose first member it is);
 * NULL for a request the transport refused before it was matched. */
static inline api_call *api_call_of(const api_request *req)
{
    return (api_call *)req->app;
}

#endif
