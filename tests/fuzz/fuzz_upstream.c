/* libFuzzer target: what the proxy reads from its upstream (api/proxy/),
 * an answer whole or streamed, across reacquire rounds, fed to the
 * proxy's own code as the relay (proxy_handlers.c) feeds it when the
 * upstream's bytes arrive, below libcurl: no network, no Redis.
 *
 * The input: byte 0 picks the API (Chat Completions, Responses, Anthropic
 * Messages: % 3), whether the answer is streamed (/ 3 % 2) and whether the
 * last round given answers with an error status instead (/ 6 % 2); byte 1
 * is the largest piece a stream's bytes come in (0: one byte at a time),
 * byte 2 seeds the sizes of the pieces; the rest is the upstream's answer
 * of each round, one after another, split at the byte 0x1e (which no JSON
 * text holds), as many rounds as the relay calls for (the model's calls
 * of reacquire alone make another, at most 3 past the first, the
 * default of COMPACTD_PROXY_REACQUIRE_ROUNDS).
 *
 * A stream is fed chunk by chunk to proxy_live_feed(), its round judged
 * from proxy_live_record() by proxy_turn_from_events() and
 * proxy_round_judge(), then proxy_live_next_round() or proxy_live_finish(),
 * or proxy_live_error() where the relay ends the stream with an error
 * event (a round stopped, the bound, a later round's error status, no
 * next round in the input: the upstream unreachable). The client's events
 * are read from the spool (proxy_live_spooled()), which holds what the
 * client's stream would have been written. A whole answer is read by
 * proxy_turn_parse() and proxy_round_judge() and answered by
 * proxy_round_answer(), with the earlier rounds' parts from
 * proxy_turn_shown() and every round's usage summed. Where the relay
 * answers a round's reacquire calls, proxy_reacquire_round() writes the
 * next request's history elements with no room left in the budget, so
 * that every call is answered without reading a spill (the store is
 * never reached; the pages read back are what this target leaves out).
 *
 * Checks, beyond the sanitizers' (leaks included):
 *  - a stream: the client's bytes are the same whether the upstream's came
 *    in the input's pieces or whole; read as an SSE client reads them
 *    (lines ended by CR, LF or CRLF), every event's data is JSON, Chat
 *    Completions' [DONE], or data the upstream itself sent that is not
 *    JSON (relayed as it came); Responses' sequence_number runs 0, 1, 2,
 *    ...; each round's record is its bytes exactly;
 *  - a whole answer: an answer that is not one of the API's comes as it
 *    came, byte for byte; one that is comes as a JSON object of the API
 *    that holds no reacquire call;
 *  - the next request's history elements form a JSON array, never empty. */
#include "proxy_live.h"
#include "tokenizer.h"

#include <jansson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUND_SEP 0x1e
#define MAX_ROUNDS 3 /* COMPACTD_PROXY_REACQUIRE_ROUNDS's default */
#define MAX_CALLS (MAX_ROUNDS + 1)

static void fail(const char *what, const char *s, size_t n)
{
    fprintf(stderr, "fuzz_upstream: %s\n%.*s\n", what, (int)(n > 4000 ? 4000 : n), s);
    abort();
}

/* ---- The input ---- */

typedef struct {
    const char *p;
    size_t n;
} span;

typedef struct {
    const proxy_api *api;
    int stream, last_error;
    unsigned piece_max; /* 0: one byte at a time */
    uint32_t seed;
    span round[MAX_CALLS];
    size_t n_rounds;
} shape;

static int read_shape(const uint8_t *data, size_t size, shape *sh)
{
    static const proxy_api *const apis[] = {&proxy_chat_api, &proxy_responses_api,
                                            &proxy_messages_api};
    if (size < 3)
        return -1;
    memset(sh, 0, sizeof(*sh));
    sh->api = apis[data[0] % 3];
    sh->stream = data[0] / 3 % 2;
    sh->last_error = data[0] / 6 % 2;
    sh->piece_max = data[1];
    sh->seed = 0x9e3779b9u ^ data[2];
    const char *s = (const char *)data + 3, *end = (const char *)data + size;
    while (sh->n_rounds < MAX_CALLS) {
        const char *sep = memchr(s, ROUND_SEP, (size_t)(end - s));
        sh->round[sh->n_rounds++] = (span){s, (size_t)((sep ? sep : end) - s)};
        if (!sep)
            break;
        s = sep + 1;
    }
    return 0;
}

