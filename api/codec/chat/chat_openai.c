/* OpenAI Chat Completions histories: roles system, developer, user,
 * assistant (with tool_calls) and tool (with tool_call_id), content as a
 * string or an array of parts. What compactd reads is decoded strictly;
 * every other member is kept as sent and priced (chat_passthrough.h), a part
 * of a type compactd does not know kept whole. Rendered with ids and tool
 * names kept. */
#include "chat_classify.h"
#include "chat_codec.h"
#include "chat_media_parts.h"
#include "chat_passthrough.h"
#include "json_fields.h"

#include "chat_price.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    chat_role role;
} roles[] = {{"system", ROLE_SYSTEM},
             {"developer", ROLE_DEVELOPER},
             {"user", ROLE_USER},
             {"assistant", ROLE_ASSISTANT},
             {"tool", ROLE_TOOL}};

/* ---- Decoding ---- */

static void add_kept(chat_message *m, chat_str s)
{
    m->kept[m->n_kept++] = s;
}

static void add_payload(chat_message *m, chat_str s)
{
    m->payload[m->n_payload++] = s;
}

static int part_text(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_msg_ctx *c = ctx;
    chat_str s;
    if (field_read_string(v, at, 0, c->in->lim->max_text_bytes, "COMPACTD_MAX_TEXT_BYTES", &s.s,
                          &s.len, err) != 0)
        return -1;
    add_payload(c->m, s);
    return 0;
}

static int part_object(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    (void)ctx;
    return json_is_object(v) ? 0 : field_invalid_at(err, at, "must be an object");
}

/* An image is its URL (or data URL): the API needs one. It is priced by
 * the bound of chat_media.h, from the data URL's own header when inline. */
static int part_image_url(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    if (part_object(v, at, ctx, err) != 0)
        return -1;
    const json_t *url = json_object_get(v, "url");
    field_ref url_at = {at, "url", 0, NULL};
    if (!json_is_string(url) || json_string_length(url) == 0)
        return field_invalid_at(err, &url_at, "is required: a non-empty URL or data URL");
    return chat_price_openai_image(ctx, url, json_object_get(v, "detail"), at, err);
}

/* A file (a PDF: file_data inline, or a file_id), priced by its bound. */
static int part_file(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return chat_price_openai_file(ctx, v, at, err);
}

/* Audio ({data, format}), priced by the seconds its bytes hold. */
static int part_audio(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return chat_price_openai_audio(ctx, v, at, err);
}

/* The parts an array content may hold: each type, the roles that may send
 * it, and the one member it carries besides "type" (for media, an object
 * named as the type) with its reader. */
static const struct {
    const char *type;
    unsigned roles; /* a bit per chat_role */
    field_read_fn read;
} parts[] = {
    {"text", ~0u, part_text},
    {"refusal", 1u << ROLE_ASSISTANT, part_text},
    {"image_url", 1u << ROLE_USER, part_image_url},
    {"input_audio", 1u << ROLE_USER, part_audio},
    {"file", 1u << ROLE_USER, part_file},
};
#define NPARTS (sizeof(parts) / sizeof(parts[0]))

static int part_other(void *ctx, const char *name, const json_t *v, const field_ref *at,
                      compactd_error *err)
{
    chat_msg_ctx *c = ctx;
    (void)at;
    return chat_pass_member(c->in, c->m, name, v) == 0 ? 0 : chat_out_of_memory(err);
}

/* A part of a type compactd does not know: kept whole, priced by its bytes,
 * and its message protected, since nothing says what it may lose. */
static int unknown_part(chat_msg_ctx *c, const json_t *p, compactd_error *err)
{
    c->m->protect = 1;
    return chat_pass_block(c->in, c->m, p) == 0 ? 0 : chat_out_of_memory(err);
}

static int known_part(const char *t)
{
    for (size_t n = 0; n < NPARTS; n++)
        if (strcmp(t, parts[n].type) == 0)
            return 1;
    return 0;
}

