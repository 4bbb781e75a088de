/* The proxy routes: headers read, the history compacted (proxy_compact.c),
 * then the upstream called and its answer relayed, a stream chunk by
 * chunk, with the model's reacquire calls answered here round after round
 * (at most COMPACTD_PROXY_REACQUIRE_ROUNDS) so that the client sees only
 * the answer that follows them. */
#include "proxy_handlers.h"

#include "chat_budget.h"
#include "json_span.h"
#include "upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The answer's headers ---- */

static void block_put(jw *w, const char *name, const char *value)
{
    jw_append(w, name, strlen(name) + 1);
    jw_append(w, value, strlen(value) + 1);
}

/* The headers of the answer: its type, the upstream's worth relaying,
 * and what compactd did. A new block (api_response.header_block), or
 * NULL. */
static char *header_block(const proxy_call *pc, const char *content_type, const char *relayed,
                          size_t relayed_len)
{
    char n[32];
    jw w;
    jw_init(&w, 512 + relayed_len);
    if (content_type && content_type[0])
        block_put(&w, "Content-Type", content_type);
    jw_append(&w, relayed, relayed_len);
    block_put(&w, "X-Compactd-Session", api_call_of(pc->req)->session);
    block_put(&w, "X-Compactd-Plan", pc->plan[0] ? pc->plan : "none");
    snprintf(n, sizeof(n), "%lld", (long long)pc->budget);
    block_put(&w, "X-Compactd-Budget", n);
    snprintf(n, sizeof(n), "%lld", (long long)pc->used_tokens);
    block_put(&w, "X-Compactd-Used-Tokens", n);
    snprintf(n, sizeof(n), "%zu", pc->pointers);
    block_put(&w, "X-Compactd-Pointers", n);
    snprintf(n, sizeof(n), "%d", pc->rounds);
    block_put(&w, "X-Compactd-Reacquired", n);
    jw_append(&w, "", 1);
    size_t len;
    return jw_finish(&w, &len);
}

/* ---- One call of the upstream ---- */

typedef struct {
    proxy_call *pc;
    int live; /* a streamed answer goes on to the client as it comes */
    int status;
    char content_type[256];
    char relayed[4096];
    size_t relayed_len;
    jw body; /* what is held of the answer */
    api_stream *stream;
} relay;

static int on_head(void *ctx, int status, const char *content_type, const char *relayed,
                   size_t relayed_len)
{
    relay *r = ctx;
    r->status = status;
    snprintf(r->content_type, sizeof(r->content_type), "%s", content_type);
    r->relayed_len = relayed_len < sizeof(r->relayed) ? relayed_len : 0;
    memcpy(r->relayed, relayed, r->relayed_len);
    if (r->live && status >= 200 && status < 300 &&
        strncmp(content_type, "text/event-stream", 17) == 0) {
        char *block = header_block(r->pc, content_type, relayed, r->relayed_len);
        if (block)
            r->stream = api_stream_open(r->pc->req, status, NULL, block);
    }
    return 0;
}

static int on_body(void *ctx, const char *data, size_t len)
{
    relay *r = ctx;
    if (r->stream)
        return api_stream_write(r->stream, data, len);
    /* Held within what the request may hold (the writer's account): past
     * it, the call stops. */
    jw_append(&r->body, data, len);
    return r->body.oom ? -1 : 0;
}

static int abandoned(void *ctx)
{
    return api_request_abandoned(((relay *)ctx)->pc->req);
}

/* Answers with what the upstream sent (body taken). */
static void relay_answer(proxy_call *pc, const relay *r, char *body, size_t len)
{
    char *block = header_block(pc, r->content_type, r->relayed, r->relayed_len);
    if (!block) {
        free(body);
        proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1, "out of memory");
        return;
    }
    *pc->res = (api_response){.status = r->status, .body = body, .len = len, .header_block = block};
}

