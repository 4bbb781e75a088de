/* POST /mcp, and POST /v1/sessions/{session}/mcp bound to one session for
 * the model itself: the Model Context Protocol's Streamable HTTP transport,
 * answered as application/json (no SSE), without MCP sessions (no
 * Mcp-Session-Id): every request stands alone, so any worker serves it and a
 * restart loses nothing. The lifecycle (initialize,
 * notifications/initialized, ping) and tools/list and tools/call; the tools
 * themselves are in mcp_tools.c. */
#include "mcp.h"

#include "answer_account.h"
#include "host_guard.h"
#include "json_decode.h"
#include "json_fields.h"
#include "json_shape.h"
#include "json_span.h"
#include "metrics.h"
#include "tenants.h"
#include "ticker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The versions the official TypeScript SDK 1.32 offers, newest first: the
 * first is the one compactd answers a version it does not know with. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                       "2024-10-07"};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))
/* The spec's assumption for a request without MCP-Protocol-Version. */
#define VERSION_ASSUMED "2025-03-26"

enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_TRANSPORT = -32000,      /* an HTTP-level refusal carried as JSON-RPC */
    RPC_ANSWER_REFUSED = -32001, /* the answer would pass a memory limit; not built */
    RPC_NOT_RUN = -32002         /* a batch's time ran out before this message */
};

static int version_known(const char *v)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strcmp(versions[i], v) == 0)
            return 1;
    return 0;
}

/* JSON-RPC batches are in 2025-03-26 only: added then, removed in
 * 2025-06-18. */
static int batches_allowed(const char *version)
{
    return strcmp(version, "2025-03-26") == 0;
}

/* ---- JSON-RPC writing ---- */

static void write_id(jw *w, json_t *id)
{
    jw_member(w, "id");
    if (json_is_string(id))
        jw_string(w, json_string_value(id), json_string_length(id));
    else if (json_is_integer(id))
        jw_int(w, json_integer_value(id));
    else
        jw_null(w);
}

static void response_open(jw *w, json_t *id)
{
    jw_object_open(w);
    jw_member_cstring(w, "jsonrpc", "2.0");
    write_id(w, id);
}

static void write_error(jw *w, json_t *id, int code, const char *message)
{
    char clean[512];
    snprintf(clean, sizeof(clean), "%s", message);
    json_sanitize_text(clean);
    response_open(w, id);
    jw_member(w, "error");
    jw_object_open(w);
    jw_member_int(w, "code", code);
    jw_member_cstring(w, "message", clean);
    jw_object_close(w);
    jw_object_close(w);
}

/* An HTTP-level refusal (400, 403) whose body is a JSON-RPC error without
 * an id, as the transport describes. */
static void respond_rpc_error(api_response *res, int status, int code, const char *message)
{
    jw w;
    size_t len;
    jw_init(&w, 256);
    write_error(&w, NULL, code, message);
    char *body = jw_finish(&w, &len);
    respond_json(res, status, body, len);
}

/* ---- Methods ---- */

typedef struct {
    const app *a;
    api_request *req;
    const char *version; /* the request's MCP-Protocol-Version, or the assumed one */
    size_t msg_at;       /* where the message being handled starts in the body */
    const char *bound;   /* /v1/sessions/{session}/mcp: the session; NULL on /mcp */
} rpc_context;

static const char instructions[] =
    "compactd keeps an agent's context under a token budget without silent truncation. Text it "
    "took out of the context is replaced by a pointer such as [externalized build.log "
    "sha256:5d1e0a3b9c7f2e41]. Before acting on anything a pointer stands for, call reacquire "
    "with the session id and the pointer text exactly as it appears: it returns the original "
    "text byte for byte.";

/* The model's own endpoint knows its session: the pointer text is all a
 * call needs. */
static const char bound_instructions[] =
    "Text taken out of this conversation's context to keep it under its token budget is replaced "
    "by a pointer such as [externalized build.log sha256:5d1e0a3b9c7f2e41]. Before acting on "
    "anything a pointer stands for, call reacquire with the pointer text exactly as it appears: "
    "it returns the original text byte for byte.";

