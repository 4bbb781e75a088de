/* MCP tools: each call is decoded into the REST request it mirrors, run by
 * that route's handler, and its answer turned into a CallToolResult (the
 * REST body as structuredContent, text content for the model). */
#include "mcp.h"

#include "json_decode.h"
#include "json_encode.h"
#include "json_span.h"
#include "pointer.h"
#include "session.h"
#include "sha256.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char mcp_tools_spec[];
extern const size_t mcp_tools_spec_len;

const char *mcp_tools_list_json(size_t *len)
{
    *len = mcp_tools_spec_len;
    return mcp_tools_spec;
}

/* ---- Results ---- */

static void write_result(jw *w, const char *text, size_t text_len, const char *structured,
                         size_t structured_len, int is_error)
{
    jw_object_open(w);
    jw_member(w, "content");
    jw_array_open(w);
    jw_object_open(w);
    jw_member_cstring(w, "type", "text");
    jw_member_string(w, "text", text, text_len);
    jw_object_close(w);
    jw_array_close(w);
    if (structured) {
        jw_member(w, "structuredContent");
        jw_raw(w, structured, structured_len);
    }
    if (is_error) {
        jw_member(w, "isError");
        jw_bool(w, 1);
    }
    jw_object_close(w);
}

static int tool_error(jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int tool_error(jw *w, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_sanitize_text(msg);
    write_result(w, msg, strlen(msg), NULL, 0, 1);
    return 1;
}

/* A REST error answer as a tool error: its type, message and JSON path,
 * then the REST body itself (a CompactionFailure
 * names the unit and the budget it needs). */
static int rest_error(jw *w, const api_response *res)
{
    json_t *doc = res->body ? json_loadb(res->body, res->len, 0, NULL) : NULL;
    json_t *e = json_object_get(doc, "error");
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *message = json_string_value(json_object_get(e, "message"));
    const char *path = json_string_value(json_object_get(e, "path"));
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s: %s%s%s%s", type ? type : "Internal",
             message ? message : "out of memory", path ? " (at " : "", path ? path : "",
             path ? " of the arguments)" : "");
    json_decref(doc);
    jw_object_open(w);
    jw_member(w, "content");
    jw_array_open(w);
    jw_object_open(w);
    jw_member_cstring(w, "type", "text");
    jw_member_cstring(w, "text", msg);
    jw_object_close(w);
    if (res->body && res->len) {
        jw_object_open(w);
        jw_member_cstring(w, "type", "text");
        jw_member_string(w, "text", res->body, res->len);
        jw_object_close(w);
    }
    jw_array_close(w);
    jw_member(w, "isError");
    jw_bool(w, 1);
    jw_object_close(w);
    return 1;
}

/* ---- The inner REST request ---- */

typedef struct {
    api_request req;
    api_response res;
    char *body;
} inner_call;

/* Starts the REST request a tool call stands for: the session from the
 * arguments, the tenant and connection from the MCP request. Returns 0, or
 * 1 after writing a tool error. */
static int inner_begin(inner_call *c, const api_request *outer, json_t *args, const char *method,
                       jw *w)
{
    memset(c, 0, sizeof(*c));
    if (!json_is_object(args))
        return tool_error(w, "the arguments must be a JSON object with at least \"session\"");
    json_t *s = json_object_get(args, "session");
    const char *session = json_string_value(s);
    if (!session)
        return tool_error(w, "arguments.session is required: a string, the session id the context "
                             "(and its pointers) belongs to");
    size_t n = json_string_length(s);
    if (!session_id_valid(session, n))
        return tool_error(w, "arguments.session must be 1 to %d characters of [A-Za-z0-9._~-]",
                          SESSION_MAX);
    api_request *r = &c->req;
    r->method = method;
    r->path = outer->path;
    r->conn = outer->conn;
    r->inner = 1;
    r->tenant = outer->tenant;
    memcpy(r->session, session, n + 1);
    snprintf(r->ns, sizeof(r->ns), "%s:%s", r->tenant, r->session);
    r->facts.route = -1;
    r->facts.route_name = outer->facts.route_name;
    c->res.status = 500;
    c->res.content_type = "application/json";
    return 0;
}

