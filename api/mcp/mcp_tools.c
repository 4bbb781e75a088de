/* MCP tools: each call's arguments are decoded into the typed request of
 * one operation (ops.h), run for the session they name, and its answer
 * written as a CallToolResult (the answer's document as structuredContent,
 * text content for the model; a spill's text as the text content alone). */
#include "mcp.h"

#include "answer_account.h"
#include "answers.h"
#include "error_status.h"
#include "json_decode.h"
#include "json_text.h"
#include "json_encode.h"
#include "json_escape.h"
#include "json_region.h"
#include "log_codec.h"
#include "pointer.h"
#include "session_id.h"
#include "sha256.h"
#include "spill_page.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char mcp_tools_spec[];
extern const size_t mcp_tools_spec_len;
extern const char mcp_session_tools_spec[];
extern const size_t mcp_session_tools_spec_len;

const char *mcp_tools_list_json(int bound, size_t *len)
{
    *len = bound ? mcp_session_tools_spec_len : mcp_tools_spec_len;
    return bound ? mcp_session_tools_spec : mcp_tools_spec;
}

/* ---- Results ---- */

/* Opens a CallToolResult with its one text content. */
static void result_open(jw *w, const char *text, size_t text_len)
{
    jw_object_open(w);
    jw_member(w, "content");
    jw_array_open(w);
    jw_object_open(w);
    jw_member_cstring(w, "type", "text");
    jw_member_string(w, "text", text, text_len);
    jw_object_close(w);
    jw_array_close(w);
}