/* The call failed on the way (outcome o): 502, 504 or 503, in the
 * provider's shape. */
static void upstream_failed(proxy_call *pc, const relay *r, upstream_outcome o, const char *why)
{
    const char *up = upstream_base(pc->api->provider);
    if (o == UPSTREAM_TIMEOUT)
        proxy_fail(pc->res, pc->api, 504, "api_error", "upstream_timeout", NULL, -1, -1,
                   "the upstream %s sent nothing for COMPACTD_UPSTREAM_TIMEOUT_S seconds", up);
    else if (o == UPSTREAM_STOPPED && r->body.oom)
        proxy_fail(pc->res, pc->api, 502, "api_error", "upstream_answer_too_large", NULL, -1, -1,
                   "the upstream's answer is larger than one client may hold "
                   "(COMPACTD_MAX_CLIENT_INFLIGHT_BYTES)");
    else if (o == UPSTREAM_STOPPED)
        proxy_fail(pc->res, pc->api, 503, "api_error", "shutting_down", NULL, -1, -1,
                   "compactd is shutting down: the call was given up");
    else
        proxy_fail(pc->res, pc->api, 502, "api_error",
                   o == UPSTREAM_BROKEN ? "upstream_broken" : "upstream_unreachable", NULL, -1, -1,
                   "the upstream %s %s: %s", up,
                   o == UPSTREAM_BROKEN ? "cut its answer short" : "could not be reached", why);
}

/* ---- Rounds ---- */

/* The upstream's body with the round's exchange appended to its history.
 * 0, or -1 with pc->res answered. */
static int next_round(proxy_call *pc, const proxy_turn *t, proxy_reacquirer *rq)
{
    jw w;
    jw_init(&w, 4096);
    jw_append(&w, ",", 1);
    if (proxy_reacquire_round(rq, pc->api, t, &w) != 0) {
        jw_discard(&w);
        return proxy_set_upstream(pc, NULL, 0);
    }
    size_t xlen, h0, h1, len;
    char *x = jw_finish(&w, &xlen);
    size_t obj = json_span_skip_ws(pc->upstream, 0, pc->upstream_len);
    if (!x ||
        json_span_member(pc->upstream, pc->upstream_len, obj, pc->api->history, &h0, &h1) != 0) {
        free(x);
        return proxy_set_upstream(pc, NULL, 0);
    }
    char *body = proxy_splice(pc->upstream, pc->upstream_len, h1 - 1, h1 - 1, x, xlen, &len);
    free(x);
    return proxy_set_upstream(pc, body, len);
}

/* What a round's answer calls for: 1 to call the upstream again (the
 * model asked only to re-acquire, answered in the body), 0 when the
 * answer is relayed (pc->res set). */
static int after_round(proxy_call *pc, relay *r, char *body, size_t len, proxy_reacquirer *rq)
{
    proxy_turn t = {0};
    int parsed = r->status >= 200 && r->status < 300 && pc->tool_added &&
                 (pc->b.stream ? proxy_turn_from_events(pc->api, body, len, &t)
                               : proxy_turn_parse(pc->api, body, len, &t)) == 0;
    if (!parsed || t.n_reacquire == 0) {
        proxy_turn_free(&t);
        relay_answer(pc, r, body, len);
        return 0;
    }
    if (t.n_other > 0) {
        /* The client's calls go back to it, the reacquire ones are
         * answered (and logged) here and taken out. */
        jw scratch;
        jw_init(&scratch, 1024);
        proxy_reacquire_round(rq, pc->api, &t, &scratch);
        jw_discard(&scratch);
        size_t n;
        char *without = pc->b.stream ? proxy_events_without_reacquire(pc->api, body, len, &n)
                                     : proxy_turn_without_reacquire(pc->api, &t, &n);
        proxy_turn_free(&t);
        free(body);
        if (!without)
            proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1,
                       "out of memory");
        else
            relay_answer(pc, r, without, n);
        return 0;
    }
    free(body);
    if (pc->rounds >= pc->a->cfg->proxy.reacquire_rounds) {
        proxy_turn_free(&t);
        proxy_fail(pc->res, pc->api, 502, "api_error", "reacquire_limit", NULL, -1, -1,
                   "the model asked only to re-acquire, %d rounds running "
                   "(COMPACTD_PROXY_REACQUIRE_ROUNDS); its calls were answered, it gave no answer",
                   pc->rounds);
        return 0;
    }
    int rc = next_round(pc, &t, rq);
    proxy_turn_free(&t);
    if (rc != 0)
        return 0;
    pc->rounds++;
    return 1;
}