static call_outcome m_initialize(rpc_context *c, json_t *id, json_t *params, jw *w)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (!asked) {
        write_error(w, id, RPC_INVALID_PARAMS,
                    "Invalid params: initialize needs params.protocolVersion, a string");
        return OUTCOME_ERROR;
    }
    response_open(w, id);
    jw_member(w, "result");
    jw_object_open(w);
    jw_member_cstring(w, "protocolVersion", version_known(asked) ? asked : versions[0]);
    jw_member(w, "capabilities");
    jw_object_open(w);
    jw_member(w, "tools");
    jw_object_open(w);
    jw_member(w, "listChanged");
    jw_bool(w, 0);
    jw_object_close(w);
    jw_object_close(w);
    jw_member(w, "serverInfo");
    jw_object_open(w);
    jw_member_cstring(w, "name", "compactd");
    jw_member_cstring(w, "version", COMPACTD_VERSION);
    jw_object_close(w);
    jw_member_cstring(w, "instructions", c->bound ? bound_instructions : instructions);
    jw_object_close(w);
    jw_object_close(w);
    return OUTCOME_OK;
}

static call_outcome m_ping(rpc_context *c, json_t *id, json_t *params, jw *w)
{
    (void)c;
    (void)params;
    response_open(w, id);
    jw_member(w, "result");
    jw_object_open(w);
    jw_object_close(w);
    jw_object_close(w);
    return OUTCOME_OK;
}

static call_outcome m_tools_list(rpc_context *c, json_t *id, json_t *params, jw *w)
{
    size_t len;
    const char *tools = mcp_tools_list_json(c->bound != NULL, &len);
    (void)params;
    response_open(w, id);
    jw_member(w, "result");
    jw_object_open(w);
    jw_member(w, "tools");
    jw_raw(w, tools, len);
    jw_object_close(w);
    jw_object_close(w);
    return OUTCOME_OK;
}

static call_outcome m_tools_call(rpc_context *c, json_t *id, json_t *params, jw *w)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    if (!name) {
        write_error(w, id, RPC_INVALID_PARAMS,
                    "Invalid params: tools/call needs params.name, the tool's name");
        return OUTCOME_ERROR;
    }
    int tool = mcp_tool_find(name, c->bound != NULL);
    if (tool < 0) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "Invalid params: unknown tool '%.64s' (tools/list names the tools)", name);
        write_error(w, id, RPC_INVALID_PARAMS, msg);
        metrics_record_mcp("tools/call", "unknown", OUTCOME_ERROR);
        return OUTCOME_NONE;
    }
    api_call_of(c->req)->facts.mcp_tool = mcp_tool_name(tool);
    /* The arguments as the client wrote them, so that a tool passes them on
     * byte for byte (a chat message's spill is its bytes as sent). */
    const char *body = c->req->body;
    size_t len = c->req->body_len, p0, p1, a0 = 0, a1 = 0;
    int raw = json_span_member(body, len, c->msg_at, "params", &p0, &p1) == 0 &&
              json_span_member(body, len, p0, "arguments", &a0, &a1) == 0;
    response_open(w, id);
    jw_member(w, "result");
    int failed = mcp_tool_call(c->a, c->req, tool, c->bound, json_object_get(params, "arguments"),
                               raw ? body + a0 : NULL, a1 - a0, w);
    jw_object_close(w);
    metrics_record_mcp("tools/call", mcp_tool_name(tool), failed ? OUTCOME_TOOL_ERROR : OUTCOME_OK);
    return OUTCOME_NONE; /* recorded with its tool */
}

/* Each writes its answer and returns the outcome to count, or OUTCOME_NONE
 * when it counted itself. */
typedef call_outcome (*method_fn)(rpc_context *c, json_t *id, json_t *params, jw *w);

static const struct {
    const char *name;
    method_fn fn;
} methods[] = {
    {"initialize", m_initialize},
    {"ping", m_ping},
    {"tools/list", m_tools_list},
    {"tools/call", m_tools_call},
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

/* ---- Messages ---- */

/* A method's name as the metrics and the access log label it: a fixed set,
 * whatever a client sends. */
static const char *method_label(const char *name)
{
    static const char *const known[] = {"initialize",
                                        "ping",
                                        "tools/list",
                                        "tools/call",
                                        "notifications/initialized",
                                        "notifications/cancelled"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(known[i], name) == 0)
            return known[i];
    return strncmp(name, "notifications/", 14) == 0 ? "notification" : "other";
}

enum { NO_ANSWER = 0, ANSWERED, INVALID };

static int invalid(rpc_context *c, jw *w, json_t *id, const char *why)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "Invalid Request: %s", why);
    write_error(w, id, RPC_INVALID_REQUEST, msg);
    metrics_record_mcp("invalid", NULL, OUTCOME_ERROR);
    if (!api_call_of(c->req)->facts.mcp_method)
        api_call_of(c->req)->facts.mcp_method = "invalid";
    return INVALID;
}

