/* The messages/compact request: its members, the policy and the annotations;
 * the message array itself goes to the format's codec. */
#include "chat_codec.h"
#include "chat_policy.h"
#include "json_fields.h"
#include "json_shape.h"

#include "chat_check.h"
#include "chat_budget.h"
#include "chat_cache.h"
#include "tokenizer.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHAT_DEFAULT_KEEP_LAST 2

static const chat_codec *const codecs[] = {&chat_openai_codec, &chat_anthropic_codec,
                                           &chat_responses_codec};

const chat_codec *chat_codec_of(const chat_format *f)
{
    for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
        if (codecs[i]->format == f)
            return codecs[i];
    return NULL;
}

/* ---- Structure ---- */

static int check_structure(chat_input *in, compactd_error *err)
{
    size_t n = in->req.n;
    chat_check_msg *cm = chat_alloc(in, n * sizeof(*cm));
    if (!cm)
        return chat_out_of_memory(err);
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &in->req.m[i];
        cm[i] = (chat_check_msg){m->role,      m->calls,     m->n_calls, m->answers,
                                 m->n_answers, m->same_turn, m->leads};
    }
    chat_check_result r = chat_check(in->req.rules, cm, n);
    if (r.problem == CHECK_OK)
        return 0;
    if (r.problem == CHECK_OOM)
        return chat_out_of_memory(err);
    char path[ERROR_PATH_MAX];
    if (r.problem == CHECK_ALTERNATION)
        chat_pathf(path, sizeof(path), "$.messages[%zu].role", r.message);
    else if (r.problem == CHECK_LEADER_ALONE)
        chat_pathf(path, sizeof(path), "$.messages[%zu]", r.message);
    else
        in->codec->item_path(in, r.message, chat_check_item_is_call(r.problem), r.item, path,
                             sizeof(path));
    return chat_invalid(err, path, "%s", chat_check_describe(r.problem));
}

/* ---- The request ---- */

/* The request's format, looked up by name here once: its descriptor and
 * codec are what every later step reads. */
static int find_codec(const json_t *doc, chat_input *in, compactd_error *err)
{
    json_t *f = json_object_get(doc, "format");
    if (!f)
        return chat_invalid(err, "$.format", "is required: " CHAT_FORMATS_QUOTED);
    const char *name = json_name(f);
    const chat_format *format = name ? chat_format_find(name, strlen(name)) : NULL;
    if (!format || !(in->codec = chat_codec_of(format)))
        return chat_invalid(err, "$.format", "must be " CHAT_FORMATS_QUOTED);
    in->req.rules = in->codec->rules;
    return 0;
}

/* What a system text block's readers fill. */
typedef struct {
    chat_input *in;
    chat_str *text;
    int has_text;
} system_ctx;

static int block_type(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    static const char *const types[] = {"text"};
    int t = 0;
    (void)ctx;
    return field_read_enum(v, at, types, 1, &t, err);
}

static int block_text(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    system_ctx *c = ctx;
    c->has_text = 1;
    return field_read_string(v, at, 0, c->in->lim->max_text_bytes, "COMPACTD_MAX_TEXT_BYTES",
                             &c->text->s, &c->text->len, err);
}

/* cache_control is the provider's: passed on as sent, never read. */
static const field_spec system_block_fields[] = {
    {"type", FIELD_OPTIONAL, 0, block_type}, /* required, with "text", by one message */
    {"text", FIELD_OPTIONAL, 0, block_text},
    {"cache_control", FIELD_OPTIONAL, 0, NULL},
};