static int read_part(chat_msg_ctx *c, const json_t *p, const field_ref *content, size_t k,
                     compactd_error *err)
{
    field_ref at = {content, NULL, k, NULL}, type_at = {&at, "type", 0, NULL};
    if (!json_is_object(p))
        return field_invalid_at(err, &at, "must be a content part object");
    const char *t = json_name(json_object_get(p, "type"));
    chat_role role = c->m->role;
    size_t n = 0;
    while (t && n < NPARTS && !(strcmp(t, parts[n].type) == 0 && (parts[n].roles >> role & 1)))
        n++;
    /* Only user content takes parts of types compactd does not know: the
     * role every new input type (image_url, input_audio, file) was added
     * to. The API's types give assistant content text and refusal parts,
     * and system, developer and tool content text parts only, and it
     * answers any other type there with "Invalid value". */
    if (t && *t && !known_part(t) && role == ROLE_USER)
        return unknown_part(c, p, err);
    if (!t || n == NPARTS)
        return field_invalid_at(err, &type_at, "%s in a%s %s message",
                                role == ROLE_USER        ? "must be \"text\", \"image_url\", "
                                                           "\"input_audio\" or \"file\""
                                : role == ROLE_ASSISTANT ? "must be \"text\" or \"refusal\""
                                                         : "must be \"text\"",
                                role == ROLE_ASSISTANT ? "n" : "", chat_role_name(role));
    const field_spec spec[] = {
        {"type", FIELD_OPTIONAL, 0, NULL},
        {parts[n].type, FIELD_REQUIRED_HERE, 0, parts[n].read},
    };
    return field_read_object_open(p, &at, spec, 2, c, NULL, part_other, err);
}

static int read_content(chat_msg_ctx *c, const json_t *v, compactd_error *err)
{
    chat_str s;
    if (json_is_string(v)) {
        if (chat_msg_text(c, v, ".content", &s, err) != 0)
            return -1;
        add_payload(c->m, s);
        return 0;
    }
    if (json_is_null(v) && c->m->role == ROLE_ASSISTANT)
        return 0;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return chat_msg_fail(c, ".content", err,
                             c->m->role == ROLE_ASSISTANT
                                 ? "must be a string, null or a non-empty array of content parts"
                                 : "must be a string or a non-empty array of content parts");
    field_ref root = {NULL, NULL, 0, c->path}, content = {&root, "content", 0, NULL};
    for (size_t k = 0; k < json_array_size(v); k++)
        if (read_part(c, json_array_get(v, k), &content, k, err) != 0)
            return -1;
    return 0;
}

/* What the readers of a message's tables fill: the message, and the call
 * being read. */
typedef struct {
    chat_msg_ctx *c;
    chat_call *call;
    size_t ncalls;
    int type;       /* of the call being read: 0 function, 1 custom */
    int has_member; /* it has the member of its type */
} msg_fields;

static int text_at(msg_fields *f, const json_t *v, const field_ref *at, chat_str *out,
                   compactd_error *err)
{
    return field_read_string(v, at, 0, f->c->in->lim->max_text_bytes, "COMPACTD_MAX_TEXT_BYTES",
                             &out->s, &out->len, err);
}

static int fn_name(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    if (text_at(f, v, at, &f->call->name, err) != 0)
        return -1;
    /* The API: "expected a string with minimum length 1". */
    return f->call->name.len ? 0 : field_invalid_at(err, at, "must not be empty");
}

static int fn_arguments(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    return text_at(f, v, at, &f->call->args, err);
}

static int call_other(void *ctx, const char *name, const json_t *v, const field_ref *at,
                      compactd_error *err)
{
    chat_msg_ctx *c = ((msg_fields *)ctx)->c;
    (void)at;
    return chat_pass_member(c->in, c->m, name, v) == 0 ? 0 : chat_out_of_memory(err);
}

static const field_spec function_fields[] = {
    {"name", FIELD_OPTIONAL, 0, fn_name}, /* both required, by one message */
    {"arguments", FIELD_OPTIONAL, 0, fn_arguments},
};

static int call_id(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    return text_at(f, v, at, &f->call->id, err);
}

/* A call's type names the member that carries it: "function" ({name,
 * arguments}) or "custom" ({name, input}, a custom tool's raw text). */
static int call_type(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    static const char *const types[] = {"function", "custom"};
    msg_fields *f = ctx;
    return field_read_enum(v, at, types, 2, &f->type, err);
}

static int call_function(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object {\"name\", \"arguments\"}");
    if (field_read_object_open(v, at, function_fields, NFIELDS(function_fields), ctx, NULL,
                               call_other, err) != 0)
        return -1;
    if (!f->call->name.s || !f->call->args.s)
        return field_invalid_at(err, at, "must have \"name\" and \"arguments\"");
    f->has_member |= 1;
    return 0;
}