/* Handles one JSON-RPC message; writes its answer into w when it has one
 * (a request, or a message that is not valid JSON-RPC). */
static int handle_message(rpc_context *c, json_t *msg, jw *w, int in_batch)
{
    if (!json_is_object(msg))
        return invalid(c, w, NULL, "a JSON-RPC message is an object");
    json_t *id = json_object_get(msg, "id");
    json_t *good_id = json_is_string(id) || json_is_integer(id) ? id : NULL;
    const char *jsonrpc = json_name(json_object_get(msg, "jsonrpc"));
    if (!jsonrpc || strcmp(jsonrpc, "2.0") != 0)
        return invalid(c, w, good_id, "\"jsonrpc\" must be \"2.0\"");
    json_t *method = json_object_get(msg, "method");
    if (!method) {
        /* A client's answer to a server request: compactd sends none, so
         * there is nothing to match it with; accepted as the spec says. */
        if (good_id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
            return NO_ANSWER;
        return invalid(c, w, good_id, "a request needs \"method\"");
    }
    if (!json_is_string(method))
        return invalid(c, w, good_id, "\"method\" must be a string");
    json_t *params = json_object_get(msg, "params"), *tool = json_object_get(params, "name");
    if (!json_name(method) || (json_is_string(tool) && !json_name(tool)))
        return invalid(c, w, good_id, "a method or tool name must not contain \\u0000");
    const char *name = json_string_value(method), *label = method_label(name);
    if (params && !json_is_object(params) && !json_is_array(params))
        return invalid(c, w, good_id, "\"params\" must be an object");
    if (!id || json_is_null(id)) {
        if (id) /* MCP requests never have a null id */
            return invalid(c, w, NULL, "\"id\" must be a string or an integer");
        /* A notification: nothing to answer, whatever it is. */
        if (!in_batch)
            api_call_of(c->req)->facts.mcp_method = label;
        metrics_record_mcp(label, NULL, OUTCOME_OK);
        return NO_ANSWER;
    }
    if (!good_id)
        return invalid(c, w, NULL, "\"id\" must be a string or an integer");
    if (!in_batch)
        api_call_of(c->req)->facts.mcp_method = label;
    for (size_t i = 0; i < NMETHODS; i++) {
        if (strcmp(methods[i].name, name) != 0)
            continue;
        if (in_batch && strcmp(name, "initialize") == 0) {
            write_error(w, id, RPC_INVALID_REQUEST,
                        "Invalid Request: initialize must not be part of a batch");
            metrics_record_mcp(label, NULL, OUTCOME_ERROR);
            return ANSWERED;
        }
        if (params && !json_is_object(params)) {
            write_error(w, id, RPC_INVALID_PARAMS, "Invalid params: params must be an object");
            metrics_record_mcp(label, NULL, OUTCOME_ERROR);
            return ANSWERED;
        }
        call_outcome outcome = methods[i].fn(c, id, params, w);
        if (outcome)
            metrics_record_mcp(label, NULL, outcome);
        return ANSWERED;
    }
    char text[200];
    snprintf(text, sizeof(text), "Method not found: %.100s", name);
    write_error(w, id, RPC_METHOD_NOT_FOUND, text);
    metrics_record_mcp(label, NULL, OUTCOME_ERROR);
    return ANSWERED;
}

/* ---- Bounded answers ---- */

/* The id a message's error answer carries: its own when it has a usable one. */
static json_t *message_id(json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    return json_is_string(id) || json_is_integer(id) ? id : NULL;
}

/* The metrics label of a message's method, whatever the message is. */
static const char *message_label(json_t *msg)
{
    const char *name = json_string_value(json_object_get(msg, "method"));
    return name ? method_label(name) : "other";
}

/* Writes an error answer that stands in for one the limits refused: a few
 * bytes, counted whatever the limits say. */
static void write_refusal(jw *w, json_t *id, int code, const char *message)
{
    int was = answer_set_lenient(1);
    write_error(w, id, code, message);
    answer_set_lenient(was);
}

/* Handles one message with its answer written in place, once (a copy
 * would hold a re-acquired text twice): an answer that would pass what the
 * request may hold (answer_account.h) is taken back and becomes a
 * JSON-RPC error for this message alone, and the rest of a batch is still
 * answered. */
static int answer_message(rpc_context *c, json_t *msg, jw *w, int in_batch)
{
    /* Once the message is answered only w has grown: what its tools
     * allocated and freed (an operation's answer they wrote into the
     * tool's result) goes back. */
    size_t before = answer_taken(), keep = before > w->cap ? before - w->cap : 0;
    jw_mark at = jw_mark_here(w);
    answer_clear_refusal();
    int r = handle_message(c, msg, w, in_batch);
    answer_settle(keep + w->cap);
    answer_refusal why = answer_refused();
    if (why == ANSWER_OK)
        return r;
    answer_clear_refusal();
    jw_rewind(w, &at);
    char text[300];
    if (why == ANSWER_OVERLOADED)
        snprintf(text, sizeof(text),
                 "Overloaded: the answer does not fit in what the server may hold now "
                 "(COMPACTD_MAX_INFLIGHT_BYTES); retry shortly");
    else
        snprintf(text, sizeof(text),
                 "Answer too large: it would pass the %zu bytes one client may hold, the request "
                 "included (COMPACTD_MAX_CLIENT_INFLIGHT_BYTES)",
                 c->a->cfg->max_client_inflight_bytes);
    write_refusal(w, message_id(msg), RPC_ANSWER_REFUSED, text);
    metrics_record_mcp(message_label(msg), NULL, OUTCOME_ERROR);
    return r == NO_ANSWER ? ANSWERED : r;
}

/* Answers each message of a batch (doc, an array the transport accepted)
 * into w as an array; returns how many answers it holds. */
static int run_batch(rpc_context *c, json_t *doc, jw *w)
{
    const api_request *req = c->req;
    size_t n = json_array_size(doc);
    int answers = 0;
    jw_array_open(w);
    c->msg_at = json_span_skip_ws(req->body, json_span_skip_ws(req->body, 0, req->body_len) + 1,
                                  req->body_len);
    /* A batch holds its thread for COMPACTD_MCP_BATCH_MS at most, plus its
     * last message: what is left is answered unrun. */
    int64_t until = ticker_now_ms() + c->a->cfg->mcp_batch_ms;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(doc, i);
        if (ticker_now_ms() > until && message_id(m)) {
            write_refusal(w, message_id(m), RPC_NOT_RUN,
                          "Not run: the batch used the time one batch may take "
                          "(COMPACTD_MCP_BATCH_MS); send this message again");
            metrics_record_mcp(message_label(m), NULL, OUTCOME_ERROR);
            answers++;
        } else {
            answers += answer_message(c, m, w, 1) != NO_ANSWER;
        }
        c->msg_at = json_span_skip_value(req->body, c->msg_at, req->body_len);
        c->msg_at = json_span_skip_ws(req->body, c->msg_at, req->body_len);
        if (c->msg_at < req->body_len && req->body[c->msg_at] == ',')
            c->msg_at = json_span_skip_ws(req->body, c->msg_at + 1, req->body_len);
    }
    jw_array_close(w);
    return answers;
}