static void call_upstream(proxy_call *pc)
{
    char url[2200];
    snprintf(url, sizeof(url), "%s%s", upstream_base(pc->api->provider), pc->api->path);
    const chat_codec *codec = pc->api->kind == PROXY_MESSAGES    ? &chat_anthropic_codec
                              : pc->api->kind == PROXY_RESPONSES ? &chat_responses_codec
                                                                 : &chat_openai_codec;
    /* The re-acquired pages count as the compaction counted the history. */
    proxy_reacquirer rq = {pc->a, &pc->scope, chat_format_tokenizer(codec), pc->room};
    for (;;) {
        relay r = {.pc = pc, .live = pc->b.stream && !pc->tool_added};
        jw_init(&r.body, 16384);
        upstream_sink sink = {on_head, on_body, abandoned, &r};
        char why[256] = "";
        upstream_outcome o =
            upstream_post(url, (const char *const *)pc->h.forwarded, pc->h.n_forwarded,
                          pc->upstream, pc->upstream_len, &sink, why, sizeof(why));
        if (r.stream) {
            /* Sent already: the end, or a body cut short when it broke. */
            api_stream_close(r.stream, o != UPSTREAM_DONE);
            jw_discard(&r.body);
            return;
        }
        if (o != UPSTREAM_DONE) {
            upstream_failed(pc, &r, o, why);
            jw_discard(&r.body);
            return;
        }
        size_t len;
        char *body = jw_finish(&r.body, &len);
        if (!body) {
            proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1,
                       "out of memory");
            return;
        }
        if (!after_round(pc, &r, body, len, &rq))
            return;
    }
}

/* ---- The routes ---- */

static void handle(const app *a, api_request *req, api_response *res, const proxy_api *api)
{
    proxy_call pc = {.a = a, .req = req, .res = res, .api = api};
    pc.scope = api_scope(req);
    if (proxy_headers_read(req, api, &pc.h, res) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        proxy_headers_free(&pc.h);
        return;
    }
    if (proxy_body_read(a, api, req->body, req->body_len, &pc.b, res) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        proxy_headers_free(&pc.h);
        return;
    }
    if (a->cfg->proxy.reacquire_rounds > 0)
        pc.tool = proxy_reacquire_tool(api);
    if (proxy_compact(&pc) == 0)
        call_upstream(&pc);
    proxy_drop_upstream(&pc);
    free(pc.tool);
    proxy_headers_free(&pc.h);
}

void handle_proxy_chat(const app *a, api_request *req, api_response *res)
{
    handle(a, req, res, &proxy_chat_api);
}

void handle_proxy_responses(const app *a, api_request *req, api_response *res)
{
    handle(a, req, res, &proxy_responses_api);
}

void handle_proxy_messages(const app *a, api_request *req, api_response *res)
{
    handle(a, req, res, &proxy_messages_api);
}

/* ---- Start-up ---- */

int proxy_init(const config *cfg, char *err, size_t errlen)
{
    err[0] = '\0';
    if (proxy_models_load(cfg->proxy.models_file, err, errlen) != 0)
        return -1;
    return upstream_init(&cfg->proxy, err, errlen);
}

void proxy_cleanup(void)
{
    upstream_cleanup();
}
