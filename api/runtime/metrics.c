/* Prometheus metrics: fixed label sets, so every series is a slot in an
 * array of atomics sized once at start-up, and recording a request never
 * allocates. */
#include "metrics.h"

#include "ops.h"
#include "process_stats.h"
#include "readiness.h"
#include "session.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int statuses[] = {0,   200, 202, 204, 400, 401, 403, 404,
                               405, 409, 413, 415, 422, 500, 503};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))
#define STATUS_OTHER NSTATUS

static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

/* The outcomes each counter by outcome shows, in the order it shows them:
 * a counter holds a slot per outcome (call_outcome, outcome.h), the other
 * slots never rendered. */
static const call_outcome compaction_outcomes[] = {OUTCOME_OK, OUTCOME_FAILURE,
                                                   OUTCOME_STORE_UNAVAILABLE, OUTCOME_INVALID};
static const call_outcome verdicts[] = {OUTCOME_SAFE, OUTCOME_SILENT_TRUNCATION};
static const call_outcome mcp_outcomes[] = {OUTCOME_OK, OUTCOME_ERROR, OUTCOME_TOOL_ERROR};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef atomic_uint_fast64_t counter;

/* Per route, one slot per route of the table and a last one for requests
 * that matched none. */
typedef struct {
    counter requests[NSTATUS + 1];
    counter duration_buckets[NBOUNDS + 1]; /* last: +Inf */
    counter duration_sum_us;
} route_series;

static route_series *per_route;
static size_t nslots, unmatched;
static metrics_routes routes;
static counter compactions[OUTCOMES];
static counter verifications[OUTCOMES];
static counter units[UNIT_CLASSES][PLAN_DECISIONS];
static counter tokens[PLAN_DECISIONS];
static counter spill_bytes;
/* Set once the server runs, while requests may already render: atomic. */
typedef size_t (*inflight_fn)(const void *cls);
static _Atomic(inflight_fn) inflight_read;
static _Atomic(const void *) inflight_cls;

void metrics_set_inflight_source(size_t (*read)(const void *cls), const void *cls)
{
    atomic_store(&inflight_cls, cls);
    atomic_store(&inflight_read, read);
}

static size_t status_slot(int status)
{
    for (size_t i = 0; i < NSTATUS; i++)
        if (statuses[i] == status)
            return i;
    return STATUS_OTHER;
}

