/* Chat histories in and out of JSON: the request decoder shared by both
 * formats, and one codec per provider format (a row of chat_codecs) that
 * decodes its message array into the format-neutral chat_request and renders
 * the plan back into a history that provider accepts. */
#ifndef COMPACTD_CHAT_CODEC_H
#define COMPACTD_CHAT_CODEC_H

#include "chat.h"
#include "chat_format.h"
#include "chat_plan.h"
#include "error.h"
#include "json_decode.h"
#include "json_fields.h"
#include "json_shape.h"
#include "json_writer.h"
#include "shared_defs.h"

#include <jansson.h>

/* Where a call or an answer sits in its message, for error paths: the
 * index of its element in tool_calls (OpenAI) or content (Anthropic). */
typedef struct {
    size_t *call_at;
    size_t *answer_at;
    /* The first part only annotations[].tokens can price (an item_reference,
     * whose item compactd cannot see), or NULL. */
    const char *opaque_path;
    /* Responses: a call whose reasoning was dropped, sent without its id. */
    int unlinked;
} chat_where;

typedef struct chat_block chat_block;

/* A cache_control breakpoint on a block of a message (chat_cache.h). */
typedef struct {
    size_t msg, block;   /* block: its index in the content as decoded (thinking taken) */
    int nested;          /* on a block inside that one (a tool_result's content) */
    const json_t *value; /* borrowed from the request */
} chat_cache_mark;

typedef struct {
    chat_cache_mark *marks; /* in message order */
    size_t n;
    size_t outside; /* on system blocks and tool definitions, kept as sent */
    int prefix;     /* cache_prefix: one more at the end of the answer's messages */
} chat_cache;

typedef struct {
    json_t *doc;
    chat_request req;
    const struct chat_codec *codec;
    json_t **values;   /* each message as sent; borrowed from doc */
    json_t *system;    /* the top-level system prompt as sent (system_member), or NULL */
    chat_where *where; /* one per message */
    const char *tokenizer;
    chat_block *blocks; /* what chat_alloc() handed out */
    char **dumps;       /* what chat_dump() handed out */
    chat_str *raw;      /* each message's bytes in the body, or NULL */
    size_t n_dumps, cap_dumps;
    const decode_limits *lim;
    json_budget budget; /* what the body left of the request's value count */
    chat_cache cache;   /* Anthropic's breakpoints */
} chat_input;

typedef struct chat_codec {
    /* The format's descriptor: its name and what the domain knows of its
     * provider (the encoding, media pricing, the reacquire tool). */
    const chat_format *format;
    /* The shape the format holds a history to, for the planner and the
     * checker. */
    const chat_rules *rules;
    /* The member beside the messages that carries the system prompt
     * ("system", "instructions"), or NULL where it is a message. */
    const char *system_member;
    /* Decodes messages (the request's array, already checked to be one)
     * into in->req.m, in->values and in->where. 0, or -1 with err set. */
    int (*decode)(chat_input *in, json_t *messages, compactd_error *err);
    /* Writes message i with its texts replaced by text (a summary or a
     * pointer); extra (n_extra) are text blocks appended at its end. */
    void (*render_replaced)(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                            const chat_marker *const *extra, size_t n_extra);
    /* Writes message i as sent, with the text blocks extra appended (Anthropic
     * only: OpenAI markers are always messages of their own). */
    void (*render_appended)(jw *w, const chat_input *in, size_t i, const chat_marker *const *extra,
                            size_t n_extra);
    /* Writes narration that makes calls (chat_classify.h), message i:
     * without its calls (their results were dropped), as sent where text is
     * NULL, else with its prose replaced by text (its pointer); or, calls
     * set, that pointer and the calls as sent (their ids, names and
     * arguments: a read-only call's arguments are its way back). Where
     * prose and calls are items of their own (Responses): the narration
     * item, without its id when its calls and the reasoning that led to
     * them were dropped, else as render_replaced() writes it. */
    void (*render_narration)(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                             int calls);
    /* Writes a loss marker as a message of its own. */
    void (*render_marker)(jw *w, const chat_marker *mk);
    /* Calls put(ctx, text, len) for each text inside message i's opaque
     * parts that the model reads as text (a plain-text document); NULL in
     * a format whose opaque parts hold none. */
    void (*opaque_texts)(const chat_input *in, size_t i,
                         void (*put)(void *ctx, const char *s, size_t len), void *ctx);
    /* The JSON path of message i's call (is_call) or answer number k. */
    void (*item_path)(const chat_input *in, size_t i, int is_call, size_t k, char *out,
                      size_t size);
} chat_codec;

extern const chat_codec chat_openai_codec;
extern const chat_codec chat_anthropic_codec;
extern const chat_codec chat_responses_codec;
/* The codec that reads and writes format f. */
const chat_codec *chat_codec_of(const chat_format *f);
/* The rules each codec hands the planner (chat_openai_codec.rules, ...). */
extern const chat_rules chat_openai_rules;
extern const chat_rules chat_anthropic_rules;
extern const chat_rules chat_responses_rules;

/* Decodes a messages/compact request. Returns 0, or -1 with err set
 * (InvalidRequest with the JSON path, or Internal). Release in with
 * chat_input_free() either way. in borrows body: each message's JSON is its
 * bytes in it, so the body must outlive in. */