/* ---- Transport ---- */

static void serve(const app *a, api_request *req, api_response *res, const char *bound);

void handle_mcp(const app *a, api_request *req, api_response *res)
{
    /* The routes' Host and Origin check, answered as the transport does. */
    const char *refused = host_guard_refusal(&a->hosts, a->keys == NULL, api_header(req, "Host"),
                                             api_header(req, "Origin"));
    if (refused) {
        char msg[300];
        snprintf(msg, sizeof(msg), "Forbidden: %s", refused);
        respond_rpc_error(res, 403, RPC_TRANSPORT, msg);
        return;
    }
    const char *tenant = "default";
    if (a->keys && !(tenant = tenants_authenticate_request(a->keys, req))) {
        respond_fail(res, ERR_UNKNOWN_CALLER,
                     "exactly one valid \"Authorization: Bearer <api-key>\" header is required");
        res->www_authenticate = "Bearer realm=\"compactd\"";
        return;
    }
    api_call_of(req)->tenant = tenant;
    serve(a, req, res, NULL);
}

/* The routes' dispatch has checked Host, Origin and the key, and bound the
 * session, as on every /v1 route. */
void handle_session_mcp(const app *a, api_request *req, api_response *res)
{
    serve(a, req, res, api_call_of(req)->session);
}