static const field_spec custom_fields[] = {
    {"name", FIELD_OPTIONAL, 0, fn_name}, /* both required, by one message */
    {"input", FIELD_OPTIONAL, 0, fn_arguments},
};

static int call_custom(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object {\"name\", \"input\"}");
    if (field_read_object_open(v, at, custom_fields, NFIELDS(custom_fields), ctx, NULL, call_other,
                               err) != 0)
        return -1;
    if (!f->call->name.s || !f->call->args.s)
        return field_invalid_at(err, at, "must have \"name\" and \"input\"");
    f->has_member |= 2;
    return 0;
}

static const field_spec call_fields[] = {
    {"id", FIELD_OPTIONAL, 0, call_id}, /* id, type and its member required, by one message */
    {"type", FIELD_OPTIONAL, 0, call_type},
    {"function", FIELD_OPTIONAL, 0, call_function},
    {"custom", FIELD_OPTIONAL, 0, call_custom},
};

static int read_call(msg_fields *f, const json_t *v, const field_ref *calls, size_t k,
                     compactd_error *err)
{
    chat_msg_ctx *c = f->c;
    field_ref at = {calls, NULL, k, NULL};
    f->call = &c->m->calls[k];
    f->type = f->has_member = 0;
    if (!json_is_object(v))
        return field_invalid_at(err, &at, "must be a tool call object");
    if (field_read_object_open(v, &at, call_fields, NFIELDS(call_fields), f, NULL, call_other,
                               err) != 0)
        return -1;
    if (!f->call->id.s || !json_object_get(v, "type") || f->has_member != 1 << f->type)
        return field_invalid_at(err, &at,
                                "must have \"id\" and \"type\": \"function\" with \"function\" "
                                "or \"custom\" with \"custom\"");
    add_kept(c->m, f->call->id);
    add_kept(c->m, f->call->name);
    add_payload(c->m, f->call->args);
    c->in->where[c->index].call_at[k] = k;
    return 0;
}

/* ---- A message's members ---- */

static int msg_content(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    (void)at;
    return read_content(((msg_fields *)ctx)->c, v, err);
}

static int msg_name(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    chat_str s;
    if (text_at(f, v, at, &s, err) != 0)
        return -1;
    add_kept(f->c->m, s);
    return 0;
}

static int msg_refusal(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    chat_str s;
    if (json_is_null(v))
        return 0;
    if (text_at(f, v, at, &s, err) != 0)
        return -1;
    add_payload(f->c->m, s);
    return 0;
}

static int msg_tool_call_id(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    chat_message *m = f->c->m;
    chat_str s;
    if (text_at(f, v, at, &s, err) != 0)
        return -1;
    add_kept(m, s);
    m->answers[0] = s;
    m->n_answers = 1;
    return 0;
}

static int msg_tool_calls(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    msg_fields *f = ctx;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return field_invalid_at(err, at, "must be a non-empty array of tool calls");
    for (size_t k = 0; k < f->ncalls; k++)
        if (read_call(f, json_array_get(v, k), at, k, err) != 0)
            return -1;
    f->c->m->n_calls = f->ncalls;
    return 0;
}

/* The restricted rows are the fields only some roles have. */
static const field_spec message_fields[] = {
    {"role", FIELD_OPTIONAL, 0, NULL}, /* read first */
    {"content", FIELD_OPTIONAL, 0, msg_content},
    {"name", FIELD_OPTIONAL, 1, msg_name},
    {"refusal", FIELD_OPTIONAL, 1, msg_refusal},
    {"tool_call_id", FIELD_OPTIONAL, 1, msg_tool_call_id},
    {"tool_calls", FIELD_OPTIONAL, 1, msg_tool_calls},
};

static int role_has(void *ctx, const field_spec *f, const field_ref *at, compactd_error *err)
{
    chat_role role = ((msg_fields *)ctx)->c->m->role;
    /* A tool message's name is what LangChain writes; the API ignores it. */
    int ok = strcmp(f->name, "name") == 0           ? 1
             : strcmp(f->name, "tool_call_id") == 0 ? role == ROLE_TOOL
                                                    : role == ROLE_ASSISTANT;
    return ok ? 0 : field_invalid_at(err, at, "unknown field for this role");
}

