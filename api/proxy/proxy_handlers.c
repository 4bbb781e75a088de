/* The proxy routes: headers read, the history compacted (proxy_compact.c),
 * then the upstream called and its answer relayed, a stream chunk by chunk
 * (live across rounds by proxy_live.c when the model may re-acquire), with
 * the model's reacquire calls answered here round after round (at most
 * COMPACTD_PROXY_REACQUIRE_ROUNDS), so that the client gets one answer
 * without them (proxy_answer.c). */
#include "proxy_handlers.h"
#include "proxy_live.h"

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
 * and what compactd did (the rounds answered inside only when they are
 * known: not on a stream whose rounds follow its head). A new block
 * (api_response.header_block), or NULL. */
static char *header_block(const proxy_call *pc, const char *content_type, const char *relayed,
                          size_t relayed_len, int rounds_known)
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
    if (rounds_known)
        block_put(&w, "X-Compactd-Reacquired", n);
    jw_append(&w, "", 1);
    size_t len;
    return jw_finish(&w, &len);
}

/* ---- One call of the upstream ---- */

typedef struct {
    proxy_call *pc;
    int pass;         /* a stream the model cannot re-acquire in: relayed unread */
    proxy_live *live; /* a stream it can: relayed live by its rules; else NULL */
    int fed;          /* this round's events went to live */
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
    int events =
        status >= 200 && status < 300 && strncmp(content_type, "text/event-stream", 17) == 0;
    if (r->pass && events) {
        char *block = header_block(r->pc, content_type, relayed, r->relayed_len, 1);
        if (block)
            r->stream = api_stream_open(r->pc->req, status, NULL, block);
    } else if (r->live && events) {
        if (!r->live->opened) { /* the first round's head is the answer's */
            r->live->opened = 1;
            char *block = header_block(r->pc, content_type, relayed, r->relayed_len, 0);
            r->live->out = block ? api_stream_open(r->pc->req, status, NULL, block) : NULL;
        }
        r->fed = 1;
    }
    return 0;
}

static int on_body(void *ctx, const char *data, size_t len)
{
    relay *r = ctx;
    if (r->stream)
        return api_stream_write(r->stream, data, len);
    if (r->fed)
        return proxy_live_feed(r->live, data, len);
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
    char *block = header_block(pc, r->content_type, r->relayed, r->relayed_len, 1);
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
    else if (o == UPSTREAM_STOPPED && (r->body.oom || (r->live && r->live->broken)))
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

/* What a round's answer (t, parsed or not) calls for, with its effects:
 * the usage summed, reacquire calls beside the client's answered, the
 * bound answered. */
static proxy_round_kind judge(proxy_call *pc, const proxy_turn *t, int parsed, proxy_reacquirer *rq)
{
    if (parsed) /* every round's usage, for the answer's (docs/proxy.md) */
        proxy_usage_add(&pc->usage, json_object_get(t->doc, "usage"));
    proxy_round_kind k =
        proxy_round_judge(t, parsed, pc->rounds, pc->a->cfg->proxy.reacquire_rounds);
    if (k == ROUND_ASIDE) {
        /* The client's calls go back to it, the reacquire ones are
         * answered (and logged) here and taken out. */
        jw scratch;
        jw_init(&scratch, 1024);
        proxy_reacquire_round(rq, pc->api, t, &scratch);
        jw_discard(&scratch);
    } else if (k == ROUND_LIMIT) {
        proxy_fail(pc->res, pc->api, 502, "api_error", "reacquire_limit", NULL, -1, -1,
                   "the model asked only to re-acquire, %d rounds running "
                   "(COMPACTD_PROXY_REACQUIRE_ROUNDS); its calls were answered, it gave no answer",
                   pc->rounds);
    }
    return k;
}

/* The usage the answer reports: every round's summed once there were
 * several, else the upstream's own (NULL). */
static const json_t *answer_usage(const proxy_call *pc)
{
    return pc->rounds > 0 ? pc->usage : NULL;
}

/* A round answered whole (body taken): 1 to call the upstream again, 0
 * when the answer is relayed (pc->res set). */
static int whole_round(proxy_call *pc, relay *r, char *body, size_t len, proxy_reacquirer *rq)
{
    proxy_turn t = {0};
    int parsed = r->status >= 200 && r->status < 300 && pc->tool_added &&
                 proxy_turn_parse(pc->api, body, len, &t) == 0;
    proxy_round_kind k = judge(pc, &t, parsed, rq);
    if (k == ROUND_AGAIN) {
        if (!pc->shown)
            pc->shown = json_array();
        proxy_turn_shown(pc->api, &t, pc->shown);
    }
    int again = k == ROUND_AGAIN && next_round(pc, &t, rq) == 0;
    if (k == ROUND_ANSWER || k == ROUND_ASIDE) {
        size_t n = 0;
        char *out =
            proxy_round_answer(pc->api, &t, parsed, k, answer_usage(pc), pc->shown, body, len, &n);
        body = NULL;
        if (out)
            relay_answer(pc, r, out, n);
        else
            proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1,
                       "out of memory");
    }
    proxy_turn_free(&t);
    free(body);
    pc->rounds += again;
    return again;
}