static uint32_t next_random(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* 1 when the round at i answers with an error status (429). */
static int error_round(const shape *sh, size_t i)
{
    return sh->last_error && i + 1 == sh->n_rounds;
}

/* ---- Server-sent events as a client reads them ---- */

typedef void (*on_data)(void *ctx, const char *data, size_t n);

/* Calls back with each event's data (its data lines joined by '\n') of
 * s, read as the SSE specification reads a stream: a line ends at CR, LF
 * or CRLF, an event at a blank line. The last event is taken without its
 * blank line, as the proxy takes it at the end of a round. */
static void sse_read(const char *s, size_t n, on_data cb, void *ctx)
{
    char *data = malloc(n + 1);
    size_t len = 0;
    int has = 0;
    if (!data)
        abort();
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && s[j] != '\r' && s[j] != '\n')
            j++;
        size_t ll = j - i;
        const char *line = s + i;
        if (ll == 0 && (j < n || has)) {
            if (has)
                cb(ctx, data, len);
            has = 0;
            len = 0;
        } else if (ll >= 4 && memcmp(line, "data", 4) == 0 && (ll == 4 || line[4] == ':')) {
            size_t off = ll > 5 && line[5] == ' ' ? 6 : ll > 4 ? 5 : 4;
            if (has)
                data[len++] = '\n';
            memcpy(data + len, line + off, ll - off);
            len += ll - off;
            has = 1;
        }
        if (j == n) {
            if (has)
                cb(ctx, data, len);
            break;
        }
        i = j + (s[j] == '\r' && j + 1 < n && s[j + 1] == '\n' ? 2 : 1);
    }
    free(data);
}

/* The upstream's data that is not JSON, which the proxy relays as it came. */
typedef struct {
    span *d;
    size_t n, cap;
} data_set;

static void keep_data(void *ctx, const char *data, size_t n)
{
    data_set *u = ctx;
    if (u->n == u->cap) {
        u->cap = u->cap * 2 + 16;
        if (!(u->d = realloc(u->d, u->cap * sizeof(*u->d))))
            abort();
    }
    char *copy = malloc(n + 1);
    if (!copy)
        abort();
    memcpy(copy, data, n);
    u->d[u->n++] = (span){copy, n};
}

static int in_set(const data_set *u, const char *data, size_t n)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->d[i].n == n && memcmp(u->d[i].p, data, n) == 0)
            return 1;
    return 0;
}

static void free_set(data_set *u)
{
    for (size_t i = 0; i < u->n; i++)
        free((char *)u->d[i].p);
    free(u->d);
}

typedef struct {
    const proxy_api *api;
    const data_set *upstream;
    json_int_t seq; /* Responses: the next sequence_number */
    const char *out;
    size_t out_len;
} client_view;

static void check_event(void *ctx, const char *data, size_t n)
{
    client_view *c = ctx;
    if (c->api->kind == PROXY_CHAT && n == 6 && memcmp(data, "[DONE]", 6) == 0)
        return;
    json_t *e = json_loadb(data, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!e && !in_set(c->upstream, data, n)) {
        fprintf(stderr, "fuzz_upstream: this data:\n%.*s\n", (int)(n > 2000 ? 2000 : n), data);
        fail("an event's data the client reads is not JSON and not the upstream's", c->out,
             c->out_len);
    }
    json_t *seq = json_object_get(e, "sequence_number");
    if (c->api->kind == PROXY_RESPONSES && json_is_integer(seq) &&
        json_integer_value(seq) != c->seq++)
        fail("a sequence_number out of turn", c->out, c->out_len);
    json_decref(e);
}

/* ---- The next request's history ---- */

/* The elements the relay appends to the history for t's reacquire calls,
 * with no room in the budget (no spill is read). */
static void check_exchange(const proxy_api *api, const proxy_turn *t)
{
    proxy_reacquirer rq = {NULL, NULL, tokenizer_at(0), 0};
    jw w;
    jw_init(&w, 1024);
    jw_append(&w, "[", 1);
    if (proxy_reacquire_round(&rq, api, t, &w) == 0) {
        jw_append(&w, "]", 1);
        json_t *doc = json_loadb(w.buf, w.len, 0, NULL);
        if (json_array_size(doc) == 0)
            fail("the next round's history elements are not a JSON array of some", w.buf, w.len);
        json_decref(doc);
    }
    jw_discard(&w);
}

/* ---- A stream ---- */

/* The relay ends a live stream with compactd's error code. */
static void live_fails(proxy_live *l, const char *code)
{
    api_response res = {0};
    proxy_fail(&res, l->api, 502, "api_error", code, NULL, -1, -1, "fuzz_upstream: %s", code);
    proxy_live_error(l, res.status, res.body, res.len);
    free(res.body);
    free(res.header_block);
}

/* Feeds a round's bytes in pieces (whole: one). 0, or -1 when the relay
 * would stop. */
static int feed(proxy_live *l, const shape *sh, span r, int whole, uint32_t *rnd)
{
    for (size_t at = 0; at < r.n;) {
        size_t n = whole ? r.n : 1 + next_random(rnd) % (sh->piece_max + 1u);
        if (n > r.n - at)
            n = r.n - at;
        if (proxy_live_feed(l, r.p + at, n) != 0)
            return -1;
        at += n;
    }
    return 0;
}