static int read_system(chat_input *in, json_t *v, compactd_error *err)
{
    field_ref at = {NULL, "system", 0, NULL};
    if (!in->codec->system_member || strcmp(in->codec->system_member, "system") != 0)
        return field_invalid_at(err, &at, "%s",
                                in->codec->system_member
                                    ? "is Anthropic's: a Responses history carries its system "
                                      "prompt as \"instructions\""
                                    : "is Anthropic's: an OpenAI history carries its system "
                                      "prompt as a message");
    in->system = v;
    if (json_is_string(v)) {
        in->req.n_system = 1;
        in->req.system = chat_alloc(in, sizeof(chat_str));
        return in->req.system ? chat_text(in, v, "$.system", &in->req.system[0], err)
                              : chat_out_of_memory(err);
    }
    if (!json_is_array(v))
        return field_invalid_at(err, &at, "must be a string or an array of text blocks, not %s",
                                json_type_name(v));
    in->req.n_system = json_array_size(v);
    in->req.system = chat_alloc(in, in->req.n_system * sizeof(chat_str));
    if (!in->req.system)
        return chat_out_of_memory(err);
    for (size_t k = 0; k < in->req.n_system; k++) {
        json_t *b = json_array_get(v, k);
        field_ref elem = {&at, NULL, k, NULL};
        system_ctx c = {in, &in->req.system[k], 0};
        if (!json_is_object(b))
            return field_invalid_at(err, &elem, "must be a text block, not %s", json_type_name(b));
        if (field_read_object(b, &elem, system_block_fields, NFIELDS(system_block_fields), &c, NULL,
                              err) != 0)
            return -1;
        if (!c.has_text || !json_object_get(b, "type"))
            return field_invalid_at(err, &elem, "must have \"type\": \"text\" and \"text\"");
    }
    return 0;
}

/* ---- The request's members ---- */

static int member_system(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    (void)at;
    return read_system(((chat_ctx *)ctx)->in, (json_t *)v, err);
}

/* The Responses API's instructions: a string, priced like a system
 * prompt and returned as sent. */
static int member_instructions(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_input *in = ((chat_ctx *)ctx)->in;
    if (!in->codec->system_member || strcmp(in->codec->system_member, "instructions") != 0)
        return field_invalid_at(err, at,
                                "is the Responses API's: give format \"openai-responses\", or "
                                "carry the system prompt as this format does");
    if (!json_is_string(v))
        return field_invalid_at(err, at, "must be a string, not %s", json_type_name(v));
    in->system = (json_t *)v;
    in->req.n_system = 1;
    in->req.system = chat_alloc(in, sizeof(chat_str));
    return in->req.system ? chat_text(in, v, "$.instructions", &in->req.system[0], err)
                          : chat_out_of_memory(err);
}

static int member_dry_run(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_bool(v, at, &((chat_ctx *)ctx)->in->req.dry_run, err);
}

static int member_tokenizer(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_tokenizer(v, at, &((chat_ctx *)ctx)->in->req.tokenizer, err);
}

static int member_budget(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_int(v, at, 0, TOKENS_MAX, &((chat_ctx *)ctx)->in->req.budget, err);
}

static int member_tools(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return chat_read_tools(((chat_ctx *)ctx)->in, v, at, err);
}

static int member_reserve(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return chat_read_reserve_tokens(((chat_ctx *)ctx)->in, v, at, err);
}

/* Anthropic's only: the other formats' prompt caches need no breakpoint. */
static int member_cache_prefix(const json_t *v, const field_ref *at, void *ctx,
                               compactd_error *err)
{
    chat_input *in = ((chat_ctx *)ctx)->in;
    if (in->codec->format != &chat_format_anthropic)
        return field_invalid_at(err, at,
                                "is Anthropic's (a cache_control breakpoint): OpenAI's prompt "
                                "caches need none");
    return field_read_bool(v, at, &in->cache.prefix, err);
}

static int member_compact_to(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_int(v, at, 1, TOKENS_MAX, &((chat_ctx *)ctx)->in->req.compact_to, err);
}

/* The low-water mark: the request's, never above its budget, else the
 * server's share of the budget (rounded down, at least 1 token). */
