/* The metrics (api/runtime/metrics.c): requests counted per route and
 * status (the unmatched ones apart), compactions and verdicts counted only
 * on routes of their kind, units and tokens by decision, MCP messages
 * outside the fixed label sets counted as other and unknown, all read back
 * from the exposition text. */
#include "check.h"
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

static const char *const patterns[] = {"/compact", "/verify", "/plain"};
static const route_metrics_kind kinds[] = {ROUTE_METRICS_COMPACTION, ROUTE_METRICS_AUDIT,
                                           ROUTE_METRICS_PLAIN};

static const char *pattern(size_t i)
{
    return patterns[i];
}

static route_metrics_kind kind(size_t i)
{
    return kinds[i];
}

static void expect(const char *text, const char *line)
{
    char want[512];
    snprintf(want, sizeof(want), "\n%s\n", line);
    check(strstr(text, want) != NULL, "missing \"%s\"", line);
}

int main(void)
{
    check(metrics_init(&(metrics_routes){3, pattern, kind}) == 0, "metrics_init");

    request_facts compact = {
        .route = 0, .route_name = "/compact", .outcome = OUTCOME_OK, .units = 2};
    compact.units_by[UNIT_PROTECTED][DECISION_EXTERNALIZED] = 1;
    compact.units_by[UNIT_REDUNDANT][DECISION_DROPPED] = 1;
    compact.tokens_by[DECISION_EXTERNALIZED] = 500;
    compact.tokens_by[DECISION_DROPPED] = 7;
    compact.spill_bytes = 5;
    metrics_record(&compact, 200, 0.002);
    request_facts failed = {.route = 0, .route_name = "/compact", .outcome = OUTCOME_FAILURE};
    metrics_record(&failed, 422, 0.002);
    request_facts verdict = {
        .route = 1, .route_name = "/verify", .outcome = OUTCOME_SILENT_TRUNCATION};
    metrics_record(&verdict, 200, 0.002);
    /* An outcome on a plain route counts no compaction. */
    request_facts plain = {.route = 2, .route_name = "/plain", .outcome = OUTCOME_OK};
    metrics_record(&plain, 204, 0.002);
    request_facts unmatched = {.route = -1, .route_name = "unmatched"};
    metrics_record(&unmatched, 404, 0.002);
    metrics_record(&unmatched, 0, 0.002);   /* the client went away */
    metrics_record(&unmatched, 418, 0.002); /* a status outside the set */
    metrics_record_mcp("tools/call", "compact", OUTCOME_OK);
    metrics_record_mcp("made/up", "nothing", OUTCOME_TOOL_ERROR);

    size_t len;
    char *text = metrics_render(&len);
    check(text && strlen(text) == len, "rendered");
    if (!text)
        return check_done("metrics_cases");
    expect(text, "compactd_http_requests_total{route=\"/compact\",status=\"200\"} 1");
    expect(text, "compactd_http_requests_total{route=\"/compact\",status=\"422\"} 1");
    expect(text, "compactd_http_requests_total{route=\"/plain\",status=\"204\"} 1");
    expect(text, "compactd_http_requests_total{route=\"unmatched\",status=\"404\"} 1");
    expect(text, "compactd_http_requests_total{route=\"unmatched\",status=\"0\"} 1");
    expect(text, "compactd_http_requests_total{route=\"unmatched\",status=\"other\"} 1");
    expect(text, "compactd_compactions_total{outcome=\"ok\"} 1");
    expect(text, "compactd_compactions_total{outcome=\"failure\"} 1");
    expect(text, "compactd_verifications_total{verdict=\"silent_truncation\"} 1");
    expect(text, "compactd_verifications_total{verdict=\"safe\"} 0");
    expect(text, "compactd_units_total{class=\"protected\",decision=\"externalized\"} 1");
    expect(text, "compactd_units_total{class=\"redundant\",decision=\"dropped\"} 1");
    expect(text, "compactd_tokens_total{decision=\"externalized\"} 500");
    expect(text, "compactd_spill_bytes_total 5");
    expect(text, "compactd_http_request_duration_seconds_count{route=\"/compact\"} 2");
    check(strstr(text, "method=\"tools/call\",tool=\"compact\",outcome=\"ok\"} 1") != NULL,
          "an MCP tools/call");
    check(strstr(text, "method=\"other\",tool=\"unknown\",outcome=\"tool_error\"} 1") != NULL,
          "names outside the sets as other and unknown");
    free(text);
    return check_done("metrics_cases");
}
