/* Process-wide counters in the Prometheus text exposition format. Updated
 * lock-free by every worker as requests complete. */
#ifndef COMPACTD_METRICS_H
#define COMPACTD_METRICS_H

#include "api_call.h"

#include <stddef.h>

/* What the metrics count a route's outcomes as. */
typedef enum {
    ROUTE_METRICS_PLAIN = 0,  /* requests and durations only */
    ROUTE_METRICS_COMPACTION, /* also compactd_compactions_total by outcome */
    ROUTE_METRICS_AUDIT       /* also compactd_verifications_total by verdict */
} route_metrics_kind;

/* The route table the series are labelled by: n routes, route i's pattern
 * and kind. */
typedef struct {
    size_t n;
    const char *(*pattern)(size_t i);
    route_metrics_kind (*kind)(size_t i);
} metrics_routes;

/* Sizes the per-route series for routes (copied). Call once before any
 * request. Returns 0, or -1 when out of memory. */
int metrics_init(const metrics_routes *routes);

/* Records one finished request (status 0: the client went away). */
void metrics_record(const request_facts *f, int status, double seconds);

/* The gauge compactd_inflight_bytes reads read(cls) at each render: the
 * bytes request bodies and responses in flight hold. Call before requests. */
void metrics_set_inflight_source(size_t (*read)(const void *cls), const void *cls);

/* Counts one JSON-RPC message on /mcp: its method ("invalid" when it is not
 * JSON-RPC), the tool of a tools/call (NULL otherwise) and its outcome
 * (OUTCOME_OK, OUTCOME_ERROR or OUTCOME_TOOL_ERROR). Names outside the
 * fixed sets are counted as "other" and "unknown". */
void metrics_record_mcp(const char *method, const char *tool, call_outcome outcome);

/* Renders every metric. Returns a new string the caller frees with free(),
 * its length in *len; NULL when out of memory. */
char *metrics_render(size_t *len);

#endif
