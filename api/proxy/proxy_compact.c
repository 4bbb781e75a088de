/* The compaction of a proxied request: its budget (the header's, or the
 * model's context window less the answer's length and a reserve), its
 * session, the history run through the operation /messages/compact runs,
 * and the upstream's body made from the answer. */
#include "proxy_handlers.h"

#include "answer_account.h"
#include "chat_codec.h"
#include "json_span.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Budget and session ---- */

static int budget_of(proxy_call *pc)
{
    if (pc->h.budget > 0) {
        pc->budget = pc->h.budget;
        return 0;
    }
    int64_t window = proxy_model_window(pc->b.model);
    if (window < 0) {
        proxy_fail(pc->res, pc->api, 400, "invalid_request_error", "invalid_header",
                   "X-Compactd-Budget", -1, -1,
                   "model '%.100s' has no known context window: send X-Compactd-Budget (the "
                   "tokens the history may take), or add the model to COMPACTD_MODELS; nothing "
                   "was sent upstream or written",
                   pc->b.model);
        return -1;
    }
    int64_t reply = pc->b.max_tokens > 0 ? pc->b.max_tokens : 0;
    pc->budget = window - reply - pc->a->cfg->proxy.reserve_tokens;
    if (pc->budget < 1) {
        proxy_fail(pc->res, pc->api, 400, "invalid_request_error", "invalid_request",
                   pc->api->max_tokens[0], -1, -1,
                   "the answer's %lld tokens and the reserve of %d leave nothing of model "
                   "'%.100s''s window of %lld for the history",
                   (long long)reply, pc->a->cfg->proxy.reserve_tokens, pc->b.model,
                   (long long)window);
        return -1;
    }
    return 0;
}

static int session_of(proxy_call *pc)
{
    api_call *c = api_call_of(pc->req);
    if (pc->h.session[0])
        snprintf(c->session, sizeof(c->session), "%s", pc->h.session);
    else if (proxy_session_digest(pc->api, &pc->b, c->session, sizeof(c->session)) != 0) {
        proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1, "out of memory");
        return -1;
    }
    snprintf(c->ns, sizeof(c->ns), "%s:%s", c->tenant, c->session);
    pc->scope = (ops_scope){c->ns, c->session, pc->h.idempotency_key, pc->scope.log};
    return 0;
}

/* ---- Errors of the compaction, in the provider's shape ---- */

/* A decoder's path as the client wrote it: the history under its own
 * name, the policy as its header. */
static const char *client_path(const proxy_call *pc, const char *path, char *out, size_t size)
{
    if (strncmp(path, "$.policy", 8) == 0)
        return "X-Compactd-Policy";
    if (strncmp(path, "$.messages", 10) == 0) {
        snprintf(out, size, "$.%s%s", pc->api->history, path + 10);
        return out;
    }
    return path[0] ? path : NULL;
}

static void compaction_refused(proxy_call *pc, const answer *ans)
{
    char where[ERROR_PATH_MAX + 16];
    const char *param = client_path(pc, ans->err.path, where, sizeof(where));
    if (ans->err.kind == ERR_COMPACTION_FAILURE) {
        json_t *doc = json_loadb(ans->body, ans->len, 0, NULL);
        json_t *e = json_object_get(doc, "error");
        int64_t need = json_integer_value(json_object_get(e, "required_budget"));
        proxy_fail(pc->res, pc->api, 400, "invalid_request_error", "compaction_failure", NULL, need,
                   pc->budget,
                   "compactd cannot fit this history in %lld tokens without losing what it must "
                   "keep: it needs %lld (X-Compactd-Budget, or a model with a larger window); "
                   "nothing was sent upstream",
                   (long long)pc->budget, (long long)need);
        json_decref(doc);
        return;
    }
    int status = ans->status;
    proxy_fail(pc->res, pc->api, status, status >= 500 ? "api_error" : "invalid_request_error",
               status == 503   ? "compactd_unavailable"
               : status >= 500 ? "internal"
                               : "invalid_request",
               param, -1, -1, "%s", ans->err.message);
}

/* ---- The upstream's body ---- */

int proxy_set_upstream(proxy_call *pc, char *body, size_t len)
{
    answer_refusal why = body ? answer_take(len) : ANSWER_OK;
    if (!body || why != ANSWER_OK) {
        if (!body)
            proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1,
                       "out of memory");
        else
            proxy_fail(pc->res, pc->api, why == ANSWER_TOO_LARGE ? 413 : 503,
                       "invalid_request_error",
                       why == ANSWER_TOO_LARGE ? "request_too_large" : "overloaded", NULL, -1, -1,
                       "the request to send upstream would pass what one client may hold "
                       "(COMPACTD_MAX_CLIENT_INFLIGHT_BYTES)%s",
                       why == ANSWER_TOO_LARGE ? "" : " now; retry shortly");
        free(body);
        return -1;
    }
    proxy_drop_upstream(pc);
    pc->upstream = body;
    pc->upstream_len = len;
    return 0;
}