static int read_message(chat_input *in, const json_t *v, size_t i, compactd_error *err)
{
    chat_msg_ctx c = {in, &in->req.m[i], i, ""};
    chat_message *m = c.m;
    chat_pathf(c.path, sizeof(c.path), "$.messages[%zu]", i);
    if (!json_is_object(v))
        return chat_invalid(err, c.path, "must be a message object, not %s", json_type_name(v));
    json_t *role = json_object_get(v, "role");
    size_t r = 0;
    for (; role && r < sizeof(roles) / sizeof(roles[0]); r++)
        if (json_name(role) && strcmp(json_name(role), roles[r].name) == 0)
            break;
    if (!role || r == sizeof(roles) / sizeof(roles[0]))
        return chat_msg_fail(
            &c, ".role", err,
            "must be one of \"system\", \"developer\", \"user\", \"assistant\", \"tool\"");
    m->role = roles[r].role;

    /* Room for every text the message can name. */
    json_t *calls = json_object_get(v, "tool_calls"), *content = json_object_get(v, "content");
    size_t ncalls = json_is_array(calls) ? json_array_size(calls) : 0;
    size_t nparts = json_is_array(content) ? json_array_size(content) : 1;
    m->kept = chat_alloc(in, (3 + 2 * ncalls) * sizeof(chat_str));
    m->payload =
        chat_alloc(in, (2 + nparts + ncalls + chat_members_within(v, 4)) * sizeof(chat_str));
    m->calls = chat_alloc(in, ncalls * sizeof(chat_call));
    in->where[i].call_at = chat_alloc(in, ncalls * sizeof(size_t));
    m->answers = chat_alloc(in, sizeof(chat_str));
    in->where[i].answer_at = chat_alloc(in, sizeof(size_t));
    if (!m->kept || !m->payload || !m->calls || !in->where[i].call_at || !m->answers ||
        !in->where[i].answer_at || chat_message_json(in, i, v, &m->json) != 0)
        return chat_out_of_memory(err);
    add_kept(m, (chat_str){roles[r].name, strlen(roles[r].name)});

    msg_fields fields = {&c, NULL, ncalls, 0, 0};
    field_ref at = {NULL, NULL, 0, c.path};
    if (field_read_object_open(v, &at, message_fields, NFIELDS(message_fields), &fields, role_has,
                               call_other, err) != 0)
        return -1;
    if (m->role == ROLE_TOOL && !m->n_answers)
        return chat_msg_fail(&c, ".tool_call_id", err, "is required for a tool message");
    if (!content && !(m->role == ROLE_ASSISTANT && m->n_calls))
        return chat_msg_fail(&c, ".content", err, "is required");
    /* The API takes an assistant message without content only when it
     * calls tools (or carries a refusal instead). */
    json_t *refusal = json_object_get(v, "refusal"), *audio = json_object_get(v, "audio");
    json_t *legacy_call = json_object_get(v, "function_call");
    if (json_is_null(content) && !m->n_calls && (!refusal || json_is_null(refusal)) &&
        (!audio || json_is_null(audio)) && (!legacy_call || json_is_null(legacy_call)))
        return chat_msg_fail(&c, ".content", err,
                             "may be null only in an assistant message with tool_calls, a "
                             "refusal, audio or a function_call");
    m->results_only = m->role == ROLE_TOOL;
    /* A replaced form carries its text as content, or in every call; and
     * as content too where the calls came with prose, so that the form of
     * a pointer message still shows that prose was there. */
    m->text_slots = m->n_calls && !chat_has_prose(m) ? 0 : 1;
    m->json_slots = m->n_calls;
    in->values[i] = (json_t *)v;
    return 0;
}

static int decode(chat_input *in, json_t *messages, compactd_error *err)
{
    return chat_read_messages(in, messages, read_message, err);
}

static void item_path(const chat_input *in, size_t i, int is_call, size_t k, char *out, size_t size)
{
    (void)in;
    if (is_call)
        snprintf(out, size, "$.messages[%zu].tool_calls[%zu].id", i, k);
    else
        snprintf(out, size, "$.messages[%zu].tool_call_id", i);
}

/* ---- Rendering ---- */

static void member_copy(jw *w, const json_t *v, const char *name)
{
    json_t *m = json_object_get(v, name);
    if (json_is_string(m))
        jw_member_string(w, name, json_string_value(m), json_string_length(m));
}