static void add(counter *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static uint64_t get(counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

int metrics_init(const metrics_routes *r)
{
    process_stats_init();
    routes = *r;
    unmatched = routes.n;
    nslots = unmatched + 1;
    per_route = calloc(nslots, sizeof(*per_route));
    return per_route ? 0 : -1;
}

void metrics_record(const request_facts *f, int status, double seconds)
{
    size_t r = f->route >= 0 && (size_t)f->route < unmatched ? (size_t)f->route : unmatched;
    route_series *rs = &per_route[r];
    add(&rs->requests[status_slot(status)], 1);
    size_t b = 0;
    while (b < NBOUNDS && seconds > bounds[b])
        b++;
    add(&rs->duration_buckets[b], 1);
    add(&rs->duration_sum_us, (uint64_t)(seconds * 1e6));

    if (!f->outcome)
        return;
    route_metrics_kind kind = r < unmatched ? routes.kind(r) : ROUTE_METRICS_PLAIN;
    if (kind == ROUTE_METRICS_AUDIT)
        add(&verifications[f->outcome], 1);
    else if (kind == ROUTE_METRICS_COMPACTION)
        add(&compactions[f->outcome], 1);
    for (int c = 0; c < UNIT_CLASSES; c++)
        for (int d = PLAN_DECISION_FIRST; d < PLAN_DECISIONS; d++)
            if (f->units_by[c][d])
                add(&units[c][d], f->units_by[c][d]);
    for (int d = PLAN_DECISION_FIRST; d < PLAN_DECISIONS; d++)
        if (f->tokens_by[d] > 0)
            add(&tokens[d], (uint64_t)f->tokens_by[d]);
    if (f->spill_bytes)
        add(&spill_bytes, f->spill_bytes);
}

/* ---- MCP ---- */

/* Fixed label sets: whatever a client sends, a method or tool outside them
 * is counted as "other" or "unknown". */
static const char *mcp_methods[] = {"initialize",
                                    "ping",
                                    "tools/list",
                                    "tools/call",
                                    "notifications/initialized",
                                    "notifications/cancelled",
                                    "notification",
                                    "invalid",
                                    "other"};
#define NMCP_METHODS (sizeof(mcp_methods) / sizeof(mcp_methods[0]))
static const char *mcp_tools[] = {
    "", "reacquire", "list_spills", "compact", "compact_messages", "verify", "unknown"};
#define NMCP_TOOLS (sizeof(mcp_tools) / sizeof(mcp_tools[0]))
static counter mcp_messages[NMCP_METHODS][NMCP_TOOLS][OUTCOMES];

static size_t slot(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return n - 1;
}

void metrics_record_mcp(const char *method, const char *tool, call_outcome outcome)
{
    add(&mcp_messages[slot(mcp_methods, NMCP_METHODS, method)]
                     [slot(mcp_tools, NMCP_TOOLS, tool ? tool : "")][outcome],
        1);
}

/* ---- Exposition ---- */

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} text;

static void out(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out(text *t, const char *fmt, ...)
{
    for (;;) {
        if (t->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        char *p = realloc(t->buf, t->cap * 2);
        if (!p) {
            t->oom = 1;
            return;
        }
        t->buf = p;
        t->cap *= 2;
    }
}

static const char *route_label(size_t r)
{
    return r == unmatched ? "unmatched" : routes.pattern(r);
}

static void render_http(text *t)
{
    out(t, "# HELP compactd_http_requests_total HTTP requests by route and status "
           "(status 0: the client went away before an answer).\n"
           "# TYPE compactd_http_requests_total counter\n");
    for (size_t r = 0; r < nslots; r++) {
        for (size_t s = 0; s <= NSTATUS; s++) {
            uint64_t v = get(&per_route[r].requests[s]);
            if (v == 0)
                continue;
            if (s == STATUS_OTHER)
                out(t, "compactd_http_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                    route_label(r), (unsigned long long)v);
            else
                out(t, "compactd_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                    route_label(r), statuses[s], (unsigned long long)v);
        }
    }

    out(t, "# HELP compactd_http_request_duration_seconds Time from a request's first byte "
           "to its response.\n# TYPE compactd_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r < nslots; r++) {
        uint64_t cum = 0;
        for (size_t b = 0; b <= NBOUNDS; b++) {
            cum += get(&per_route[r].duration_buckets[b]);
            if (b < NBOUNDS)
                out(t,
                    "compactd_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} "
                    "%llu\n",
                    route_label(r), bounds[b], (unsigned long long)cum);
            else
                out(t,
                    "compactd_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} "
                    "%llu\n",
                    route_label(r), (unsigned long long)cum);
        }
        out(t, "compactd_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", route_label(r),
            (double)get(&per_route[r].duration_sum_us) / 1e6);
        out(t, "compactd_http_request_duration_seconds_count{route=\"%s\"} %llu\n", route_label(r),
            (unsigned long long)cum);
    }
}

static void render_domain(text *t)
{
    out(t, "# HELP compactd_compactions_total Compaction requests by outcome.\n"
           "# TYPE compactd_compactions_total counter\n");
    for (size_t i = 0; i < COUNT(compaction_outcomes); i++)
        out(t, "compactd_compactions_total{outcome=\"%s\"} %llu\n",
            outcome_name(compaction_outcomes[i]),
            (unsigned long long)get(&compactions[compaction_outcomes[i]]));

    out(t, "# HELP compactd_verifications_total Truncation audits by verdict.\n"
           "# TYPE compactd_verifications_total counter\n");
    for (size_t i = 0; i < COUNT(verdicts); i++)
        out(t, "compactd_verifications_total{verdict=\"%s\"} %llu\n", outcome_name(verdicts[i]),
            (unsigned long long)get(&verifications[verdicts[i]]));

    out(t, "# HELP compactd_units_total Units planned, by class and decision.\n"
           "# TYPE compactd_units_total counter\n");
    for (int c = 0; c < UNIT_CLASSES; c++)
        for (int d = PLAN_DECISION_FIRST; d < PLAN_DECISIONS; d++)
            out(t, "compactd_units_total{class=\"%s\",decision=\"%s\"} %llu\n",
                unit_class_name((unit_class)c), plan_decision_name((plan_decision)d),
                (unsigned long long)get(&units[c][d]));

    out(t, "# HELP compactd_tokens_total Tokens of the units planned, by decision.\n"
           "# TYPE compactd_tokens_total counter\n");
    for (int d = PLAN_DECISION_FIRST; d < PLAN_DECISIONS; d++)
        out(t, "compactd_tokens_total{decision=\"%s\"} %llu\n",
            plan_decision_name((plan_decision)d), (unsigned long long)get(&tokens[d]));

    out(t,
        "# HELP compactd_spill_bytes_total Bytes of text externalized to the store.\n"
        "# TYPE compactd_spill_bytes_total counter\ncompactd_spill_bytes_total %llu\n",
        (unsigned long long)get(&spill_bytes));

    out(t,
        "# HELP compactd_log_entries_lost_total Decision-log entries compactd could not write "
        "(Redis unreachable, or a stalled Redis's queue full); a compaction answered without its "
        "entry says \"logged\": false.\n"
        "# TYPE compactd_log_entries_lost_total counter\ncompactd_log_entries_lost_total %llu\n",
        (unsigned long long)ops_log_lost_count());

    store_stats st;
    session_store_get_stats(&st);
    out(t,
        "# HELP compactd_redis_errors_total Failed Redis operations.\n"
        "# TYPE compactd_redis_errors_total counter\ncompactd_redis_errors_total %llu\n",
        (unsigned long long)st.errors);
    out(t,
        "# HELP compactd_redis_reconnects_total Redis connections re-established after a "
        "failure.\n# TYPE compactd_redis_reconnects_total counter\n"
        "compactd_redis_reconnects_total %llu\n",
        (unsigned long long)st.reconnects);
    out(t,
        "# HELP compactd_redis_redirections_total Redis Cluster redirections followed, by kind.\n"
        "# TYPE compactd_redis_redirections_total counter\n"
        "compactd_redis_redirections_total{kind=\"moved\"} %llu\n"
        "compactd_redis_redirections_total{kind=\"ask\"} %llu\n",
        (unsigned long long)st.moved, (unsigned long long)st.ask);
    out(t,
        "# HELP compactd_redis_retries_total Redis Cluster commands sent again after TRYAGAIN, "
        "CLUSTERDOWN or an unreachable master.\n# TYPE compactd_redis_retries_total counter\n"
        "compactd_redis_retries_total %llu\n",
        (unsigned long long)st.retries);
    out(t,
        "# HELP compactd_redis_slot_map_refreshes_total Redis Cluster slot maps fetched.\n"
        "# TYPE compactd_redis_slot_map_refreshes_total counter\n"
        "compactd_redis_slot_map_refreshes_total %llu\n",
        (unsigned long long)st.slot_map_refreshes);
    out(t,
        "# HELP compactd_redis_wait_shortfalls_total Commits fewer replicas acknowledged than "
        "COMPACTD_REDIS_MIN_REPLICAS (answered 503).\n"
        "# TYPE compactd_redis_wait_shortfalls_total counter\n"
        "compactd_redis_wait_shortfalls_total %llu\n",
        (unsigned long long)st.wait_shortfalls);

    inflight_fn read = atomic_load(&inflight_read);
    if (read)
        out(t,
            "# HELP compactd_inflight_bytes Bytes request bodies and responses in flight hold "
            "(bounded by COMPACTD_MAX_INFLIGHT_BYTES).\n# TYPE compactd_inflight_bytes gauge\n"
            "compactd_inflight_bytes %zu\n",
            read(atomic_load(&inflight_cls)));

    out(t,
        "# HELP compactd_build_info Build information.\n# TYPE compactd_build_info gauge\n"
        "compactd_build_info{version=\"%s\"} 1\n",
        COMPACTD_VERSION);
}

/* The process's figures under the names Prometheus's client libraries
 * give them, so dashboards made for any service read them; and whether
 * Redis answers, as /readyz says it. */
static void render_process(text *t)
{
    char why[160];
    out(t,
        "# HELP compactd_redis_ready 1 when Redis answered the readiness probe within the last "
        "second (what /readyz says), else 0.\n# TYPE compactd_redis_ready gauge\n"
        "compactd_redis_ready %d\n",
        readiness_ready(why, sizeof(why)));
    process_stats p;
    if (process_stats_read(&p) != 0)
        return;
    out(t,
        "# HELP process_cpu_seconds_total User and system CPU time spent in seconds.\n"
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
        "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %llu\n"
        "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
        "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n"
        "# HELP process_start_time_seconds Start time of the process since the Unix epoch in "
        "seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n"
        "# HELP process_threads Threads of the process.\n"
        "# TYPE process_threads gauge\nprocess_threads %llu\n",
        p.cpu_seconds, (unsigned long long)p.resident_bytes, (unsigned long long)p.virtual_bytes,
        p.start_time_seconds, (unsigned long long)p.threads);
    if (p.open_fds >= 0)
        out(t,
            "# HELP process_open_fds Number of open file descriptors.\n"
            "# TYPE process_open_fds gauge\nprocess_open_fds %lld\n",
            (long long)p.open_fds);
    if (p.max_fds >= 0)
        out(t,
            "# HELP process_max_fds Maximum number of open file descriptors.\n"
            "# TYPE process_max_fds gauge\nprocess_max_fds %lld\n",
            (long long)p.max_fds);
}

static void render_mcp(text *t)
{
    out(t, "# HELP compactd_mcp_messages_total JSON-RPC messages on /mcp by method, tool "
           "(tools/call) and outcome (error: a JSON-RPC error; tool_error: isError).\n"
           "# TYPE compactd_mcp_messages_total counter\n");
    for (size_t m = 0; m < NMCP_METHODS; m++)
        for (size_t k = 0; k < NMCP_TOOLS; k++)
            for (size_t i = 0; i < COUNT(mcp_outcomes); i++) {
                uint64_t v = get(&mcp_messages[m][k][mcp_outcomes[i]]);
                if (v)
                    out(t,
                        "compactd_mcp_messages_total{method=\"%s\",tool=\"%s\",outcome=\"%s\"} "
                        "%llu\n",
                        mcp_methods[m], mcp_tools[k], outcome_name(mcp_outcomes[i]),
                        (unsigned long long)v);
            }
}

char *metrics_render(size_t *len)
{
    text t = {malloc(16384), 0, 16384, 0};
    t.oom = t.buf == NULL;
    render_http(&t);
    render_domain(&t);
    render_mcp(&t);
    render_process(&t);
    if (t.oom) {
        free(t.buf);
        return NULL;
    }
    *len = t.len;
    return t.buf;
}