/* The members of the arguments as written, less "session", into out (room
 * for all of raw and the braces). */
typedef struct {
    const char *raw;
    char *out;
    size_t len;
    size_t members;
    int session_seen;
} member_copy;

static void copy_member(void *cls, size_t name_start, size_t name_end, size_t value_start,
                        size_t value_end)
{
    member_copy *m = cls;
    (void)value_start;
    m->members++;
    if (name_end - name_start == 9 && memcmp(m->raw + name_start, "\"session\"", 9) == 0) {
        m->session_seen = 1;
        return;
    }
    if (m->len > 1)
        m->out[m->len++] = ',';
    /* Name, colon and value exactly as sent. */
    memcpy(m->out + m->len, m->raw + name_start, value_end - name_start);
    m->len += value_end - name_start;
}

/* The arguments less "session", as the REST body: their bytes as the
 * client sent them when raw is given and reads as expected, else written
 * out by jansson. Returns 0, or 1 after writing a tool error. */
static int inner_body(inner_call *c, json_t *args, const char *raw, size_t raw_len, jw *w)
{
    char *text = raw ? malloc(raw_len + 3) : NULL;
    if (text) {
        member_copy m = {raw, text, 1, 0, 0};
        text[0] = '{';
        int ok = json_span_members(raw, raw_len, 0, copy_member, &m) == 0 && m.session_seen &&
                 m.members == json_object_size(args);
        if (ok) {
            text[m.len++] = '}';
            text[m.len] = '\0';
            c->body = text;
            c->req.body = text;
            c->req.body_len = m.len;
            return 0;
        }
        free(text); /* a member name written with escapes: written out again */
    }
    json_t *copy = json_copy(args); /* shallow: the members stay shared */
    if (copy)
        json_object_del(copy, "session");
    c->body = copy ? json_dumps(copy, JSON_COMPACT) : NULL;
    json_decref(copy);
    if (!c->body)
        return tool_error(w, "Internal: out of memory");
    c->req.body = c->body;
    c->req.body_len = strlen(c->body);
    return 0;
}

/* What the REST handler counted becomes the MCP request's. */
static void facts_add(request_facts *to, const request_facts *from)
{
    if (from->outcome)
        to->outcome = from->outcome;
    to->units += from->units;
    for (int k = 0; k < UNIT_CLASSES; k++)
        for (int d = 0; d < PLAN_DECISIONS; d++)
            to->units_by[k][d] += from->units_by[k][d];
    for (int d = 0; d < PLAN_DECISIONS; d++)
        to->tokens_by[d] += from->tokens_by[d];
    to->spill_bytes += from->spill_bytes;
}

static void inner_end(inner_call *c, api_request *outer)
{
    facts_add(&outer->facts, &c->req.facts);
    free(c->res.body);
    free(c->body);
}

/* The REST answer as the tool's result: 2xx is the body as structuredContent
 * and as text; anything else is a tool error. */
static int rest_result(jw *w, const api_response *res)
{
    if (res->status < 200 || res->status > 299 || !res->body)
        return rest_error(w, res);
    write_result(w, res->body, res->len, res->body, res->len, 0);
    return 0;
}

/* ---- Tools ---- */

/* compact, compact_messages and verify: the arguments less session are the
 * REST body. */
static int body_tool(const app *a, api_request *outer, json_t *args, const char *raw,
                     size_t raw_len, jw *w, handler_fn handler)
{
    inner_call c;
    if (inner_begin(&c, outer, args, "POST", w) || inner_body(&c, args, raw, raw_len, w)) {
        free(c.body);
        return 1;
    }
    handler(a, &c.req, &c.res);
    int rc = rest_result(w, &c.res);
    inner_end(&c, outer);
    return rc;
}

static int tool_compact(const app *a, api_request *outer, json_t *args, const char *raw,
                        size_t raw_len, jw *w)
{
    return body_tool(a, outer, args, raw, raw_len, w, handle_compact);
}

