/* The access log: a JSON line per request, written with one write(2) so
 * lines from worker threads never interleave. */
#include "access_log.h"

#include "compaction.h"
#include "json_decode.h"
#include "json_text.h"
#include "json_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The answer's error.type, error.path and (at debug) error.message: one
 * place for every route's errors, read only on error answers. A body past
 * 1 MiB (a chat refusal listing a long history) is not read again. */
static void error_members(jw *w, log_level level, const char *body, size_t len)
{
    error_answer e;
    if (!body || len > (1u << 20) || json_decode_error_answer(body, len, &e) != 0)
        return;
    jw_member(w, "error");
    jw_object_open(w);
    if (e.type[0])
        jw_member_cstring(w, "type", e.type);
    if (e.path[0])
        jw_member_cstring(w, "path", e.path);
    if (level == LOG_DEBUG && e.message[0])
        jw_member_cstring(w, "message", e.message);
    jw_object_close(w);
}

/* What the application knew of the request: its session, tenant, MCP
 * method and tool, outcome and units by decision. */
static void call_members(jw *w, const api_call *c)
{
    const request_facts *f = &c->facts;
    if (c->session[0])
        jw_member_cstring(w, "session", c->session);
    if (c->tenant)
        jw_member_cstring(w, "tenant", c->tenant);
    if (f->mcp_method)
        jw_member_cstring(w, "mcp_method", f->mcp_method);
    if (f->mcp_tool)
        jw_member_cstring(w, "mcp_tool", f->mcp_tool);
    if (f->outcome)
        jw_member_cstring(w, "outcome", outcome_name(f->outcome));
    if (f->units) {
        jw_member(w, "units");
        jw_object_open(w);
        jw_member_int(w, "total", (int64_t)f->units);
        for (int d = PLAN_DECISION_FIRST; d < PLAN_DECISIONS; d++) {
            size_t n = 0;
            for (int k = 0; k < UNIT_CLASSES; k++)
                n += f->units_by[k][d];
            jw_member_int(w, plan_decision_name((plan_decision)d), (int64_t)n);
        }
        jw_object_close(w);
    }
}

void access_log_write(log_level level, const api_request *req, int status, const char *body,
                      size_t len, double seconds)
{
    /* info logs every request; warn only server-side failures. */
    if (level > LOG_WARN || (level == LOG_WARN && status < 500 && status != 0))
        return;
    char now[32];
    compaction_timestamp(now);

    jw w;
    jw_init(&w, 512);
    jw_object_open(&w);
    jw_member_cstring(&w, "time", now);
    jw_member_cstring(&w, "level", status >= 500 || status == 0 ? "warn" : "info");
    /* The method is the client's token, not checked by libmicrohttpd. */
    char method[16];
    snprintf(method, sizeof(method), "%s", req->method);
    json_sanitize_text(method);
    jw_member_cstring(&w, "method", method);
    const api_call *c = api_call_of(req);
    jw_member_cstring(&w, "route", c ? c->facts.route_name : "unmatched");
    jw_member_int(&w, "status", status);
    jw_member(&w, "duration_seconds");
    jw_double(&w, seconds);
    if (c)
        call_members(&w, c);
    if (status >= 400)
        error_members(&w, level, body, len);
    jw_object_close(&w);
    size_t line_len;
    char *line = jw_finish(&w, &line_len);
    if (!line)
        return;
    line[line_len] = '\n';
    ssize_t n = write(STDERR_FILENO, line, line_len + 1);
    (void)n;
    free(line);
}