/* "tool_calls" with m's ids, types and names (v is the message as sent);
 * as each call's arguments args, and as a custom tool's input text (its raw
 * text: the pointer itself), or with args NULL, each call's own as sent. */
static void tool_calls(jw *w, const chat_message *m, const json_t *v, const char *args, size_t alen,
                       const char *text, size_t len)
{
    const json_t *calls = json_object_get(v, "tool_calls");
    jw_member(w, "tool_calls");
    jw_array_open(w);
    for (size_t k = 0; k < m->n_calls; k++) {
        const char *type = json_string_value(json_object_get(json_array_get(calls, k), "type"));
        int custom = type && strcmp(type, "custom") == 0;
        const chat_str *own = &m->calls[k].args;
        jw_object_open(w);
        jw_member_string(w, "id", m->calls[k].id.s, m->calls[k].id.len);
        jw_member_cstring(w, "type", custom ? "custom" : "function");
        jw_member(w, custom ? "custom" : "function");
        jw_object_open(w);
        jw_member_string(w, "name", m->calls[k].name.s, m->calls[k].name.len);
        if (custom)
            jw_member_string(w, "input", args ? text : own->s, args ? len : own->len);
        else
            jw_member_string(w, "arguments", args ? args : own->s, args ? alen : own->len);
        jw_object_close(w);
        jw_object_close(w);
    }
    jw_array_close(w);
}

static void render_replaced(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                            const chat_marker *const *extra, size_t n_extra)
{
    const chat_message *m = &in->req.m[i];
    const json_t *v = in->values[i];
    (void)extra;
    (void)n_extra;
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(m->role));
    if (m->role != ROLE_TOOL) /* the request types know no name there */
        member_copy(w, v, "name");
    member_copy(w, v, "tool_call_id");
    if (m->n_calls == 0) {
        jw_member_string(w, "content", text, len);
        jw_object_close(w);
        return;
    }
    char *args = malloc(chat_carrier_room(len));
    size_t alen = args ? chat_carrier_json(text, len, args) : 0;
    if (!args)
        w->oom = 1;
    jw_member(w, "content");
    if (m->text_slots)
        jw_string(w, text, len);
    else
        jw_null(w);
    tool_calls(w, m, v, args ? args : "", alen, text, len);
    jw_object_close(w);
    free(args);
}

static void render_narration(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                             int calls)
{
    const chat_message *m = &in->req.m[i];
    const json_t *v = in->values[i];
    if (text) {
        jw_object_open(w);
        jw_member_cstring(w, "role", chat_role_name(m->role));
        member_copy(w, v, "name");
        jw_member_string(w, "content", text, len);
        if (calls)
            tool_calls(w, m, v, NULL, 0, NULL, 0);
        jw_object_close(w);
        return;
    }
    /* Every member as sent but the calls, in their order. */
    const char *name;
    json_t *member;
    jw_object_open(w);
    json_object_foreach((json_t *)v, name, member)
    {
        if (strcmp(name, "tool_calls") == 0)
            continue;
        char *s = json_dumps(member, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s) {
            w->oom = 1;
            break;
        }
        jw_member(w, name);
        jw_raw(w, s, strlen(s));
        json_text_free(s);
    }
    jw_object_close(w);
}

static void render_appended(jw *w, const chat_input *in, size_t i, const chat_marker *const *extra,
                            size_t n_extra)
{
    (void)extra;
    (void)n_extra;
    jw_raw(w, in->req.m[i].json.s, in->req.m[i].json.len);
}

/* Messages of any role in any order; a marker is a system message of its
 * own; each call is answered by a tool message in the run right after its
 * caller. */
const chat_rules chat_openai_rules = {
    .alternating = 0,
    .marker_role = ROLE_SYSTEM,
    .pairing = CHAT_PAIR_RESULT_RUN,
    .result_role = ROLE_TOOL,
    .unique_call_ids = 0,
    .args_are_text = 1,
    .tools_prompt_tokens = 0, /* OpenAI documents no framing for tools */
};

const chat_codec chat_openai_codec = {
    .format = &chat_format_openai,
    .rules = &chat_openai_rules,
    .system_member = NULL,
    .decode = decode,
    .render_replaced = render_replaced,
    .render_appended = render_appended,
    .render_narration = render_narration,
    .render_marker = chat_render_role_marker,
    .opaque_texts = NULL, /* images, audio and files are not text */
    .item_path = item_path,
};
