/* The access log's line (api/runtime/access_log.c): one JSON object per
 * request with its method, route, status, session, tenant, MCP method and
 * tool, outcome and units by decision; an error answer's type and path
 * (its message at debug only); nothing for a request refused before it was
 * matched but what the transport knows; and which levels write which
 * lines. Read back from stderr through a pipe and parsed with jansson. */
#include "access_log.h"
#include "check.h"

#include <jansson.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The lines access_log_write() wrote, as one string (owned). */
static char *captured(log_level level, const api_request *req, int status, const char *body)
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    int saved = dup(STDERR_FILENO);
    dup2(p[1], STDERR_FILENO);
    access_log_write(level, req, status, body, body ? strlen(body) : 0, 0.25);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(p[1]);
    char *out = calloc(1, 65536);
    size_t n = 0;
    for (ssize_t k; out && (k = read(p[0], out + n, 65535 - n)) > 0;)
        n += (size_t)k;
    close(p[0]);
    return out;
}

static json_t *line_of(log_level level, const api_request *req, int status, const char *body)
{
    char *text = captured(level, req, status, body);
    if (!text)
        return NULL;
    size_t len = strlen(text);
    check(len > 0 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1,
          "one line ending in a newline: \"%s\"", text);
    json_error_t e;
    json_t *j = len ? json_loads(text, 0, &e) : NULL;
    check(len == 0 || j != NULL, "not JSON: %s (%s)", text, len ? e.text : "");
    free(text);
    return j;
}

static const char *str(json_t *o, const char *path)
{
    json_t *v = o;
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *part = strtok(buf, "."); v && part; part = strtok(NULL, "."))
        v = json_object_get(v, part);
    return json_string_value(v);
}

static json_int_t num(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    return json_integer_value(b ? json_object_get(v, b) : v);
}

static void a_matched_request(void)
{
    api_call call = {0};
    call.facts.route = 0;
    call.facts.route_name = "/v1/sessions/{session}/compact";
    call.facts.outcome = OUTCOME_OK;
    call.facts.units = 3;
    call.facts.units_by[UNIT_PROTECTED][DECISION_EXTERNALIZED] = 1;
    call.facts.units_by[UNIT_PROTECTED][DECISION_PRESERVED] = 1;
    call.facts.units_by[UNIT_REDUNDANT][DECISION_DROPPED] = 1;
    snprintf(call.session, sizeof(call.session), "agent/42");
    call.tenant = "alpha";
    api_request req = {.method = "POST", .path = "/v1/sessions/agent%2F42/compact", .app = &call};

    json_t *j = line_of(LOG_INFO, &req, 200, "{\"kept\":[]}");
    check(j && strcmp(str(j, "method"), "POST") == 0 && num(j, "status", NULL) == 200,
          "method and status");
    check(j && strcmp(str(j, "route"), "/v1/sessions/{session}/compact") == 0, "route");
    check(j && strcmp(str(j, "session"), "agent/42") == 0 && strcmp(str(j, "tenant"), "alpha") == 0,
          "session and tenant");
    check(j && strcmp(str(j, "outcome"), "ok") == 0 && strcmp(str(j, "level"), "info") == 0,
          "outcome and level");
    check(j && num(j, "units", "total") == 3 && num(j, "units", "externalized") == 1 &&
              num(j, "units", "preserved") == 1 && num(j, "units", "dropped") == 1,
          "units by decision");
    check(j && json_real_value(json_object_get(j, "duration_seconds")) == 0.25, "duration");
    check(j && !json_object_get(j, "error") && !json_object_get(j, "mcp_method"),
          "no error or MCP members on a 200");
    json_decref(j);

    /* An error answer: its type and path; its message only at debug. */
    const char *err = "{\"error\":{\"type\":\"InvalidRequest\",\"message\":\"units[0].text "
                      "SECRET\",\"path\":\"$.units[0].text\"}}";
    call.facts.outcome = OUTCOME_INVALID;
    call.facts.units = 0;
    j = line_of(LOG_INFO, &req, 400, err);
    check(j && strcmp(str(j, "error.type"), "InvalidRequest") == 0 &&
              strcmp(str(j, "error.path"), "$.units[0].text") == 0 && !str(j, "error.message"),
          "error type and path at info, no message");
    check(j && !json_object_get(j, "units"), "no units member without units");
    json_decref(j);
    j = line_of(LOG_DEBUG, &req, 400, err);
    check(j && str(j, "error.message") && strstr(str(j, "error.message"), "SECRET"),
          "the message at debug");
    json_decref(j);

    /* MCP's method and tool. */
    call.facts.mcp_method = "tools/call";
    call.facts.mcp_tool = "compact";
    j = line_of(LOG_INFO, &req, 200, NULL);
    check(j && strcmp(str(j, "mcp_method"), "tools/call") == 0 &&
              strcmp(str(j, "mcp_tool"), "compact") == 0,
          "MCP method and tool");
    json_decref(j);
}

static void an_unmatched_request(void)
{
    /* Refused before it was matched: no call; a method holding a control
     * byte is written as valid JSON. */
    api_request req = {.method = "GE\x01T", .path = "", .app = NULL};
    json_t *j = line_of(LOG_INFO, &req, 400, NULL);
    check(j && strcmp(str(j, "route"), "unmatched") == 0, "unmatched route");
    check(j && !json_object_get(j, "session") && !json_object_get(j, "tenant"),
          "no session or tenant without a call");
    check(j && str(j, "method") && !strchr(str(j, "method"), '\x01'), "the method sanitized");
    json_decref(j);
}

static void levels(void)
{
    api_request req = {.method = "GET", .path = "/healthz", .app = NULL};
    char *text = captured(LOG_WARN, &req, 200, NULL);
    check(text && text[0] == '\0', "warn writes no line for a 200: %s", text);
    free(text);
    text = captured(LOG_ERROR, &req, 503, NULL);
    check(text && text[0] == '\0', "error writes no access line: %s", text);
    free(text);
    json_t *j = line_of(LOG_WARN, &req, 503, NULL);
    check(j && strcmp(str(j, "level"), "warn") == 0, "warn writes a 503 as warn");
    json_decref(j);
    j = line_of(LOG_WARN, &req, 0, NULL);
    check(j && num(j, "status", NULL) == 0 && strcmp(str(j, "level"), "warn") == 0,
          "a request that ended unanswered is a warn line");
    json_decref(j);
}

int main(void)
{
    a_matched_request();
    an_unmatched_request();
    levels();
    return check_done("access_log_cases");
}