static void write_result(jw *w, const char *text, size_t text_len, const char *structured,
                         size_t structured_len, int is_error)
{
    result_open(w, text, text_len);
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

/* A page of a spill as the tool's result: its text once, as the text
 * content the model reads (then, on a page not the last, a second text
 * saying how to read on), and the rest of the record with the page's
 * members as structuredContent, in room taken at once and no larger than
 * what a compaction made sure every front can give (spill_answer_bytes()).
 * Returns 0, or 1 when the room was refused (the message is then answered
 * -32001). */
static int spill_result(jw *w, const store_record *s, const spill_page *p)
{
    store_record page = spill_page_record(s, p);
    if (jw_try_reserve(w, spill_answer_bytes(s->key, s->key_len, page.text, page.text_len)) != 0)
        return 1;
    char note[256] = "";
    if (p->end < p->len)
        spill_page_note(p, note, sizeof(note));
    jw_object_open(w);
    jw_member(w, "content");
    jw_array_open(w);
    jw_object_open(w);
    jw_member_cstring(w, "type", "text");
    jw_member_string(w, "text", page.text, page.text_len);
    jw_object_close(w);
    if (note[0]) {
        jw_object_open(w);
        jw_member_cstring(w, "type", "text");
        jw_member_cstring(w, "text", note);
        jw_object_close(w);
    }
    jw_array_close(w);
    jw_member(w, "structuredContent");
    json_write_spill(w, &page, p, 0);
    jw_object_close(w);
    return 0;
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

/* An operation's failure as a tool error: its type, message and JSON
 * path, then its document (a CompactionFailure names the unit and the
 * budget it needs). */
static int answer_failed(jw *w, const answer *a)
{
    const compactd_error *e = &a->err;
    if (!a->body)
        return tool_error(w, "Internal: out of memory");
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s: %s%s%s%s", error_type(e->kind), e->message,
             e->path[0] ? " (at " : "", e->path, e->path[0] ? " of the arguments)" : "");
    jw_object_open(w);
    jw_member(w, "content");
    jw_array_open(w);
    jw_object_open(w);
    jw_member_cstring(w, "type", "text");
    jw_member_cstring(w, "text", msg);
    jw_object_close(w);
    if (a->len) {
        jw_object_open(w);
        jw_member_cstring(w, "type", "text");
        jw_member_string(w, "text", a->body, a->len);
        jw_object_close(w);
    }
    jw_array_close(w);
    jw_member(w, "isError");
    jw_bool(w, 1);
    jw_object_close(w);
    return 1;
}

/* An operation's answer as the tool's result: a success is its document as
 * structuredContent and as text; anything else is a tool error. Frees the
 * answer's body. */
static int tool_answer(jw *w, answer *a)
{
    int rc = 0;
    if (a->status < 200 || a->status > 299 || !a->body)
        rc = answer_failed(w, a);
    else
        write_result(w, a->body, a->len, a->body, a->len, 0);
    free(a->body);
    a->body = NULL;
    return rc;
}

/* ---- The session a call runs for ---- */

typedef struct {
    char session[SESSION_ID_MAX + 1];
    char ns[NAMESPACE_MAX + 1]; /* "tenant:session" */
    ops_scope scope;
} tool_session;

/* The session from the endpoint (bound) or else from the arguments, the
 * tenant from the MCP request. Returns 0, or 1 after writing a tool error. */
static int tool_scope(tool_session *t, const api_request *outer, const char *bound, json_t *args,
                      jw *w)
{
    if (bound) {
        if (args && !json_is_object(args))
            return tool_error(w, "the arguments must be a JSON object");
        snprintf(t->session, sizeof(t->session), "%s", bound);
        snprintf(t->ns, sizeof(t->ns), "%s", api_call_of(outer)->ns);
        t->scope = (ops_scope){t->ns, t->session, NULL, &json_log_codec};
        return 0;
    }
    if (!json_is_object(args))
        return tool_error(w, "the arguments must be a JSON object with at least \"session\"");
    json_t *s = json_object_get(args, "session");
    const char *session = json_string_value(s);
    if (!session)
        return tool_error(w, "arguments.session is required: a string, the session id the context "
                             "(and its pointers) belongs to");
    size_t n = json_string_length(s);
    if (!session_id_valid(session, n))
        return tool_error(w, "arguments.session must be " SESSION_ID_RULE);
    memcpy(t->session, session, n + 1);
    snprintf(t->ns, sizeof(t->ns), "%s:%s", api_call_of(outer)->tenant, t->session);
    t->scope = (ops_scope){t->ns, t->session, NULL, &json_log_codec};
    return 0;
}

/* ---- Tools that decode their arguments as a request ---- */

/* Decodes the arguments (text, len bytes; "session" is the call's own) and
 * runs the operation into ans. */
typedef void (*decode_run_fn)(const app *a, const ops_scope *s, const char *text, size_t len,
                              request_facts *f, answer *ans);

/* A decoding failure is answered as it is and counted as invalid. */
static void invalid_arguments(const compactd_error *err, request_facts *f, answer *ans)
{
    f->outcome = OUTCOME_INVALID;
    answer_error(ans, err);
}

static void run_compact_tool(const app *a, const ops_scope *s, const char *text, size_t len,
                             request_facts *f, answer *ans)
{
    compact_input in;
    compactd_error err = {0};
    if (json_decode_compact_args(text, len, "session", &a->cfg->limits, &in, &err) != 0) {
        invalid_arguments(&err, f, ans);
        return;
    }
    run_compact(s, &in, f, ans);
    compact_input_free(&in);
}

static void run_messages_tool(const app *a, const ops_scope *s, const char *text, size_t len,
                              request_facts *f, answer *ans)
{
    chat_input in;
    compactd_error err = {0};
    /* in borrows text: each message's JSON is its bytes in it. */
    if (chat_decode_compact_args(text, len, "session", &a->cfg->limits, &in, &err) != 0)
        invalid_arguments(&err, f, ans);
    else
        run_compact_messages(s, &in, f, ans);
    chat_input_free(&in);
}

static void run_verify_tool(const app *a, const ops_scope *s, const char *text, size_t len,
                            request_facts *f, answer *ans)
{
    verify_input in;
    compactd_error err = {0};
    if (json_decode_verify_args(text, len, "session", &a->cfg->limits, &in, &err) != 0) {
        invalid_arguments(&err, f, ans);
        return;
    }
    run_verify(s, &in, NULL, 0, f, ans);
    verify_input_free(&in);
}

/* What a tool's result holds beyond the operation's answer (len bytes) while
 * it is written in place into the JSON-RPC answer (mcp.c): the answer as
 * structuredContent and again escaped as text, with room for the framing. */
static size_t tool_result_extra(const char *body, size_t len)
{
    return len + json_escape_len(body, len) + 1024;
}

/* compact, compact_messages and verify: the arguments are decoded from
 * their bytes as the client sent them when raw has them (a chat message's
 * spill is its bytes as sent), else from jansson's writing of them. */
static int decoding_tool(const app *a, api_request *outer, json_t *args, const char *raw,
                         size_t raw_len, jw *w, decode_run_fn run)
{
    tool_session t;
    answer ans;
    if (tool_scope(&t, outer, NULL, args, w))
        return 1;
    char *written = raw ? NULL : json_dumps(args, JSON_COMPACT);
    if (!raw && !written)
        return tool_error(w, "Internal: out of memory");
    /* A compaction's answer is sized as this front sends it before
     * anything is committed (answers.c). */
    answer_front_fn was = answer_set_front(tool_result_extra);
    run(a, &t.scope, raw ? raw : written, raw ? raw_len : strlen(written),
        &api_call_of(outer)->facts, &ans);
    answer_set_front(was);
    int rc = tool_answer(w, &ans);
    json_text_free(written);
    return rc;
}

static int tool_compact(const app *a, api_request *outer, const char *bound, json_t *args,
                        const char *raw, size_t raw_len, jw *w)
{
    (void)bound;
    return decoding_tool(a, outer, args, raw, raw_len, w, run_compact_tool);
}

static int tool_compact_messages(const app *a, api_request *outer, const char *bound, json_t *args,
                                 const char *raw, size_t raw_len, jw *w)
{
    (void)bound;
    return decoding_tool(a, outer, args, raw, raw_len, w, run_messages_tool);
}

static int tool_verify(const app *a, api_request *outer, const char *bound, json_t *args,
                       const char *raw, size_t raw_len, jw *w)
{
    (void)bound;
    return decoding_tool(a, outer, args, raw, raw_len, w, run_verify_tool);
}

/* ---- Spills ---- */

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

static int tool_list_spills(const app *a, api_request *outer, const char *bound, json_t *args,
                            const char *raw, size_t raw_len, jw *w)
{
    (void)a;
    (void)raw;
    (void)raw_len;
    static const char *const names[] = {"session", NULL};
    tool_session t;
    if (tool_scope(&t, outer, bound, args, w) || only_arguments(args, names + (bound != NULL), w))
        return 1;
    ops_spill_list_result r;
    compactd_error err = {0};
    answer ans;
    int rc = ops_spill_list(&t.scope, &r, &err);
    if (r.outcome)
        api_call_of(outer)->facts.outcome = r.outcome;
    answer_spill_list(&ans, t.session, &r, rc == 0 ? NULL : &err);
    ops_spill_list_result_free(&r);
    return tool_answer(w, &ans);
}

/* ---- reacquire ---- */

/* A prefix several versions share: the model is told the full digests,
 * and what it can do with the arguments this endpoint takes. On /mcp it
 * chooses by "key" and "sha256"; a session's endpoint (bound) takes only
 * the pointer, whose 16 digits cannot choose. */
static int ambiguous(jw *w, const spill_candidates *amb, const char *key, const char *prefix,
                     const char *bound)
{
    char list[8 * (SHA256_HEX_LEN + 2) + 1] = ""; /* more are not worth a model's reading */
    for (size_t i = 0; i < amb->n; i++) {
        const char *sha = amb->sha256[i];
        if (strlen(list) + strlen(sha) + 3 < sizeof(list))
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", sha);
    }
    if (bound)
        return tool_error(w,
                          "Ambiguous: the pointer's sha256 %s matches several texts of key "
                          "'%.200s' in this conversation (sha256 %s). This reacquire takes only "
                          "the pointer, which cannot tell them apart, so none is returned: do "
                          "not act on what the pointer stood for, and say that its text cannot "
                          "be re-acquired.",
                          prefix, key, list);
    return tool_error(w,
                      "Ambiguous: sha256 %s matches several versions of key '%.200s'. Call "
                      "reacquire again with \"key\" and \"sha256\" set to one of these full "
                      "digests: %s",
                      prefix, key, list);
}

/* The spill the arguments name: a pointer's text, or a key and a digest
 * prefix, into key (room for UNIT_KEY_MAX_BYTES + 1) and prefix. Returns 0,
 * or 1 after writing a tool error. */
static int spill_named(json_t *args, char *key, size_t *key_len, char prefix[SHA256_HEX_LEN + 1],
                       jw *w)
{
    json_t *pointer = json_object_get(args, "pointer");
    json_t *k = json_object_get(args, "key"), *sha = json_object_get(args, "sha256");
    if (pointer && (k || sha))
        return tool_error(w, "give either \"pointer\", or \"key\" and \"sha256\", not both");
    if (pointer) {
        char p16[POINTER_SHA_HEX + 1];
        if (!json_is_string(pointer) ||
            pointer_parse(json_string_value(pointer), json_string_length(pointer), key,
                          UNIT_KEY_MAX_BYTES + 1, key_len, p16) != 0 ||
            memchr(key, 0, *key_len))
            return tool_error(w, "\"pointer\" is not a compactd pointer: pass the text exactly "
                                 "as it appears in the context, such as [externalized build.log "
                                 "sha256:5d1e0a3b9c7f2e41]");
        memcpy(prefix, p16, sizeof(p16));
        return 0;
    }
    if (!json_is_string(k) || !json_is_string(sha))
        return tool_error(w, "give \"pointer\" (the pointer text), or \"key\" and \"sha256\" "
                             "(strings: the unit key and 16 to 64 hex digits of its digest)");
    *key_len = json_string_length(k);
    if (*key_len == 0 || *key_len > UNIT_KEY_MAX_BYTES || memchr(json_string_value(k), 0, *key_len))
        return tool_error(w, "\"key\" must be 1 to %d bytes", UNIT_KEY_MAX_BYTES);
    memcpy(key, json_string_value(k), *key_len + 1);
    /* The read checks the digits. */
    if (json_string_length(sha) > SHA256_HEX_LEN)
        return tool_error(w,
                          "\"sha256\" must be %d to %d lower-case hex digits (the pointer "
                          "shows %d)",
                          POINTER_SHA_HEX, SHA256_HEX_LEN, POINTER_SHA_HEX);
    snprintf(prefix, SHA256_HEX_LEN + 1, "%s", json_string_value(sha));
    return 0;
}

/* What the model is told when a pointer finds nothing: the same words
 * whether the text never existed or is another tenant's or session's, so
 * that nothing about them is revealed, and no session id (the model needs
 * none to act on it). */
static int not_found(jw *w, const char *key, const char *prefix, const char *bound)
{
    if (bound)
        return tool_error(w,
                          "NotFound: this conversation holds no text of key '%.200s' with sha256 "
                          "%s. Check that the pointer is copied exactly; list_spills shows what "
                          "it holds. Until the text is re-acquired, do not act on what the "
                          "pointer stood for.",
                          key, prefix);
    return tool_error(w,
                      "NotFound: no spill of key '%.200s' with sha256 %s in that session. "
                      "Check that session is the one whose context held the pointer and that "
                      "the pointer is copied exactly; list_spills with the same session shows "
                      "what it holds. Until the text is re-acquired, do not act on what the "
                      "pointer stood for.",
                      key, prefix);
}

/* The page a call asks for, cut before the read is logged. */
typedef struct {
    spill_page_args args;
    spill_page page;
} page_cut;

static int cut_page(void *ctx, const store_record *spill, compactd_error *err)
{
    page_cut *c = ctx;
    return spill_page_cut(&c->args, spill->text, spill->text_len, &c->page, err);
}

/* The page arguments: offset and max_tokens from the call; the tokenizer
 * from it too on /mcp, from the endpoint's query on a session's. 0, or 1
 * after writing a tool error. */
static int page_arguments(const app *a, const api_request *outer, const char *bound, json_t *args,
                          spill_page_args *out, jw *w)
{
    compactd_error err = {0};
    int64_t max = (int64_t)a->cfg->limits.max_text_bytes;
    spill_page_args q;
    if (bound &&
        spill_page_args_query(NULL, NULL, api_query(outer, "tokenizer"), max, &q, &err) != 0)
        return tool_error(w, "InvalidRequest: %s (of the endpoint's URL)", err.message);
    if (spill_page_args_json(json_object_get(args, "offset"), json_object_get(args, "max_tokens"),
                             bound ? NULL : json_object_get(args, "tokenizer"), max, out,
                             &err) != 0)
        return tool_error(w, "InvalidRequest: %s (at %s of the arguments)", err.message, err.path);
    if (bound)
        out->tk = q.tk;
    return 0;
}

static int tool_reacquire(const app *a, api_request *outer, const char *bound, json_t *args,
                          const char *raw, size_t raw_len, jw *w)
{
    (void)raw;
    (void)raw_len;
    static const char *const names[] = {"session", "pointer",    "key",       "sha256",
                                        "offset",  "max_tokens", "tokenizer", NULL};
    static const char *const bound_names[] = {"pointer", "offset", "max_tokens", NULL};
    char key[UNIT_KEY_MAX_BYTES + 1], prefix[SHA256_HEX_LEN + 1];
    size_t key_len = 0;
    tool_session t;
    page_cut cut = {0};
    if (tool_scope(&t, outer, bound, args, w) ||
        only_arguments(args, bound ? bound_names : names, w))
        return 1;
    if (bound && !json_object_get(args, "pointer"))
        return tool_error(w, "\"pointer\" is required: the pointer text exactly as it appears "
                             "in the context, such as [externalized build.log "
                             "sha256:5d1e0a3b9c7f2e41]");
    if (spill_named(args, key, &key_len, prefix, w) ||
        page_arguments(a, outer, bound, args, &cut.args, w))
        return 1;

    ops_spill_ref ref = {key, key_len, prefix};
    ops_spill_result r;
    compactd_error err = {0};
    answer ans = {0};
    int rc = ops_reacquire(&t.scope, &ref, "mcp", cut_page, &cut, &r, &err);
    if (r.outcome)
        api_call_of(outer)->facts.outcome = r.outcome;
    if (rc == 0) {
        rc = spill_result(w, &r.spill, &cut.page);
    } else if (err.kind == ERR_NOT_FOUND) {
        rc = not_found(w, key, prefix, bound);
    } else if (err.kind == ERR_AMBIGUOUS) {
        rc = ambiguous(w, &r.amb, key, prefix, bound);
    } else if (err.kind == ERR_INVALID_REQUEST) {
        rc = tool_error(w, "InvalidRequest: %s (at %s of the arguments)", err.message, err.path);
    } else {
        answer_spill(&ans, &r, NULL, &err);
        rc = tool_answer(w, &ans);
    }
    ops_spill_result_free(&r);
    return rc;
}

/* ---- Table ---- */

typedef int (*tool_fn)(const app *a, api_request *outer, const char *bound, json_t *args,
                       const char *raw, size_t raw_len, jw *w);

/* Every tool of api/mcp/mcp_tools.json, by name; bound: also one of
 * api/mcp/mcp_session_tools.json. */
static const struct {
    const char *name;
    tool_fn fn;
    int bound;
} tools[] = {
    {"reacquire", tool_reacquire, 1}, {"list_spills", tool_list_spills, 1},
    {"compact", tool_compact, 0},     {"compact_messages", tool_compact_messages, 0},
    {"verify", tool_verify, 0},
};

#define NTOOLS ((int)(sizeof(tools) / sizeof(tools[0])))

int mcp_tool_find(const char *name, int bound)
{
    for (int i = 0; i < NTOOLS; i++)
        if (strcmp(tools[i].name, name) == 0 && (tools[i].bound || !bound))
            return i;
    return -1;
}

const char *mcp_tool_name(int tool)
{
    return tools[tool].name;
}

int mcp_tool_call(const app *a, api_request *outer, int tool, const char *bound, json_t *args,
                  const char *raw, size_t raw_len, jw *w)
{
    return tools[tool].fn(a, outer, bound, args, raw, raw_len, w);
}
