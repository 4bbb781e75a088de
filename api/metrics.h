/* Process-wide counters in the Prometheus text exposition format. Updated
 * lock-free by every worker as requests complete. */
#ifndef COMPACTD_METRICS_H
#define COMPACTD_METRICS_H

#include "request.h"

#include <stddef.h>

/* Sizes the per-route series for the route table (app.h). Call once before
 * any request. Returns 0, or -1 when out of memory. */
int metrics_init(void);

/* Records one finished request (status 0: the client went away). */
void metrics_record(const request_facts *f, int status, double seconds);

/* The gauge compactd_inflight_bytes reads read(cls) at each render: the
 * bytes request bodies and responses in flight hold. Call before requests. */
void metrics_set_inflight_source(size_t (*read)(const void *cls), const void *cls);

/* Counts one JSON-RPC message on /mcp: its method ("invalid" when it is not
 * JSON-RPC), the tool of a tools/call (NULL otherwise) and its outcome
 * ("ok", "error" or "tool_error"). Names outside the fixed sets are counted
 * as "other" and "unknown". */
void metrics_record_mcp(const char *method, const char *tool, const char *outcome);

/* Renders every metric. Returns a new string the caller frees with free(),
 * its length in *len; NULL when out of memory. */
char *metrics_render(size_t *len);

#endif