/* The client's bytes of a streamed answer (a new string). */
static char *run_stream(const shape *sh, int whole, size_t *out_len)
{
    proxy_live l;
    proxy_live_init(&l, sh->api);
    l.opened = 1; /* the first round's head went: its events are the client's */
    json_t *usage = NULL;
    int rounds = 0;
    uint32_t rnd = sh->seed;
    for (size_t i = 0; i < sh->n_rounds; i++) {
        span r = sh->round[i];
        if (i > 0 && error_round(sh, i)) { /* relayed as the provider's error event */
            proxy_live_error(&l, 429, r.p, r.n);
            break;
        }
        if (feed(&l, sh, r, whole, &rnd) != 0) {
            live_fails(&l, "upstream_answer_too_large");
            break;
        }
        size_t len;
        const char *rec = proxy_live_record(&l, &len);
        if (len != r.n || memcmp(rec, r.p, len) != 0)
            fail("a round's record is not its bytes", r.p, r.n);
        proxy_turn t = {0};
        int parsed = proxy_turn_from_events(sh->api, rec, len, &t) == 0;
        if (parsed)
            proxy_usage_add(&usage, json_object_get(t.doc, "usage"));
        proxy_round_kind k = proxy_round_judge(&t, parsed, rounds, MAX_ROUNDS);
        if (k == ROUND_ASIDE || k == ROUND_AGAIN)
            check_exchange(sh->api, &t);
        proxy_turn_free(&t);
        if (k == ROUND_AGAIN && i + 1 < sh->n_rounds) {
            proxy_live_next_round(&l);
            rounds++;
            continue;
        }
        if (k == ROUND_AGAIN)
            live_fails(&l, "upstream_unreachable");
        else if (k == ROUND_LIMIT)
            live_fails(&l, "reacquire_limit");
        else
            proxy_live_finish(&l, rounds > 0 ? usage : NULL);
        break;
    }
    char *out = proxy_live_spooled(&l, out_len);
    if (!out)
        fail("the client's events were lost", "", 0);
    json_decref(usage);
    proxy_live_free(&l);
    return out;
}

static void stream_case(const shape *sh)
{
    if (error_round(sh, 0)) /* a first round's error: relayed whole as it came */
        return;
    size_t n, n_whole;
    char *out = run_stream(sh, 0, &n), *whole = run_stream(sh, 1, &n_whole);
    if (n != n_whole || memcmp(out, whole, n) != 0)
        fail("the client's events depend on how the upstream's bytes were cut", out, n);
    data_set upstream = {0};
    for (size_t i = 0; i < sh->n_rounds; i++)
        sse_read(sh->round[i].p, sh->round[i].n, keep_data, &upstream);
    client_view c = {sh->api, &upstream, 0, out, n};
    sse_read(out, n, check_event, &c);
    free_set(&upstream);
    free(out);
    free(whole);
}

/* ---- A whole answer ---- */

static void check_answer(const proxy_api *api, span body, int parsed, const char *out, size_t n)
{
    if (!out)
        fail("the answer was lost (answered as out of memory)", body.p, body.n);
    if (!parsed) {
        if (n != body.n || memcmp(out, body.p, n) != 0)
            fail("an answer that is not the API's did not come as it came", out, n);
        return;
    }
    proxy_turn t = {0};
    if (proxy_turn_parse(api, out, n, &t) != 0)
        fail("the answer is not a JSON object", out, n);
    if (t.n_reacquire > 0)
        fail("a reacquire call reached the client", out, n);
    proxy_turn_free(&t);
}

static void whole_case(const shape *sh)
{
    json_t *usage = NULL, *shown = NULL;
    int rounds = 0;
    for (size_t i = 0; i < sh->n_rounds; i++) {
        span r = sh->round[i];
        proxy_turn t = {0};
        int parsed = !error_round(sh, i) && proxy_turn_parse(sh->api, r.p, r.n, &t) == 0;
        if (parsed)
            proxy_usage_add(&usage, json_object_get(t.doc, "usage"));
        proxy_round_kind k = proxy_round_judge(&t, parsed, rounds, MAX_ROUNDS);
        if (k == ROUND_ASIDE || k == ROUND_AGAIN)
            check_exchange(sh->api, &t);
        if (k == ROUND_AGAIN) {
            if (!shown)
                shown = json_array();
            proxy_turn_shown(sh->api, &t, shown);
        } else if (k == ROUND_ANSWER || k == ROUND_ASIDE) {
            char *body = malloc(r.n ? r.n : 1);
            if (!body)
                abort();
            memcpy(body, r.p, r.n);
            size_t n = 0;
            char *out = proxy_round_answer(sh->api, &t, parsed, k, rounds > 0 ? usage : NULL, shown,
                                           body, r.n, &n);
            check_answer(sh->api, r, parsed, out, n);
            free(out);
        }
        proxy_turn_free(&t);
        if (k != ROUND_AGAIN)
            break;
        rounds++;
    }
    json_decref(usage);
    json_decref(shown);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    shape sh;
    if (read_shape(data, size, &sh) != 0)
        return 0;
    if (sh.stream)
        stream_case(&sh);
    else
        whole_case(&sh);
    return 0;
}