static int settle_compact_to(chat_input *in, compactd_error *err)
{
    chat_request *r = &in->req;
    if (r->compact_to > r->budget)
        return chat_invalid(err, "$.compact_to",
                            "is %lld, above the budget %lld: the low-water mark a history that "
                            "does not fit is planned down to must be at most the budget",
                            (long long)r->compact_to, (long long)r->budget);
    if (r->compact_to == 0)
        r->compact_to = r->budget * in->lim->compact_to_percent / 100;
    return 0;
}

static int member_mode(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    static const char *const modes[] = {[PLAN_STRICT] = "strict", [PLAN_DISCOVERY] = "discovery"};
    int mode = 0;
    if (field_read_enum(v, at, modes, 2, &mode, err) != 0)
        return -1;
    ((chat_ctx *)ctx)->in->req.mode = (plan_mode)mode;
    return 0;
}

/* The members only an audit takes: the protected units and the budget
 * that a repair must fit in. */
static int member_units(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_ctx *c = ctx;
    return json_decode_units(v, at->name, c->in->lim, 1, &c->v->set, err);
}

static int member_verify_budget(const json_t *v, const field_ref *at, void *ctx,
                                compactd_error *err)
{
    verify_input *vi = ((chat_ctx *)ctx)->v;
    vi->has_budget = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &vi->budget, err);
}

static int member_context_tokens(const json_t *v, const field_ref *at, void *ctx,
                                 compactd_error *err)
{
    verify_input *vi = ((chat_ctx *)ctx)->v;
    vi->has_context_tokens = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &vi->context_tokens, err);
}

/* format, messages and annotations have no reader here: they are read in
 * their turn (the format first, the annotations once the messages are). */
static const field_spec compact_members[] = {
    {"format", FIELD_OPTIONAL, 0, NULL},
    {"budget", FIELD_REQUIRED_HERE, 0, member_budget},
    {"messages", FIELD_REQUIRED_HERE, 0, NULL},
    {"system", FIELD_OPTIONAL, 0, member_system},
    {"instructions", FIELD_OPTIONAL, 0, member_instructions},
    {"dry_run", FIELD_OPTIONAL, 0, member_dry_run},
    {"tokenizer", FIELD_OPTIONAL, 0, member_tokenizer},
    {"annotations", FIELD_OPTIONAL, 0, NULL},
    {"policy", FIELD_OPTIONAL, 0, chat_read_policy},
    {"mode", FIELD_OPTIONAL, 0, member_mode},
    {"tools", FIELD_OPTIONAL, 0, member_tools},
    {"reserve_tokens", FIELD_OPTIONAL, 0, member_reserve},
    {"compact_to", FIELD_OPTIONAL, 0, member_compact_to},
    {"cache_prefix", FIELD_OPTIONAL, 0, member_cache_prefix},
};

static const field_spec verify_members[] = {
    {"format", FIELD_OPTIONAL, 0, NULL},
    {"messages", FIELD_REQUIRED_HERE, 0, NULL},
    {"system", FIELD_OPTIONAL, 0, member_system},
    {"instructions", FIELD_OPTIONAL, 0, member_instructions},
    {"dry_run", FIELD_OPTIONAL, 0, member_dry_run},
    {"tokenizer", FIELD_OPTIONAL, 0, member_tokenizer},
    {"units", FIELD_OPTIONAL, 0, member_units}, /* required, once the messages are read */
    {"budget", FIELD_OPTIONAL, 0, member_verify_budget},
    {"context_tokens", FIELD_OPTIONAL, 0, member_context_tokens},
};

/* The messages array: an array of at most max_units messages, each found
 * as sent in the body, decoded by the format's codec. */