/* Everything after who may ask: one message or a batch, answered. */
static void serve(const app *a, api_request *req, api_response *res, const char *bound)
{
    if (!api_content_is_json(req)) {
        respond_fail(res, ERR_NOT_JSON,
                     "MCP messages must be sent as Content-Type: application/json");
        return;
    }
    const char *version = api_header(req, "MCP-Protocol-Version");
    if (version && !version_known(version)) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "Bad Request: unsupported MCP-Protocol-Version '%.32s' (supported: %s, %s, %s, "
                 "%s, %s)",
                 version, versions[0], versions[1], versions[2], versions[3], versions[4]);
        respond_rpc_error(res, 400, RPC_TRANSPORT, msg);
        return;
    }
    rpc_context c = {a, req, version ? version : VERSION_ASSUMED, 0, bound};

    /* The same shape guard and limits as every route, before any tree. */
    json_budget budget;
    compactd_error shape = {0};
    json_budget_init(&budget, &a->cfg->limits);
    if (json_shape_check(req->body, req->body_len, &a->cfg->limits, SHAPE_DEPTH_MCP, NULL, &budget,
                         &shape) != 0) {
        char msg[sizeof(shape.path) + sizeof(shape.message) + 32];
        snprintf(msg, sizeof(msg), "Invalid Request: %s %s", shape.path, shape.message);
        metrics_record_mcp("invalid", NULL, OUTCOME_ERROR);
        api_call_of(req)->facts.mcp_method = "invalid";
        respond_rpc_error(res, 400, RPC_INVALID_REQUEST, msg);
        return;
    }
    json_error_t jerr;
    json_t *doc = req->body
                      ? json_loadb(req->body, req->body_len,
                                   JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr)
                      : NULL;
    if (!doc) {
        char msg[300];
        snprintf(msg, sizeof(msg), "Parse error: %s", req->body ? jerr.text : "empty body");
        metrics_record_mcp("invalid", NULL, OUTCOME_ERROR);
        api_call_of(req)->facts.mcp_method = "invalid";
        respond_rpc_error(res, 400, RPC_PARSE_ERROR, msg);
        return;
    }
    /* The body stays until the request ends: tools pass their arguments on
     * as sent. */
    jw w;
    jw_init(&w, 1024);
    int answers = 0, status = 200;
    if (json_is_array(doc)) {
        char msg[160];
        size_t n = json_array_size(doc);
        if (n > (size_t)a->cfg->mcp_max_batch) {
            snprintf(msg, sizeof(msg),
                     "Invalid Request: a batch of %zu messages; at most %d "
                     "(COMPACTD_MCP_MAX_BATCH)",
                     n, a->cfg->mcp_max_batch);
            json_decref(doc);
            jw_discard(&w);
            metrics_record_mcp("invalid", NULL, OUTCOME_ERROR);
            api_call_of(req)->facts.mcp_method = "batch";
            respond_rpc_error(res, 400, RPC_INVALID_REQUEST, msg);
            return;
        }
        if (!batches_allowed(c.version) || n == 0) {
            snprintf(msg, sizeof(msg),
                     json_array_size(doc) == 0
                         ? "Invalid Request: an empty batch"
                         : "Invalid Request: protocol version %s has no JSON-RPC batches; send "
                           "one message per POST",
                     c.version);
            json_decref(doc);
            jw_discard(&w);
            metrics_record_mcp("invalid", NULL, OUTCOME_ERROR);
            api_call_of(req)->facts.mcp_method = "batch";
            respond_rpc_error(res, 400, RPC_INVALID_REQUEST, msg);
            return;
        }
        api_call_of(req)->facts.mcp_method = "batch";
        answers = run_batch(&c, doc, &w);
    } else {
        c.msg_at = json_span_skip_ws(req->body, 0, req->body_len);
        int r = answer_message(&c, doc, &w, 0);
        answers = r != NO_ANSWER;
        status = r == INVALID ? 400 : 200;
    }
    json_decref(doc);

    size_t len;
    char *body = jw_finish(&w, &len);
    if (!answers) { /* notifications and client answers only */
        free(body);
        res->status = 202;
        res->body = NULL;
        res->len = 0;
        res->content_type = NULL;
        return;
    }
    respond_json(res, status, body, len);
}
