/* A proxied request's body: its parts found by a scan, everything but the
 * history parsed here and the history by the compaction (so that its bytes
 * are parsed once), the history handed to the compaction as
 * /messages/compact takes it, and the upstream's copy made
 * by splicing (the compacted history, the reacquire tool, a round's
 * exchange) into the bytes the client sent, every other member as sent. */
#include "proxy_internal.h"

#include "json_shape.h"
#include "json_span.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void invalid(api_response *res, const proxy_api *api, const compactd_error *err)
{
    proxy_fail(res, api, err->kind == ERR_INTERNAL ? 500 : 400,
               err->kind == ERR_INTERNAL ? "api_error" : "invalid_request_error",
               err->kind == ERR_INTERNAL ? "internal" : "invalid_request",
               err->path[0] ? err->path : NULL, -1, -1, "%s", err->message);
}

/* What the scan of the top-level members finds. */
typedef struct {
    const char *s;
    const proxy_api *api;
    proxy_body *out;
} member_finder;

static int named(const member_finder *f, size_t n0, size_t n1, const char *name)
{
    return name && n1 - n0 == strlen(name) + 2 && memcmp(f->s + n0 + 1, name, n1 - n0 - 2) == 0;
}

static void find_member(void *cls, size_t n0, size_t n1, size_t v0, size_t v1)
{
    member_finder *f = cls;
    proxy_body *b = f->out;
    /* The first of each: a second one is refused by the parse. */
    if (named(f, n0, n1, f->api->history) && b->hist1 == 0) {
        b->hist0 = v0;
        b->hist1 = v1;
    } else if (named(f, n0, n1, "tools") && b->tools1 == 0) {
        b->tools0 = v0;
        b->tools1 = v1;
    } else if (named(f, n0, n1, f->api->system) && b->sys1 == 0) {
        b->sys0 = v0;
        b->sys1 = v1;
    }
}

/* Parses the body, or, when its history is an array, the body with [] in
 * the history's place: the compaction parses the history itself, so that
 * its bytes are parsed once. A malformed body is named as a parse of the
 * whole names it (line and column as the client sent them). The parsed
 * document (json_region_release()), or NULL with err set. */