void proxy_drop_upstream(proxy_call *pc)
{
    if (pc->upstream)
        answer_give(pc->upstream_len);
    free(pc->upstream);
    pc->upstream = NULL;
    pc->upstream_len = 0;
}

/* A top-level integer member of the answer document, or -1. */
static int64_t member_int(const answer *ans, const char *name)
{
    size_t v0, v1;
    if (json_span_member(ans->body, ans->len, 0, name, &v0, &v1) != 0)
        return -1;
    return strtoll(ans->body + v0, NULL, 10);
}

/* The upstream's body: the client's with the compacted history in place
 * of its own and, when pointers are in it, the reacquire tool added to
 * the tools. */
static int upstream_body(proxy_call *pc, const answer *ans)
{
    size_t m0, m1;
    if (json_span_member(ans->body, ans->len, 0, "messages", &m0, &m1) != 0)
        return proxy_set_upstream(pc, NULL, 0);
    const proxy_body *b = &pc->b;
    size_t len;
    char *body = proxy_splice(b->body, b->len, b->hist0, b->hist1, ans->body + m0, m1 - m0, &len);
    if (body && pc->tool_added) {
        /* The tools come after the history's new bytes when they followed it. */
        size_t shift = b->tools0 > b->hist0 ? (m1 - m0) - (b->hist1 - b->hist0) : 0;
        size_t t1 = b->tools1 + shift, n_tool = strlen(pc->tool);
        char *member = malloc(n_tool + 16), *with;
        size_t at, mlen, wlen;
        if (!member) {
            free(body);
            return proxy_set_upstream(pc, NULL, 0);
        }
        if (b->tools1 > b->tools0) { /* into the array, after the client's tools */
            at = t1 - 1;
            size_t before = json_span_skip_ws(body, b->tools0 + shift + 1, t1);
            mlen = (size_t)snprintf(member, n_tool + 16, "%s%s", before == at ? "" : ",", pc->tool);
        } else { /* a member of its own, first */
            at = json_span_skip_ws(body, 0, len) + 1;
            mlen = (size_t)snprintf(member, n_tool + 16, "\"tools\":[%s],", pc->tool);
        }
        with = proxy_splice(body, len, at, at, member, mlen, &wlen);
        free(member);
        free(body);
        body = with;
        len = wlen;
    }
    return proxy_set_upstream(pc, body, len);
}

static size_t pointers_of(const request_facts *f)
{
    size_t n = 0;
    for (int c = 0; c < UNIT_CLASSES; c++)
        n += f->units_by[c][DECISION_EXTERNALIZED];
    return n;
}

int proxy_compact(proxy_call *pc)
{
    if (!pc->b.history_is_array) { /* a Responses input given as one string */
        snprintf(pc->plan, sizeof(pc->plan), "none");
        if (session_of(pc) != 0)
            return -1;
        char *copy = malloc(pc->b.len + 1);
        if (copy)
            memcpy(copy, pc->b.body, pc->b.len + 1);
        return proxy_set_upstream(pc, copy, pc->b.len);
    }
    if (budget_of(pc) != 0 || session_of(pc) != 0)
        return -1;
    size_t clen;
    char *creq = proxy_compact_request(pc->api, &pc->b, pc->budget, pc->h.policy, pc->tool, &clen);
    chat_input in;
    compactd_error err = {0};
    answer ans = {0};
    int rc = -1;
    if (!creq) {
        proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1, "out of memory");
        return -1;
    }
    if (chat_decode_compact(creq, clen, &pc->a->cfg->limits, &in, &err) != 0) {
        api_call_of(pc->req)->facts.outcome = OUTCOME_INVALID;
        answer_error(&ans, &err);
    } else {
        run_compact_messages(&pc->scope, &in, &api_call_of(pc->req)->facts, &ans);
    }
    chat_input_free(&in);
    free(creq);
    if (ans.status != 200) {
        /* A malformed history is named as the client's body has it. */
        if (ans.err.kind != ERR_INVALID_REQUEST ||
            proxy_body_recheck(pc->a, pc->api, &pc->b, pc->res) == 0)
            compaction_refused(pc, &ans);
    } else {
        pc->used_tokens = member_int(&ans, "used_tokens");
        pc->room = member_int(&ans, "remaining_tokens");
        size_t v0, v1;
        if (json_span_member(ans.body, ans.len, 0, "plan", &v0, &v1) == 0 &&
            v1 - v0 < sizeof(pc->plan))
            snprintf(pc->plan, sizeof(pc->plan), "%.*s", (int)(v1 - v0 - 2), ans.body + v0 + 1);
        pc->pointers = pointers_of(&api_call_of(pc->req)->facts);
        pc->tool_added = pc->pointers > 0 && pc->tool && pc->a->cfg->proxy.reacquire_rounds > 0;
        rc = upstream_body(pc, &ans); /* answers its failure */
    }
    free(ans.body);
    return rc;
}