/* A live stream ends with the error pc->res holds: an error event when the
 * client's stream is open (the answer pc->res held is dropped), the error
 * itself when its events were spooled. */
static void live_failed(proxy_call *pc, proxy_live *l)
{
    if (!l->out)
        return;
    proxy_live_error(l, pc->res->status, pc->res->body, pc->res->len);
    free(pc->res->body);
    free(pc->res->header_block);
    *pc->res = (api_response){0};
    api_stream_close(l->out, l->broken); /* cut short when even that failed */
    l->out = NULL;
}

/* The last round of a live stream is through: its closing events written,
 * the stream closed (or the spooled events answered whole). */
static void live_done(proxy_call *pc, relay *r, proxy_live *l)
{
    int failed = proxy_live_finish(l, answer_usage(pc)) != 0;
    if (l->out) {
        api_stream_close(l->out, failed);
        l->out = NULL;
        return;
    }
    size_t n;
    char *events = proxy_live_spooled(l, &n);
    if (events)
        relay_answer(pc, r, events, n);
    else
        upstream_failed(pc, r, UPSTREAM_STOPPED, "");
}

/* A round relayed live is over (outcome o): 1 to call the upstream again,
 * 0 when the answer is through. */
static int live_round(proxy_call *pc, relay *r, upstream_outcome o, const char *why,
                      proxy_reacquirer *rq)
{
    proxy_live *l = r->live;
    if (o != UPSTREAM_DONE || !r->fed) {
        if (o == UPSTREAM_DONE) { /* a later round answered with an error */
            size_t n;
            char *body = jw_finish(&r->body, &n);
            if (body)
                relay_answer(pc, r, body, n);
            else
                upstream_failed(pc, r, UPSTREAM_STOPPED, why);
        } else if (o == UPSTREAM_BROKEN && r->fed && l->out) { /* cut short, as it was */
            api_stream_close(l->out, 1);
            l->out = NULL;
            return 0;
        } else {
            upstream_failed(pc, r, o, why);
        }
        live_failed(pc, l);
        return 0;
    }
    size_t len;
    const char *events = proxy_live_record(l, &len);
    proxy_turn t = {0};
    int parsed = proxy_turn_from_events(pc->api, events, len, &t) == 0;
    proxy_round_kind k = judge(pc, &t, parsed, rq);
    int again = k == ROUND_AGAIN && next_round(pc, &t, rq) == 0;
    proxy_turn_free(&t);
    if (again) {
        proxy_live_next_round(l);
        pc->rounds++;
    } else if (k == ROUND_ANSWER || k == ROUND_ASIDE) {
        live_done(pc, r, l);
    } else {
        live_failed(pc, l);
    }
    return again;
}

static void call_upstream(proxy_call *pc)
{
    char url[2200];
    snprintf(url, sizeof(url), "%s%s", upstream_base(pc->api->provider), pc->api->path);
    /* The re-acquired pages count as the compaction counted the history. */
    proxy_reacquirer rq = {pc->a, &pc->scope, field_default_tokenizer(pc->api->format), pc->room};
    proxy_live live;
    proxy_live_init(&live, pc->api);
    for (int again = 1; again;) {
        relay r = {.pc = pc, .pass = pc->b.stream && !pc->tool_added};
        if (pc->b.stream && pc->tool_added)
            r.live = &live;
        jw_init(&r.body, 16384);
        upstream_sink sink = {on_head, on_body, abandoned, &r};
        char why[256] = "";
        upstream_outcome o =
            upstream_post(url, (const char *const *)pc->h.forwarded, pc->h.n_forwarded,
                          pc->upstream, pc->upstream_len, &sink, why, sizeof(why));
        size_t len;
        char *body;
        again = 0;
        if (r.stream) /* sent already: the end, or a body cut short when it broke */
            api_stream_close(r.stream, o != UPSTREAM_DONE);
        else if (live.opened)
            again = live_round(pc, &r, o, why, &rq);
        else if (o != UPSTREAM_DONE)
            upstream_failed(pc, &r, o, why);
        else if (!(body = jw_finish(&r.body, &len)))
            proxy_fail(pc->res, pc->api, 500, "api_error", "internal", NULL, -1, -1,
                       "out of memory");
        else
            again = whole_round(pc, &r, body, len, &rq);
        if (r.body.buf) /* not taken for an answer (whose bytes stay counted) */
            jw_discard(&r.body);
    }
    if (live.out) /* never left open */
        api_stream_close(live.out, 1);
    proxy_live_free(&live);
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
    json_decref(pc.usage);
    json_decref(pc.shown);
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
