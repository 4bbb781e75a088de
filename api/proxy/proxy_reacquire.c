/* The model's reacquire calls answered inside the proxy: each call's page
 * read back from the session's spills (ops_reacquire(), logged as any
 * re-acquisition is, via "proxy"), cut to the room the budget still has,
 * and the exchange the next round's history gets (the model's turn as it
 * returned it, then the results), priced as it is appended. */
#include "proxy_internal.h"

#include "json_region.h"

#include "mcp.h"
#include "pointer.h"
#include "spill_page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *proxy_reacquire_tool(const proxy_api *api)
{
    return reacquire_tool_json(api->format);
}

/* ---- Prices ---- */

/* Framing tokens per message, as compactd prices a history (README). */
#define FRAME 4
/* Room kept for the note after a page that is not the last. */
#define NOTE_ROOM 96

/* The tokens of every string in v: at least what the provider's texts of
 * it cost under the format's pricing (every text a message renders). */
static int64_t strings_tokens(const tokenizer *tk, const json_t *v)
{
    int64_t n = 0;
    const char *k;
    json_t *x;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return tokenizer_count(tk, json_string_value(v), json_string_length(v));
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, k, x) n += strings_tokens(tk, x);
        return n;
    case JSON_ARRAY:
        json_array_foreach(v, i, x) n += strings_tokens(tk, x);
        return n;
    default:
        return 0;
    }
}

/* ---- One call ---- */

/* The call's arguments as an object (a new reference), or NULL. */
static json_t *call_arguments(const proxy_api *api, json_t *call)
{
    if (api->kind == PROXY_MESSAGES)
        return json_incref(json_object_get(call, "input"));
    json_t *holder = api->kind == PROXY_CHAT ? json_object_get(call, "function") : call;
    const char *s = json_string_value(json_object_get(holder, "arguments"));
    return s ? json_loads(s, 0, NULL) : NULL;
}

/* What the tool result says: the page, with the note that tells how to
 * read on, or why there is none. A new string, or NULL. */
static char *answer_call(proxy_reacquirer *r, json_t *args, int64_t room)
{
    char msg[600];
    char key[UNIT_KEY_MAX_BYTES + 1], prefix[POINTER_SHA_HEX + 1];
    size_t key_len = 0;
    json_t *pointer = json_object_get(args, "pointer");
    if (!json_is_string(pointer) ||
        pointer_parse(json_string_value(pointer), json_string_length(pointer), key, sizeof(key),
                      &key_len, prefix) != 0)
        return strdup(
            "compactd: reacquire needs \"pointer\": the pointer text exactly as it "
            "appears in the context, such as [externalized build.log sha256:5d1e0a3b9c7f2e41]");
    if (room < 1)
        return strdup("compactd: the budget has no room left for this text in this call; go on "
                      "with what the context holds");
    spill_page_args pa;
    compactd_error err = {0};
    int64_t most = (int64_t)r->a->cfg->limits.max_text_bytes;
    if (spill_page_args_json(json_object_get(args, "offset"), json_object_get(args, "max_tokens"),
                             NULL, most, &pa, &err) != 0) {
        snprintf(msg, sizeof(msg), "compactd: %s (%s)", err.message, err.path);
        return strdup(msg);
    }
    pa.tk = r->tk;
    if (pa.max_tokens == 0 || pa.max_tokens > room)
        pa.max_tokens = room;
    ops_spill_ref ref = {key, key_len, prefix};
    spill_page_request cut = {&pa, {0}};
    ops_spill_result res;
    int rc = ops_reacquire(r->scope, &ref, "proxy", spill_page_check, &cut, &res, &err);
    char *text = NULL;
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "compactd: %s", err.message);
        text = strdup(msg);
    } else {
        store_record page = spill_page_record(&res.spill, &cut.page);
        char note[512] = "";
        cut.page.with_note = 1;
        if (cut.page.end < cut.page.len)
            spill_page_note(&cut.page, note, sizeof(note));
        size_t nl = note[0] ? strlen(note) + 2 : 0;
        text = malloc(page.text_len + nl + 1);
        if (text) {
            memcpy(text, page.text, page.text_len);
            if (nl) {
                memcpy(text + page.text_len, "\n\n", 2);
                memcpy(text + page.text_len + 2, note, nl - 2);
            }
            text[page.text_len + nl] = '\0';
        }
    }
    ops_spill_result_free(&res);
    return text;
}

