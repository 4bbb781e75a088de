/* What the proxy's files share: each provider API as data, the headers a
 * proxied request carries, and the steps a handler goes through. Only
 * api/proxy/ includes it. */
#ifndef COMPACTD_PROXY_INTERNAL_H
#define COMPACTD_PROXY_INTERNAL_H

#include "proxy.h"

#include "answers.h"
#include "chat_format.h"
#include "json_writer.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- The provider APIs (proxy_api.c) ---- */

typedef enum { PROXY_CHAT, PROXY_RESPONSES, PROXY_MESSAGES } proxy_api_kind;

typedef struct {
    proxy_api_kind kind;
    const char *provider; /* names the upstream: "openai", "anthropic" */
    const char *path;     /* after the upstream's base URL: "/chat/completions" */
    const chat_format *format; /* the compaction's format */
    const char *history;  /* the member that holds the history: "messages", "input" */
    const char *system;   /* the member beside it with the system prompt, or NULL */
    /* The members that bound the answer's length, the first present wins. */
    const char *const *max_tokens;
    /* The request headers passed on to the upstream, NULL-terminated. */
    const char *const *forwarded;
} proxy_api;

extern const proxy_api proxy_chat_api, proxy_responses_api, proxy_messages_api;

/* An error in the provider's own shape (so that its SDK raises it as its
 * own error): type and code as the SDKs surface them; param names a field
 * or header (or NULL); required_budget and budget are added when >= 0.
 * Answers res with status. */
void proxy_fail(api_response *res, const proxy_api *api, int status, const char *type,
                const char *code, const char *param, int64_t required_budget, int64_t budget,
                const char *fmt, ...) __attribute__((format(printf, 9, 10)));

/* ---- Headers (proxy_headers.c) ---- */

#define PROXY_FORWARDED_MAX 8

typedef struct {
    int64_t budget;                /* X-Compactd-Budget, or -1 */
    char session[SESSION_ID_MAX + 1]; /* X-Compactd-Session, or "" */
    char *policy;                  /* X-Compactd-Policy (a JSON object), or NULL; owned */
    /* "Name: value" lines for the upstream; owned. */
    char *forwarded[PROXY_FORWARDED_MAX];
    size_t n_forwarded;
    char *idempotency_key; /* owned, or NULL */
} proxy_headers;

/* Reads and checks the X-Compactd-* headers and copies the ones passed on.
 * 0, or -1 with res answered 400 naming the header. */
int proxy_headers_read(const api_request *req, const proxy_api *api, proxy_headers *h,
                       api_response *res);
void proxy_headers_free(proxy_headers *h);

/* ---- The model table (proxy_models.c) ---- */

/* The context window of model (the longest name in the table it starts
 * with), or -1 when none is known. */
int64_t proxy_model_window(const char *model);
int proxy_models_load(const char *path, char *err, size_t errlen);

/* ---- Bodies (proxy_body.c) ---- */

/* Where a request's parts are in its body, found after a full parse. */
typedef struct {
    const char *body;
    size_t len;
    size_t hist0, hist1;   /* the history's value; hist1 == 0: absent */
    size_t tools0, tools1; /* tools; 0, 0 when absent */
    size_t sys0, sys1;     /* the system member's; 0, 0 when absent */
    int history_is_array;  /* then left for the compaction to parse */
    int stream;
    int64_t max_tokens; /* -1 when none */
    char model[256];
} proxy_body;

/* Finds the body's parts and parses all of it but an array history (the
 * compaction parses that). 0, or -1 with res answered. */
int proxy_body_read(const app *a, const proxy_api *api, const char *body, size_t len,
                    proxy_body *out, api_response *res);
/* Parses the whole body, for a history the compaction refused: -1 with
 * res answered when the body is malformed (named as the client sent it),
 * 0 when the refusal is the compaction's own. */
int proxy_body_recheck(const app *a, const proxy_api *api, const proxy_body *b, api_response *res);

/* The messages/compact request for b's history: budget, the tools the
 * request sends plus extra_tool (the reacquire tool, whose room is kept
 * whether or not it is sent), the system prompt, policy, and room_tokens
 * of the budget kept free (reserve_tokens) for what the reacquire calls
 * read back. A new string (free()), or NULL when out of memory. */
char *proxy_compact_request(const proxy_api *api, const proxy_body *b, int64_t budget,
                            int64_t room_tokens, const char *policy, const char *extra_tool,
                            size_t *len);

/* b's body with [from, to) replaced by insert: a new string, or NULL. */
char *proxy_splice(const char *body, size_t len, size_t from, size_t to, const char *insert,
                   size_t insert_len, size_t *out_len);

/* The session of a request that names none: "proxy-" and the first 16
 * hex digits of the SHA-256 of the format, the system prompt and the
 * history's first element as sent. 0, or -1 when out of memory. */
int proxy_session_digest(const proxy_api *api, const proxy_body *b, char *out, size_t size);

/* ---- Reacquire calls (proxy_calls.c, proxy_reacquire.c) ---- */

/* A model's answer with the calls it makes: doc is the answer as the
 * non-streamed API returns it (built from the events when streamed). */
typedef struct {
    json_t *doc;
    size_t n_reacquire, n_other;
} proxy_turn;