static int read_message_array(chat_input *in, const char *body, size_t len, compactd_error *err)
{
    json_t *msgs = json_object_get(in->doc, "messages");
    if (!json_is_array(msgs))
        return chat_invalid(err, "$.messages", "must be an array, not %s", json_type_name(msgs));
    size_t n = json_array_size(msgs);
    if (n == 0) /* both providers refuse an empty history */
        return chat_invalid(err, "$.messages", "must hold at least one message");
    if (n > in->lim->max_units)
        return chat_invalid(err, "$.messages",
                            "has %zu messages; the limit is %zu (COMPACTD_MAX_UNITS)", n,
                            in->lim->max_units);
    in->raw = chat_alloc(in, n * sizeof(chat_str));
    if (!in->raw)
        return chat_out_of_memory(err);
    if (chat_message_spans(body, len, n, in->raw) != 0)
        in->raw = NULL;
    return in->codec->decode(in, msgs, err);
}

/* Both routes' requests: v is NULL for compact, the audit's members for
 * verify. */
static int decode_request(const char *body, size_t len, const char *front_member,
                          const decode_limits *lim, chat_input *in, verify_input *v,
                          compactd_error *err)
{
    memset(in, 0, sizeof(*in));
    in->lim = lim;
    in->req.tokenizer = NULL; /* the format's, once the format is known */
    in->req.policy.keep_last = CHAT_DEFAULT_KEEP_LAST;
    json_budget_init(&in->budget, lim);
    if (!(in->doc = json_parse_request(body, len, lim, SHAPE_DEPTH_CHAT, &in->budget, err)))
        return -1;
    if (front_member)
        json_object_del(in->doc, front_member);
    if (find_codec(in->doc, in, err) != 0)
        return -1;
    chat_ctx c = {in, v, NULL, -1};
    if (field_read_object(in->doc, NULL, v ? verify_members : compact_members,
                          v ? NFIELDS(verify_members) : NFIELDS(compact_members), &c, NULL,
                          err) != 0)
        return -1;
    if (!v && settle_compact_to(in, err) != 0)
        return -1;
    /* A request that names no tokenizer counts with its format's; one whose
     * rank file is missing must name another. */
    if (!json_object_get(in->doc, "tokenizer"))
        in->req.tokenizer = field_default_tokenizer(in->codec->format);
    if (!in->req.tokenizer)
        return chat_format_tokenizer_missing(in->codec->format, err);
    if (read_message_array(in, body ? body : "", len, err) != 0 || check_structure(in, err) != 0)
        return -1;
    json_t *notes = json_object_get(in->doc, "annotations");
    if (notes && chat_read_annotations(in, notes, err) != 0)
        return -1;
    in->tokenizer = tokenizer_name(in->req.tokenizer);
    if (v)
        return 0; /* an audit counts no message */
    if (chat_cache_read(in, err) != 0)
        return -1;
    for (size_t i = 0; i < in->req.n; i++)
        if (in->where[i].opaque_path && !in->req.m[i].note.has_tokens)
            return chat_invalid(err, in->where[i].opaque_path,
                                "compactd cannot see what this names: give its tokens as "
                                "annotations[].tokens for message %zu",
                                i);
    return 0;
}

int chat_decode_compact(const char *body, size_t len, const decode_limits *lim, chat_input *in,
                        compactd_error *err)
{
    return decode_request(body, len, NULL, lim, in, NULL, err);
}

int chat_decode_compact_args(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, chat_input *in, compactd_error *err)
{
    return decode_request(body, len, front_member, lim, in, NULL, err);
}

int chat_decode_verify(const char *body, size_t len, const decode_limits *lim, chat_input *in,
                       verify_input *v, compactd_error *err)
{
    memset(v, 0, sizeof(*v));
    if (decode_request(body, len, NULL, lim, in, v, err) != 0)
        return -1;
    if (!v->set.units)
        return chat_invalid(err, "$.units", "is required");
    if (json_verify_pairing(v, err) != 0)
        return -1;
    v->dry_run = in->req.dry_run;
    v->set.tokenizer = in->req.tokenizer;
    return 0;
}