/* ---- The exchange ---- */

/* The call's id, as the result names it. */
static const char *call_id(const proxy_api *api, json_t *call)
{
    return json_string_value(
        json_object_get(call, api->kind == PROXY_RESPONSES ? "call_id" : "id"));
}

/* The model's turn as the next request carries it: Chat Completions' message
 * with its calls, Anthropic's content as returned (thinking signed and
 * whole), the Responses items as returned. A new reference. */
static json_t *model_turn(const proxy_api *api, json_t *doc)
{
    if (api->kind == PROXY_CHAT) {
        json_t *m = json_object_get(json_array_get(json_object_get(doc, "choices"), 0), "message");
        json_t *out =
            json_pack("{ss sO}", "role", "assistant", "content",
                      json_object_get(m, "content") ? json_object_get(m, "content") : json_null());
        json_t *calls = json_array(), *c;
        size_t i;
        json_array_foreach(json_object_get(m, "tool_calls"), i, c) json_array_append_new(
            calls, json_pack("{sO ss sO}", "id", json_object_get(c, "id"), "type", "function",
                             "function", json_object_get(c, "function")));
        json_object_set_new(out, "tool_calls", calls);
        return json_pack("[o]", out);
    }
    if (api->kind == PROXY_MESSAGES)
        return json_pack("[{ss sO}]", "role", "assistant", "content",
                         json_object_get(doc, "content"));
    return json_deep_copy(json_object_get(doc, "output"));
}

static json_t *result_element(const proxy_api *api, const char *id, const char *text)
{
    switch (api->kind) {
    case PROXY_CHAT:
        return json_pack("{ss ss ss}", "role", "tool", "tool_call_id", id, "content", text);
    case PROXY_MESSAGES:
        return json_pack("{ss ss ss}", "type", "tool_result", "tool_use_id", id, "content", text);
    case PROXY_RESPONSES:
    default:
        return json_pack("{ss ss ss}", "type", "function_call_output", "call_id", id, "output",
                         text);
    }
}

int proxy_reacquire_round(proxy_reacquirer *r, const proxy_api *api, const proxy_turn *t, jw *w)
{
    json_t *turn = model_turn(api, t->doc);
    json_t *results = json_array(), *parts, *p;
    if (!turn || !results)
        goto oom;
    int64_t cost = strings_tokens(r->tk, turn) + FRAME * (int64_t)json_array_size(turn);
    parts =
        api->kind == PROXY_CHAT
            ? json_object_get(
                  json_object_get(json_array_get(json_object_get(t->doc, "choices"), 0), "message"),
                  "tool_calls")
        : api->kind == PROXY_MESSAGES ? json_object_get(t->doc, "content")
                                      : json_object_get(t->doc, "output");
    size_t i;
    json_array_foreach(parts, i, p)
    {
        const char *id = call_id(api, p);
        if (!id || (api->kind != PROXY_CHAT && !json_is_string(json_object_get(p, "name"))))
            continue; /* not a call */
        json_t *args = call_arguments(api, p);
        /* What the result costs around its text, then the page gets the rest. */
        int64_t frame =
            FRAME + tokenizer_count(r->tk, id, strlen(id)) + tokenizer_count(r->tk, "tool", 4);
        char *text = answer_call(r, args, r->room - cost - frame - NOTE_ROOM);
        json_decref(args);
        if (!text)
            goto oom;
        cost += frame + tokenizer_count(r->tk, text, strlen(text));
        json_array_append_new(results, result_element(api, id, text));
        free(text);
    }
    if (api->kind == PROXY_MESSAGES) {
        json_t *user = json_pack("{ss sO}", "role", "user", "content", results);
        json_array_append_new(turn, user);
    } else {
        json_array_extend(turn, results);
    }
    r->room -= cost;
    char *s = json_dumps_plain(turn, JSON_COMPACT);
    if (!s)
        goto oom;
    /* The elements, without the array's brackets. */
    jw_append(w, s + 1, strlen(s) - 2);
    free(s);
    json_decref(turn);
    json_decref(results);
    return 0;
oom:
    json_decref(turn);
    json_decref(results);
    return -1;
}