static int tool_compact_messages(const app *a, api_request *outer, json_t *args, const char *raw,
                                 size_t raw_len, jw *w)
{
    return body_tool(a, outer, args, raw, raw_len, w, handle_messages_compact);
}

static int tool_verify(const app *a, api_request *outer, json_t *args, const char *raw,
                       size_t raw_len, jw *w)
{
    return body_tool(a, outer, args, raw, raw_len, w, handle_verify);
}

/* Refuses arguments other than the ones named (NULL-terminated). */
static int only_arguments(json_t *args, const char *const *names, jw *w)
{
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v)
    {
        int known = 0;
        for (const char *const *n = names; *n && !known; n++)
            known = strcmp(*n, k) == 0;
        if (!known)
            return tool_error(w, "unknown argument \"%.64s\"", k);
    }
    return 0;
}

static int tool_list_spills(const app *a, api_request *outer, json_t *args, const char *raw,
                            size_t raw_len, jw *w)
{
    (void)raw;
    (void)raw_len;
    static const char *const names[] = {"session", NULL};
    inner_call c;
    if (inner_begin(&c, outer, args, "GET", w) || only_arguments(args, names, w))
        return 1;
    handle_spill_list(a, &c.req, &c.res);
    int rc = rest_result(w, &c.res);
    inner_end(&c, outer);
    return rc;
}

/* ---- reacquire ---- */

/* The decision log records each re-acquisition that found its text. */
static void log_reacquire(const api_request *req, json_t *spill)
{
    char now[32];
    compaction_timestamp(now);
    json_t *key = json_object_get(spill, "key");
    jw e;
    jw_init(&e, 256);
    jw_object_open(&e);
    jw_member_cstring(&e, "time", now);
    jw_member_cstring(&e, "kind", "reacquire");
    jw_member_cstring(&e, "outcome", "ok");
    jw_member_string(&e, "key", json_string_value(key), json_string_length(key));
    jw_member_cstring(&e, "sha256", json_string_value(json_object_get(spill, "sha256")));
    jw_member_int(&e, "tokens", json_integer_value(json_object_get(spill, "tokens")));
    jw_member_cstring(&e, "via", "mcp");
    jw_object_close(&e);
    size_t len;
    char *event = jw_finish(&e, &len);
    append_event_best_effort(req, event, len);
}

/* A prefix several versions share: the model is told the full digests to
 * choose from. */
static int ambiguous(jw *w, const api_response *res, const char *key, const char *prefix,
                     const char *session)
{
    char list[8 * (SHA256_HEX_LEN + 2) + 1] = ""; /* more are not worth a model's reading */
    json_t *doc = json_loadb(res->body, res->len, 0, NULL);
    json_t *cands = json_object_get(json_object_get(doc, "error"), "candidates");
    size_t i;
    json_t *v;
    json_array_foreach(cands, i, v)
    {
        const char *sha = json_string_value(v);
        if (sha && strlen(list) + strlen(sha) + 3 < sizeof(list))
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", sha);
    }
    json_decref(doc);
    return tool_error(w,
                      "Ambiguous: sha256 %s matches several versions of key '%.200s' in session "
                      "%s. Call reacquire again with \"key\" and \"sha256\" set to one of these "
                      "full digests: %s",
                      prefix, key, session, list);
}