static json_t *parse_around_history(const app *a, proxy_body *b, compactd_error *err)
{
    json_budget budget;
    json_budget_init(&budget, &a->cfg->limits);
    if (b->hist1 <= b->hist0 || b->body[b->hist0] != '[')
        return json_parse_request(b->body, b->len, &a->cfg->limits, SHAPE_DEPTH_CHAT, &budget, err);
    size_t rest_len;
    char *rest = proxy_splice(b->body, b->len, b->hist0, b->hist1, "[]", 2, &rest_len);
    if (!rest) {
        error_set(err, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    json_t *doc =
        json_parse_request(rest, rest_len, &a->cfg->limits, SHAPE_DEPTH_CHAT, &budget, err);
    free(rest);
    if (!doc && err->kind != ERR_INTERNAL) {
        json_budget_init(&budget, &a->cfg->limits);
        json_t *whole =
            json_parse_request(b->body, b->len, &a->cfg->limits, SHAPE_DEPTH_CHAT, &budget, err);
        json_region_release(whole); /* not NULL only if the history was what broke it */
    }
    b->history_is_array = doc != NULL;
    return doc;
}

/* A member the client wrote with escapes in its name: the scan, which
 * finds the parts to splice, does not see it. */
static const char *escaped_member(const proxy_api *api, const proxy_body *b, json_t *doc)
{
    if (json_object_get(doc, api->history) && b->hist1 == 0)
        return api->history;
    if (json_object_get(doc, "tools") && b->tools1 == 0)
        return "tools";
    if (api->system && json_object_get(doc, api->system) && b->sys1 == 0)
        return api->system;
    return NULL;
}

int proxy_body_read(const app *a, const proxy_api *api, const char *body, size_t len,
                    proxy_body *out, api_response *res)
{
    memset(out, 0, sizeof(*out));
    out->body = body;
    out->len = len;
    out->max_tokens = -1;
    compactd_error err = {0};
    member_finder f = {body, api, out};
    if (json_span_members(body, len, json_span_skip_ws(body, 0, len), find_member, &f) != 0)
        out->hist0 = out->hist1 = out->tools0 = out->tools1 = out->sys0 = out->sys1 = 0;
    json_t *doc = parse_around_history(a, out, &err);
    if (!doc) {
        invalid(res, api, &err);
        return -1;
    }
    int rc = -1;
    json_t *model = json_object_get(doc, "model"), *hist = json_object_get(doc, api->history);
    const char *escaped = escaped_member(api, out, doc);
    if (!json_is_string(model) || json_string_length(model) >= sizeof(out->model)) {
        proxy_fail(res, api, 400, "invalid_request_error", "invalid_request", "model", -1, -1,
                   "model is required: the model's name, as the provider takes it");
        goto done;
    }
    snprintf(out->model, sizeof(out->model), "%s", json_string_value(model));
    if (!hist) {
        proxy_fail(res, api, 400, "invalid_request_error", "invalid_request", api->history, -1, -1,
                   "%s is required", api->history);
        goto done;
    }
    if (escaped) { /* not where a client puts it */
        proxy_fail(res, api, 400, "invalid_request_error", "invalid_request", escaped, -1, -1,
                   "the member %s must be written without escapes", escaped);
        goto done;
    }
    out->stream = json_is_true(json_object_get(doc, "stream"));
    for (const char *const *m = api->max_tokens; *m && out->max_tokens < 0; m++) {
        json_t *v = json_object_get(doc, *m);
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            out->max_tokens = json_integer_value(v);
    }
    rc = 0;
done:
    json_region_release(doc);
    return rc;
}

int proxy_body_recheck(const app *a, const proxy_api *api, const proxy_body *b, api_response *res)
{
    compactd_error err = {0};
    json_budget budget;
    json_budget_init(&budget, &a->cfg->limits);
    json_t *doc =
        json_parse_request(b->body, b->len, &a->cfg->limits, SHAPE_DEPTH_CHAT, &budget, &err);
    if (doc) {
        json_region_release(doc);
        return 0;
    }
    invalid(res, api, &err);
    return -1;
}

char *proxy_compact_request(const proxy_api *api, const proxy_body *b, int64_t budget,
                            const char *policy, const char *extra_tool, size_t *len)
{
    size_t tools_len = b->tools1 - b->tools0, extra_len = extra_tool ? strlen(extra_tool) : 0;
    jw w;
    jw_init(&w, b->hist1 - b->hist0 + tools_len + extra_len + (policy ? strlen(policy) : 0) +
                    (b->sys1 - b->sys0) + 256);
    jw_object_open(&w);
    jw_member_cstring(&w, "format", api->format->name);
    jw_member_int(&w, "budget", budget);
    jw_member(&w, "messages");
    jw_raw(&w, b->body + b->hist0, b->hist1 - b->hist0);
    if (b->sys1 > b->sys0) {
        jw_member(&w, api->system);
        jw_raw(&w, b->body + b->sys0, b->sys1 - b->sys0);
    }
    /* The request's tools as sent, and the reacquire tool after them. */
    jw_member(&w, "tools");
    jw_array_open(&w);
    size_t at = b->tools1 > b->tools0 ? json_span_skip_ws(b->body, b->tools0 + 1, b->tools1) : 0;
    while (b->tools1 > b->tools0 && at < b->tools1 && b->body[at] != ']') {
        size_t end = json_span_skip_value(b->body, at, b->tools1);
        jw_raw(&w, b->body + at, end - at);
        at = json_span_skip_ws(b->body, end, b->tools1);
        if (at < b->tools1 && b->body[at] == ',')
            at = json_span_skip_ws(b->body, at + 1, b->tools1);
    }
    if (extra_tool)
        jw_raw(&w, extra_tool, extra_len);
    jw_array_close(&w);
    if (policy) {
        jw_member(&w, "policy");
        jw_raw(&w, policy, strlen(policy));
    }
    jw_object_close(&w);
    return jw_finish(&w, len);
}

char *proxy_splice(const char *body, size_t len, size_t from, size_t to, const char *insert,
                   size_t insert_len, size_t *out_len)
{
    size_t n = len - (to - from) + insert_len;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, body, from);
    memcpy(out + from, insert, insert_len);
    memcpy(out + from + insert_len, body + to, len - to);
    out[n] = '\0';
    *out_len = n;
    return out;
}

int proxy_session_digest(const proxy_api *api, const proxy_body *b, char *out, size_t size)
{
    /* The history only grows at its end: its first element and the system
     * prompt name the conversation on every turn. */
    size_t first0 = json_span_skip_ws(b->body, b->hist0 + 1, b->hist1), first1 = first0;
    if (b->history_is_array && first0 < b->hist1 && b->body[first0] != ']')
        first1 = json_span_skip_value(b->body, first0, b->hist1);
    else if (!b->history_is_array) {
        first0 = b->hist0;
        first1 = b->hist1;
    }
    size_t fl = strlen(api->format->name), sl = b->sys1 - b->sys0, hl = first1 - first0;
    char *seed = malloc(fl + sl + hl + 2);
    char hex[65];
    if (!seed)
        return -1;
    memcpy(seed, api->format->name, fl);
    seed[fl] = '\n';
    memcpy(seed + fl + 1, b->body + b->sys0, sl);
    seed[fl + 1 + sl] = '\n';
    memcpy(seed + fl + 2 + sl, b->body + first0, hl);
    sha256_hex(seed, fl + sl + hl + 2, hex);
    free(seed);
    snprintf(out, size, "proxy-%.16s", hex);
    return 0;
}
