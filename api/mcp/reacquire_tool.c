/* The reacquire tool for an orchestrator that calls a model's API itself:
 * GET /v1/sessions/{session}/tools gives its definition in a provider's
 * tool schema, POST /v1/sessions/{session}/reacquire runs a call of it
 * (the arguments the model produced) and answers what the tool result
 * carries. The definition, which each format's descriptor holds, is the
 * per-session MCP endpoint's reacquire (api/mcp/mcp_session_tools.json),
 * both written from spec/shared.json, so the model reads the same words
 * whichever way it reaches the tool. */
#include "handlers.h"

#include "answers.h"
#include "json_shape.h"
#include "mcp.h"
#include "pointer.h"
#include "plan.h"
#include "shared_defs.h"
#include "spill_page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Definitions ---- */

/* The definition in f's tool schema: a new reference, or NULL when out of
 * memory. */
static json_t *definition(const chat_format *f)
{
    return json_loads(f->reacquire_tool, 0, NULL);
}

char *reacquire_tool_json(const chat_format *f)
{
    json_t *def = definition(f);
    char *json = def ? json_dumps_plain(def, JSON_COMPACT) : NULL;
    json_decref(def);
    return json;
}

void handle_session_tools(const app *a, api_request *req, api_response *res)
{
    const char *asked = api_query(req, "format");
    (void)a;
    const chat_format *f = asked ? chat_format_find(asked, strlen(asked)) : NULL;
    if (!f) {
        compactd_error err = {ERR_INVALID_REQUEST, "", ""};
        snprintf(err.message, sizeof(err.message),
                 "query parameter format is required: " CHAT_FORMATS_LISTED);
        respond_error(res, &err);
        return;
    }
    json_t *def = definition(f);
    json_t *doc = def ? json_pack("{sss[O]}", "format", f->name, "tools", def) : NULL;
    char *body = doc ? json_dumps_plain(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    json_decref(def);
    respond_json(res, 200, body, body ? strlen(body) : 0);
}

/* ---- Running a call ---- */

/* The tool call's arguments: an object with "pointer", the pointer text,
 * and optionally "offset" and "max_tokens" (a page, spill_page.h; null as
 * absent, as a strict-mode model sends them). Fills key
 * (UNIT_KEY_MAX_BYTES + 1 bytes of room), the digest prefix and the page
 * asked for (its tokenizer from the query). 0, or -1 with an
 * InvalidRequest naming the field. */
static int decode_arguments(const app *a, const api_request *req, char *key, size_t *key_len,
                            char prefix[POINTER_SHA_HEX + 1], spill_page_args *page,
                            compactd_error *err)
{
    json_budget budget;
    json_budget_init(&budget, &a->cfg->limits);
    json_t *args = json_parse_request(req->body, req->body_len, &a->cfg->limits, 2, &budget, err);
    if (!args)
        return -1;
    int rc = -1;
    const char *name;
    json_t *v, *pointer = json_object_get(args, "pointer");
    json_object_foreach(args, name, v)
    {
        if (strcmp(name, "pointer") != 0 && strcmp(name, "offset") != 0 &&
            strcmp(name, "max_tokens") != 0) {
            error_set(err, ERR_INVALID_REQUEST,
                      "unknown field: the arguments are {\"pointer\": \"<pointer text>\"}, "
                      "and optionally \"offset\" and \"max_tokens\"");
            snprintf(err->path, sizeof(err->path), "$.%.*s", error_quote_len(name, strlen(name)),
                     name);
            goto done;
        }
    }
    snprintf(err->path, sizeof(err->path), "$.pointer");
    if (!json_is_string(pointer)) {
        error_set(err, ERR_INVALID_REQUEST, "%s: the pointer text as it appears in the context",
                  pointer ? "pointer must be a string" : "pointer is required");
        goto done;
    }
    if (pointer_parse(json_string_value(pointer), json_string_length(pointer), key,
                      UNIT_KEY_MAX_BYTES + 1, key_len, prefix) != 0) {
        error_set(err, ERR_INVALID_REQUEST,
                  "not a compactd pointer: pass the text exactly as it appears in the context, "
                  "such as [externalized build.log sha256:5d1e0a3b9c7f2e41]");
        goto done;
    }
    err->path[0] = '\0';
    /* The tokenizer is the orchestrator's, in the route's query; the page
     * is the model's, in the arguments. */
    spill_page_args from_query;
    if (spill_page_args_query(NULL, NULL, api_query(req, "tokenizer"),
                              (int64_t)a->cfg->limits.max_text_bytes, &from_query, err) != 0 ||
        spill_page_args_json(json_object_get(args, "offset"), json_object_get(args, "max_tokens"),
                             NULL, (int64_t)a->cfg->limits.max_text_bytes, page, err) != 0)
        goto done;
    page->tk = from_query.tk;
    rc = 0;
done:
    json_region_release(args);
    return rc;
}

void handle_session_reacquire(const app *a, api_request *req, api_response *res)
{
    char key[UNIT_KEY_MAX_BYTES + 1], prefix[POINTER_SHA_HEX + 1];
    size_t key_len = 0;
    spill_page_args args;
    compactd_error err = {0};
    if (decode_arguments(a, req, key, &key_len, prefix, &args, &err) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &err);
        return;
    }
    api_release_body(req);
    ops_spill_ref ref = {key, key_len, prefix};
    ops_spill_result r;
    spill_page_request cut = {&args, {0}};
    answer ans;
    ops_scope s = api_scope(req);
    int rc = ops_reacquire(&s, &ref, "tool", spill_page_check, &cut, &r, &err);
    if (r.outcome)
        api_call_of(req)->facts.outcome = r.outcome;
    else if (rc != 0 && err.kind == ERR_INVALID_REQUEST)
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
    /* The answer's note is what the model is told to read on. */
    cut.page.with_note = 1;
    answer_spill(&ans, &r, &cut.page, rc == 0 ? NULL : &err);
    ops_spill_result_free(&r);
    respond_answer(res, &ans);
}