static int tool_reacquire(const app *a, api_request *outer, json_t *args, const char *raw,
                          size_t raw_len, jw *w)
{
    (void)raw;
    (void)raw_len;
    static const char *const names[] = {"session", "pointer", "key", "sha256", NULL};
    inner_call c;
    if (inner_begin(&c, outer, args, "GET", w) || only_arguments(args, names, w))
        return 1;
    json_t *pointer = json_object_get(args, "pointer");
    json_t *key = json_object_get(args, "key"), *sha = json_object_get(args, "sha256");
    char keybuf[UNIT_KEY_MAX_BYTES + 1], prefix[SHA256_HEX_LEN + 1];
    size_t key_len = 0;

    if (pointer && (key || sha))
        return tool_error(w, "give either \"pointer\", or \"key\" and \"sha256\", not both");
    if (pointer) {
        char p16[POINTER_SHA_HEX + 1];
        if (!json_is_string(pointer) ||
            pointer_parse(json_string_value(pointer), json_string_length(pointer), keybuf,
                          sizeof(keybuf), &key_len, p16) != 0 ||
            memchr(keybuf, 0, key_len))
            return tool_error(w, "\"pointer\" is not a compactd pointer: pass the text exactly "
                                 "as it appears in the context, such as [externalized build.log "
                                 "sha256:5d1e0a3b9c7f2e41]");
        memcpy(prefix, p16, sizeof(p16));
    } else {
        if (!json_is_string(key) || !json_is_string(sha))
            return tool_error(w, "give \"pointer\" (the pointer text), or \"key\" and \"sha256\" "
                                 "(strings: the unit key and 16 to 64 hex digits of its digest)");
        key_len = json_string_length(key);
        if (key_len == 0 || key_len > UNIT_KEY_MAX_BYTES ||
            memchr(json_string_value(key), 0, key_len))
            return tool_error(w, "\"key\" must be 1 to %d bytes", UNIT_KEY_MAX_BYTES);
        memcpy(keybuf, json_string_value(key), key_len + 1);
        /* The REST read checks the digits. */
        if (json_string_length(sha) > SHA256_HEX_LEN)
            return tool_error(w,
                              "\"sha256\" must be %d to %d lower-case hex digits (the pointer "
                              "shows %d)",
                              SPILL_PREFIX_MIN, SHA256_HEX_LEN, SPILL_PREFIX_MIN);
        snprintf(prefix, sizeof(prefix), "%s", json_string_value(sha));
    }

    const char *query[] = {"sha256", prefix, NULL};
    c.req.tail = keybuf;
    c.req.inner_query = query;
    handle_spill_get(a, &c.req, &c.res);
    int rc;
    if (c.res.status == 200) {
        json_t *doc = json_loadb(c.res.body, c.res.len, JSON_ALLOW_NUL, NULL);
        json_t *text = json_object_get(doc, "text");
        if (json_is_string(text)) {
            write_result(w, json_string_value(text), json_string_length(text), c.res.body,
                         c.res.len, 0);
            log_reacquire(&c.req, doc);
            rc = 0;
        } else {
            rc = tool_error(w, "Internal: out of memory");
        }
        json_decref(doc);
    } else if (c.res.status == 404) {
        /* The same words whether the text never existed or is another
         * tenant's or session's: nothing about them is revealed. */
        rc = tool_error(w,
                        "NotFound: no spill of key '%.200s' with sha256 %s in session %s. "
                        "Check that session is the one whose context held the pointer and that "
                        "the pointer is copied exactly; list_spills {\"session\": \"%s\"} shows "
                        "what the session holds. Until the text is re-acquired, do not act on "
                        "what the pointer stood for.",
                        keybuf, prefix, c.req.session, c.req.session);
    } else if (c.res.status == 409) {
        rc = ambiguous(w, &c.res, keybuf, prefix, c.req.session);
    } else {
        rc = rest_error(w, &c.res);
    }
    inner_end(&c, outer);
    return rc;
}

/* ---- Table ---- */

typedef int (*tool_fn)(const app *a, api_request *outer, json_t *args, const char *raw,
                       size_t raw_len, jw *w);

/* Every tool of api/mcp_tools.json, by name. */
static const struct {
    const char *name;
    tool_fn fn;
} tools[] = {
    {"reacquire", tool_reacquire}, {"list_spills", tool_list_spills},
    {"compact", tool_compact},     {"compact_messages", tool_compact_messages},
    {"verify", tool_verify},
};

#define NTOOLS ((int)(sizeof(tools) / sizeof(tools[0])))

int mcp_tool_find(const char *name)
{
    for (int i = 0; i < NTOOLS; i++)
        if (strcmp(tools[i].name, name) == 0)
            return i;
    return -1;
}

const char *mcp_tool_name(int tool)
{
    return tools[tool].name;
}

int mcp_tool_call(const app *a, api_request *outer, int tool, json_t *args, const char *raw,
                  size_t raw_len, jw *w)
{
    return tools[tool].fn(a, outer, args, raw, raw_len, w);
}