/* Reads a non-streamed answer. 0, or -1 when it is not one this API sends. */
int proxy_turn_parse(const proxy_api *api, const char *body, size_t len, proxy_turn *t);
/* Builds the answer from a stream's events (server-sent events, as
 * the API streams them). 0, or -1 when they are not. */
int proxy_turn_from_events(const proxy_api *api, const char *sse, size_t len, proxy_turn *t);
void proxy_turn_free(proxy_turn *t);

/* How many bytes of an event stream (s, len bytes) come before the end of
 * the line that starts at s: its CR or LF (the SSE specification ends a
 * line at CR, LF or CRLF); len when it has not ended yet. */
static inline size_t proxy_sse_line_len(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && s[i] != '\n' && s[i] != '\r')
        i++;
    return i;
}

/* Whether an event stream's line (n bytes, its end taken off) is the field
 * `name`: "name: value", "name:value", or "name" alone, a field with an
 * empty value (the SSE specification, as the providers' SDKs read it);
 * *value is then where its value starts. Shared by the live relay and the
 * reading of a round's record, so that both see the same events. */
static inline int proxy_sse_field(const char *line, size_t n, const char *name, size_t *value)
{
    size_t k = strlen(name);
    if (n < k || memcmp(line, name, k) != 0 || (n > k && line[k] != ':'))
        return 0;
    *value = n > k + 1 && line[k + 1] == ' ' ? k + 2 : n > k ? k + 1 : k;
    return 1;
}

/* The answer without its reacquire calls (and, Responses, the reasoning
 * that led to them alone), written as the API writes it. A new string, or
 * NULL. */
char *proxy_turn_without_reacquire(const proxy_api *api, const proxy_turn *t, size_t *len);
/* The array of an answer's parts that may be calls: the message's
 * tool_calls, the content blocks, the output items. Borrowed, or NULL. */
json_t *proxy_turn_parts(const proxy_api *api, json_t *doc);
/* 1 for a call of reacquire, 0 for another call, -1 for no call. */
int proxy_call_kind(const proxy_api *api, json_t *part);

/* 1 for a Responses reasoning item. */
int proxy_is_reasoning(json_t *part);
/* Responses: 1 when the reasoning item at i of parts led to reacquire calls
 * alone (they follow it, then another reasoning item or nothing). */
int proxy_led_to_reacquire_alone(const proxy_api *api, json_t *parts, size_t i);

/* ---- The answer after rounds (proxy_answer.c) ---- */
/* Appends to shown what the client sees of t, a round that called only
 * reacquire: Chat Completions' text, Anthropic's content blocks, the
 * Responses items, but the reacquire calls and reasoning that leads to no
 * item it sees. */
void proxy_turn_shown(const proxy_api *api, const proxy_turn *t, json_t *shown);
/* Puts shown (the earlier rounds') before t's own parts (Chat Completions:
 * the texts before its text); an answer with no place for them (not the
 * API's: no message, no content or output array) is left as it is. 0, or
 * -1 when out of memory. */
int proxy_turn_after_shown(const proxy_api *api, proxy_turn *t, const json_t *shown);

/* What a round's answer calls for. */
typedef enum {
    ROUND_ANSWER, /* the answer: relayed */
    ROUND_ASIDE,  /* reacquire beside the client's calls: answered, taken out */
    ROUND_AGAIN,  /* reacquire only: answered, the upstream called again */
    ROUND_LIMIT   /* reacquire only, past the bound */
} proxy_round_kind;

/* What t (parsed: an answer this API sends, or not) calls for, rounds
 * having been answered inside already, at most max_rounds of them. */
proxy_round_kind proxy_round_judge(const proxy_turn *t, int parsed, int rounds, int max_rounds);

/* The whole answer the client gets from a round of kind ROUND_ANSWER or
 * ROUND_ASIDE (t read from body, when parsed): body as it came, or with
 * usage (every round's summed; NULL after one round) in place of its own,
 * or t with shown (the earlier rounds' parts) first and without its
 * reacquire calls. body (len bytes) is taken. A new string (free()), or
 * NULL when out of memory. */
char *proxy_round_answer(const proxy_api *api, proxy_turn *t, int parsed, proxy_round_kind k,
                         const json_t *usage, const json_t *shown, char *body, size_t len,
                         size_t *out_len);

/* Adds usage (an answer's: every count in it) to *sum, made when NULL. */
void proxy_usage_add(json_t **sum, const json_t *usage);
/* body (an answer, parsed already) with its usage replaced by usage. A
 * new string, or NULL. */
char *proxy_with_usage(const char *body, size_t len, const json_t *usage, size_t *out_len);

/* How a round's reacquire calls are answered. */
typedef struct {
    const app *a;
    const ops_scope *scope;
    const tokenizer *tk; /* the format's */
    int64_t room;        /* tokens the budget still has for the history */
} proxy_reacquirer;

/* Answers t's reacquire calls from the session's spills (each logged) and
 * writes what the history gets: the model's turn and the results, as
 * history elements separated by commas, into w. The room left shrinks by
 * what they cost. 0, or -1 when out of memory. */
int proxy_reacquire_round(proxy_reacquirer *r, const proxy_api *api, const proxy_turn *t, jw *w);

/* The reacquire tool's definition as api's request carries it (JSON). A
 * new string, or NULL. */
char *proxy_reacquire_tool(const proxy_api *api);

#endif