/* A marker as a message of its role whose content is its text: what the
 * Chat Completions and Messages formats both render (a codec's
 * render_marker). */
void chat_render_role_marker(jw *w, const chat_marker *mk);

int chat_decode_compact(const char *body, size_t len, const decode_limits *lim, chat_input *in,
                        compactd_error *err);
void chat_input_free(chat_input *in);

/* The same for a document with a member a front reads itself
 * (json_decode_compact_args()). */
int chat_decode_compact_args(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, chat_input *in, compactd_error *err);

/* Decodes a messages/verify request: the history as for compact, and into
 * v the audit's members (units, budget, context_tokens, dry_run); v's
 * context is left for the caller. Same contract; release v with
 * verify_input_free() and in with chat_input_free() either way. */
int chat_decode_verify(const char *body, size_t len, const decode_limits *lim, chat_input *in,
                       verify_input *v, compactd_error *err);

/* ---- For the codecs ---- */

/* Zeroed memory that lives as long as in; NULL when out of memory. */
void *chat_alloc(chat_input *in, size_t size);
/* The compact JSON of v, living as long as in. 0, or -1 when out of memory. */
int chat_dump(chat_input *in, const json_t *v, chat_str *out);
/* Message i (the value v) as sent: its bytes in the request body, or when
 * those could not be told apart, its compact JSON. 0, or -1 when out of
 * memory. */
int chat_message_json(chat_input *in, size_t i, const json_t *v, chat_str *out);
/* Finds the n elements of the top-level "messages" array of the parsed
 * body s[0..len) (spans into s, borrowed). Returns 0, or -1 when they are
 * not found as expected (a member name written with escapes, say): each
 * message is then written out with jansson instead. */
int chat_message_spans(const char *s, size_t len, size_t n, chat_str *out);
/* A copy of a path, living as long as in. */
const char *chat_path_copy(chat_input *in, const char *path);

/* snprintf for JSON paths and their parts: a path too long for out is
 * cut, which only shortens an error message. */
void chat_pathf(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* out = a + sep + b, as chat_pathf() would write it, without printf. */
void chat_path_join(char *out, size_t size, const char *a, const char *sep, const char *b);

/* InvalidRequest at path with a printf-style message; returns -1. */
int chat_invalid(compactd_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int chat_out_of_memory(compactd_error *err);

/* What a format's reader knows of the message it reads: where it goes and
 * the JSON path of the message ("$.messages[3]"), for error paths. */
typedef struct {
    chat_input *in;
    chat_message *m;
    size_t index;
    char path[ERROR_PATH_MAX];
} chat_msg_ctx;

/* InvalidRequest at the message's path plus suffix (".content"); returns -1. */
int chat_msg_fail(chat_msg_ctx *c, const char *suffix, compactd_error *err, const char *message);

/* chat_text() of the member at the message's path plus suffix; the path is
 * spelled out only for an error. */
int chat_msg_text(chat_msg_ctx *c, const json_t *v, const char *suffix, chat_str *out,
                  compactd_error *err);

/* chat_msg_text() of v, appended to the message's payload (a text only its
 * preserved form renders, priced by the tokenizer); the caller made room. */
int chat_msg_payload_text(chat_msg_ctx *c, const json_t *v, const char *suffix,
                          compactd_error *err);

/* Reads one message of the format at index i into in (its chat_message,
 * value and JSON-path facts). Returns 0, or -1 with err set. */
typedef int (*chat_read_message_fn)(chat_input *in, const json_t *v, size_t i, compactd_error *err);

/* Sizes in's per-message arrays for the messages array and reads each
 * message with read, the format's reader. Returns 0, or -1 with err set. */
int chat_read_messages(chat_input *in, json_t *messages, chat_read_message_fn read,
                       compactd_error *err);

/* A string member within the text limit: 0 with *out set, or -1 (err at
 * path). */
int chat_text(const chat_input *in, const json_t *v, const char *path, chat_str *out,
              compactd_error *err);

/* Whether s is prefix followed by at least one letter, digit or _ (and -
 * where dash): the shapes the providers hold their ids to. */
int chat_id_matches(chat_str s, const char *prefix, int dash);

/* Writes the answer of a planned request (the 200 body). */
char *chat_encode_answer(const char *session, const chat_input *in, const chat_plan *p,
                         size_t *len);
/* 0 when the history the answer renders holds a message and keeps the
 * provider's rules (see chat_check.h), -1 when not (a bug) or out of
 * memory. */
int chat_output_valid(const chat_input *in, const chat_plan *p);
/* Each item of the answer's messages in order, as a key: 2 i + 1 for
 * message i, 2 at for a loss marker of its own placed before message at
 * (so that an item comes before message i exactly when its key is less
 * than 2 i + 1). keys has room for in->req.n + p->n_markers. Returns how
 * many. */
size_t chat_output_keys(const chat_input *in, const chat_plan *p, size_t *keys);
/* The 422 body of a refused one. */
char *chat_encode_failure(const compactd_error *err, const chat_input *in, const chat_plan *p,
                          size_t *len);

#endif
