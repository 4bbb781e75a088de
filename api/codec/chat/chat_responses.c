/* OpenAI Responses API histories: the items of a request's input array.
 * message items (input_text, output_text, refusal, input_image, input_file
 * parts), function_call / custom_tool_call and their outputs paired by
 * call_id, reasoning and compaction items (opaque state the API needs back
 * as sent), item_reference, and the hosted tools' call items. Fields
 * compactd does not read are kept as sent. One item is one message of the
 * neutral model; the items of one model response share its turn
 * (same_turn), so that a reasoning item never parts from what follows it. */
#include "chat_codec.h"
#include "chat_media_parts.h"
#include "chat_responses_render.h"

#include "chat_price.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    ITEM_MESSAGE,
    ITEM_CALL,         /* function_call, custom_tool_call */
    ITEM_OUTPUT,       /* their outputs */
    ITEM_HOSTED_CALL,  /* a hosted tool's call, answered by an item of its own */
    ITEM_HOSTED_OUT,   /* that answer */
    ITEM_HOSTED,       /* a hosted tool's call item that needs no answer */
    ITEM_HOSTED_REPLY, /* a hosted item answering the item before it */
    ITEM_REASONING,
    ITEM_COMPACTION,
    ITEM_REFERENCE,
    ITEM_UNKNOWN
} item_kind;

static const struct {
    const char *type;
    item_kind kind;
    const char *payload; /* the member a replaced form carries its text in */
    /* What an id the API gave the item begins with ("Expected an ID that
     * begins with 'fc'"), or NULL where compactd holds it to none. */
    const char *id_prefix;
} types[] = {
    {"message", ITEM_MESSAGE, "content", "msg"},
    {"function_call", ITEM_CALL, "arguments", "fc"},
    {"custom_tool_call", ITEM_CALL, "input", NULL},
    {"function_call_output", ITEM_OUTPUT, "output", NULL},
    {"custom_tool_call_output", ITEM_OUTPUT, "output", NULL},
    {"computer_call", ITEM_HOSTED_CALL, NULL, NULL},
    {"computer_call_output", ITEM_HOSTED_OUT, NULL, NULL},
    {"shell_call", ITEM_HOSTED_CALL, NULL, NULL},
    {"shell_call_output", ITEM_HOSTED_OUT, NULL, NULL},
    {"apply_patch_call", ITEM_HOSTED_CALL, NULL, NULL},
    {"apply_patch_call_output", ITEM_HOSTED_OUT, NULL, NULL},
    {"web_search_call", ITEM_HOSTED, NULL, NULL},
    {"file_search_call", ITEM_HOSTED, NULL, NULL},
    {"code_interpreter_call", ITEM_HOSTED, NULL, NULL},
    {"image_generation_call", ITEM_HOSTED, NULL, NULL},
    {"local_shell_call", ITEM_HOSTED, NULL, NULL},
    {"mcp_call", ITEM_HOSTED, NULL, NULL},
    {"mcp_list_tools", ITEM_HOSTED, NULL, NULL},
    {"mcp_approval_request", ITEM_HOSTED, NULL, NULL},
    {"local_shell_call_output", ITEM_HOSTED_REPLY, NULL, NULL},
    {"mcp_approval_response", ITEM_HOSTED_REPLY, NULL, NULL},
    {"reasoning", ITEM_REASONING, NULL, "rs"},
    {"compaction", ITEM_COMPACTION, NULL, NULL},
    {"item_reference", ITEM_REFERENCE, NULL, NULL},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

/* The row of v's type: an item without one is a message (the SDK's
 * EasyInputMessage); NTYPES for a type compactd does not know. */
static size_t type_row(const json_t *v)
{
    const json_t *t = json_object_get(v, "type");
    if (!t)
        return 0;
    const char *name = json_name(t);
    if (!name)
        return NTYPES;
    /* Most rows differ in their first letter: strcmp() only where it matches. */
    for (size_t r = 0; r < NTYPES; r++)
        if (types[r].type[0] == name[0] && strcmp(name, types[r].type) == 0)
            return r;
    return NTYPES;
}

static item_kind kind_of(const json_t *v)
{
    size_t r = type_row(v);
    return r == NTYPES ? ITEM_UNKNOWN : types[r].kind;
}

const char *chat_responses_payload(const json_t *v)
{
    size_t row = type_row(v);
    return row == NTYPES ? NULL : types[row].payload;
}

int chat_responses_is_message(const json_t *v)
{
    return kind_of(v) == ITEM_MESSAGE;
}

/* Items a model response outputs: those of one response share a turn. */
static int model_output(const json_t *v)
{
    item_kind k = kind_of(v);
    if (k == ITEM_MESSAGE)
        return json_name(json_object_get(v, "role")) &&
               strcmp(json_name(json_object_get(v, "role")), "assistant") == 0;
    return k == ITEM_CALL || k == ITEM_HOSTED_CALL || k == ITEM_HOSTED || k == ITEM_REASONING;
}

/* ---- Decoding ---- */

static void add_kept(chat_message *m, chat_str s)
{
    m->kept[m->n_kept++] = s;
}

static int mark_opaque(chat_msg_ctx *c, const char *suffix, compactd_error *err)
{
    if (c->m->opaque)
        return 0;
    char path[ERROR_PATH_MAX];
    c->m->opaque = 1;
    chat_path_join(path, sizeof(path), c->path, "", suffix);
    if (!(c->in->where[c->index].opaque_path = chat_path_copy(c->in, path)))
        return chat_out_of_memory(err);
    return 0;
}

/* A string member the API requires non-empty (call_id, name). */
static int required_id(chat_msg_ctx *c, const json_t *v, const char *name, chat_str *out,
                       compactd_error *err)
{
    char suffix[64];
    chat_pathf(suffix, sizeof(suffix), ".%s", name);
    const json_t *m = json_object_get(v, name);
    if (!m)
        return chat_msg_fail(c, suffix, err, "is required");
    if (chat_msg_text(c, m, suffix, out, err) != 0)
        return -1;
    return out->len ? 0 : chat_msg_fail(c, suffix, err, "must not be empty");
}

/* An input_image, input_file or input_audio part, priced by its bound
 * (chat_media_parts.h). */
static int media_part(chat_msg_ctx *c, const json_t *p, const char *t, const char *suffix,
                      compactd_error *err)
{
    char path[ERROR_PATH_MAX];
    chat_path_join(path, sizeof(path), c->path, "", suffix);
    field_ref at = {NULL, NULL, 0, path};
    if (strcmp(t, "input_file") == 0)
        return chat_price_openai_file(c, p, &at, err);
    if (strcmp(t, "input_audio") == 0) {
        field_ref audio = {&at, "input_audio", 0, NULL};
        return chat_price_openai_audio(c, json_object_get(p, "input_audio"), &audio, err);
    }
    const json_t *url = json_object_get(p, "image_url");
    field_ref url_at = {&at, "image_url", 0, NULL};
    if (url && !json_is_null(url) && !json_is_string(url))
        return field_invalid_at(err, &url_at, "must be a URL or a data URL");
    return chat_price_openai_image(c, url, json_object_get(p, "detail"), &at, err);
}

/* A content part: its text, or an image, file or audio priced by its
 * bound, or a part type compactd does not know, priced by its bytes. */
static int read_part(chat_msg_ctx *c, const json_t *p, const char *content, size_t k, int assistant,
                     compactd_error *err)
{
    static const char *const input_parts[] = {"input_text", "input_image", "input_file",
                                              "input_audio"};
    char suffix[96];
    chat_pathf(suffix, sizeof(suffix), "%s[%zu]", content, k);
    if (!json_is_object(p))
        return chat_msg_fail(c, suffix, err, "must be a content part object");
    const char *t = json_name(json_object_get(p, "type"));
    if (!t) {
        chat_path_join(suffix, sizeof(suffix), suffix, "", ".type");
        return chat_msg_fail(c, suffix, err, "is required: the part's type");
    }
    int input = 0;
    for (size_t j = 0; j < sizeof(input_parts) / sizeof(input_parts[0]); j++)
        input |= strcmp(t, input_parts[j]) == 0;
    int output = strcmp(t, "output_text") == 0 || strcmp(t, "refusal") == 0;
    if ((assistant && input && strcmp(t, "input_text") != 0) || (!assistant && output)) {
        chat_path_join(suffix, sizeof(suffix), suffix, "", ".type");
        return chat_msg_fail(c, suffix, err,
                             assistant ? "must be \"output_text\" or \"refusal\" in an assistant "
                                         "message"
                                       : "must be an input part (\"input_text\", \"input_image\", "
                                         "\"input_file\") outside an assistant message");
    }
    const char *member = strcmp(t, "refusal") == 0 ? "refusal" : "text";
    if (strcmp(t, "input_text") == 0 || output) {
        chat_str s;
        char sub[128];
        chat_pathf(sub, sizeof(sub), "%s.%s", suffix, member);
        const json_t *text = json_object_get(p, member);
        if (!text)
            return chat_msg_fail(c, sub, err, "is required");
        if (chat_msg_text(c, text, sub, &s, err) != 0)
            return -1;
        c->m->payload[c->m->n_payload++] = s;
        return 0;
    }
    if (input)
        return media_part(c, p, t, suffix, err);
    /* Unknown part types reach the model somehow: their bytes bound them. */
    char *dump = json_dumps(p, JSON_COMPACT);
    if (!dump)
        return chat_out_of_memory(err);
    c->m->fixed_tokens += (int64_t)strlen(dump);
    json_text_free(dump);
    return 0;
}

/* A message's content, or an output's: a string or an array of parts. */
/* The text of an assistant message's part: an output_text's text or a
 * refusal's refusal; NULL for a part of another kind. */
static const json_t *part_text(const json_t *part)
{
    const char *type = json_name(json_object_get(part, "type"));
    const json_t *t = !type                              ? NULL
                      : strcmp(type, "output_text") == 0 ? json_object_get(part, "text")
                      : strcmp(type, "refusal") == 0     ? json_object_get(part, "refusal")
                                                         : NULL;
    return json_is_string(t) ? t : NULL;
}

static int read_content(chat_msg_ctx *c, const json_t *v, const char *member, int assistant,
                        compactd_error *err)
{
    char suffix[64];
    chat_pathf(suffix, sizeof(suffix), ".%s", member);
    if (!v)
        return chat_msg_fail(c, suffix, err, "is required");
    if (json_is_string(v))
        return chat_msg_payload_text(c, v, suffix, err);
    if (!json_is_array(v))
        return chat_msg_fail(c, suffix, err, "must be a string or an array of content parts");
    for (size_t k = 0; k < json_array_size(v); k++)
        if (read_part(c, json_array_get(v, k), suffix, k, assistant, err) != 0)
            return -1;
    return 0;
}

static int read_message_item(chat_msg_ctx *c, const json_t *v, compactd_error *err)
{
    static const struct {
        const char *name;
        chat_role role;
    } roles[] = {{"user", ROLE_USER},
                 {"assistant", ROLE_ASSISTANT},
                 {"system", ROLE_SYSTEM},
                 {"developer", ROLE_DEVELOPER}};
    const char *r = json_name(json_object_get(v, "role"));
    size_t k = 0;
    while (r && k < sizeof(roles) / sizeof(roles[0]) && strcmp(r, roles[k].name) != 0)
        k++;
    if (!r || k == sizeof(roles) / sizeof(roles[0]))
        return chat_msg_fail(c, ".role", err,
                             "must be one of \"user\", \"assistant\", \"system\", \"developer\"");
    c->m->role = roles[k].role;
    add_kept(c->m, (chat_str){roles[k].name, strlen(roles[k].name)});
    c->m->text_slots = 1;
    const json_t *content = json_object_get(v, "content");
    c->m->one_text = c->m->role == ROLE_ASSISTANT &&
                     (json_is_string(content) ||
                      (json_array_size(content) == 1 && part_text(json_array_get(content, 0))));
    return read_content(c, content, "content", c->m->role == ROLE_ASSISTANT, err);
}

/* function_call (arguments: a string of JSON) and custom_tool_call (input:
 * free text), each one call. */
static int read_call(chat_msg_ctx *c, const json_t *v, size_t row, compactd_error *err)
{
    chat_call *call = &c->m->calls[0];
    const char *member = types[row].payload;
    char suffix[32];
    chat_pathf(suffix, sizeof(suffix), ".%s", member);
    c->m->role = ROLE_ASSISTANT;
    if (required_id(c, v, "call_id", &call->id, err) != 0 ||
        required_id(c, v, "name", &call->name, err) != 0)
        return -1;
    const json_t *args = json_object_get(v, member);
    if (!args)
        return chat_msg_fail(c, suffix, err, "is required");
    if (chat_msg_text(c, args, suffix, &call->args, err) != 0)
        return -1;
    add_kept(c->m, call->id);
    add_kept(c->m, call->name);
    c->m->payload[c->m->n_payload++] = call->args;
    c->m->n_calls = 1;
    c->in->where[c->index].call_at[0] = 0;
    /* function_call's arguments are JSON; custom_tool_call's input is text. */
    if (types[row].kind == ITEM_CALL && strcmp(member, "arguments") == 0)
        c->m->json_slots = 1;
    else
        c->m->text_slots = 1;
    return 0;
}

static int read_output(chat_msg_ctx *c, const json_t *v, compactd_error *err)
{
    chat_str id;
    c->m->role = ROLE_TOOL;
    c->m->results_only = 1;
    if (required_id(c, v, "call_id", &id, err) != 0)
        return -1;
    add_kept(c->m, id);
    c->m->answers[0] = id;
    c->m->n_answers = 1;
    c->m->text_slots = 1;
    return read_content(c, json_object_get(v, "output"), "output", 0, err);
}

/* A hosted tool's call or its answer: kept whole, priced by its bytes; one
 * that is paired by call_id takes part in the pairing. */
static int read_hosted(chat_msg_ctx *c, const json_t *v, item_kind kind, compactd_error *err)
{
    c->m->role = kind == ITEM_HOSTED_OUT ? ROLE_TOOL : ROLE_ASSISTANT;
    c->m->results_only = kind == ITEM_HOSTED_OUT;
    c->m->fixed_tokens = (int64_t)c->m->json.len;
    if (kind == ITEM_HOSTED_CALL) {
        chat_call *call = &c->m->calls[0];
        if (required_id(c, v, "call_id", &call->id, err) != 0)
            return -1;
        /* Its identity, for superseded calls: the tool and the whole item. */
        call->name = (chat_str){json_name(json_object_get(v, "type")),
                                strlen(json_name(json_object_get(v, "type")))};
        call->args = c->m->json;
        c->m->n_calls = 1;
        c->in->where[c->index].call_at[0] = 0;
    } else if (kind == ITEM_HOSTED_OUT) {
        if (required_id(c, v, "call_id", &c->m->answers[0], err) != 0)
            return -1;
        c->m->n_answers = 1;
    }
    return 0;
}

/* The object v without its member name, as its compact JSON in out: 0, or
 * -1 when out of memory (jansson's json_copy() would drop a member it
 * could not copy, and say nothing). */
static int dump_without(chat_input *in, const json_t *v, const char *name, chat_str *out)
{
    json_t *rest = json_object();
    const char *key;
    json_t *value;
    int rc = rest ? 0 : -1;
    json_object_foreach((json_t *)v, key, value)
    {
        if (rc == 0 && strcmp(key, name) != 0)
            rc = json_object_set(rest, key, value);
    }
    if (rc == 0)
        rc = chat_dump(in, rest, out);
    json_decref(rest);
    return rc;
}

/* A reasoning item is priced by what the model reads: the item without its
 * encrypted_content (summary, id, status, members compactd does not know)
 * as its JSON text, by the tokenizer, and its reasoning, which compactd
 * cannot read, by the bound of its encrypted_content (chat_price.h) or, for
 * an item the provider stored, by annotations[].tokens, which stand for
 * either; in every form. */
static int price_reasoning(chat_msg_ctx *c, const json_t *v, const json_t *enc, compactd_error *err)
{
    chat_str s;
    if (dump_without(c->in, v, "encrypted_content", &s) != 0)
        return chat_out_of_memory(err);
    add_kept(c->m, s);
    c->m->fixed_tokens = 0; /* its bytes are not what it costs: the parts above are */
    c->m->bound_tokens = json_is_string(enc) ? chat_encrypted_tokens(json_string_length(enc)) : 0;
    c->m->sealed_state = 1;
    return 0;
}

/* State the API needs back as sent (reasoning with its encrypted_content and
 * summary, a compaction item), and types compactd does not know: kept whole,
 * priced by their bytes (reasoning by price_reasoning()). Compaction items
 * and unknown types take the system role, protected by default; reasoning
 * is the assistant's. */
static int read_state(chat_msg_ctx *c, const json_t *v, item_kind kind, compactd_error *err)
{
    c->m->fixed_tokens = (int64_t)c->m->json.len;
    c->m->role = kind == ITEM_REASONING ? ROLE_ASSISTANT : ROLE_SYSTEM;
    if (kind == ITEM_REASONING) {
        const json_t *summary = json_object_get(v, "summary");
        const json_t *enc = json_object_get(v, "encrypted_content");
        if (!json_is_array(summary))
            return chat_msg_fail(c, ".summary", err,
                                 "is required: an array of summary_text parts (may be empty)");
        if (enc && !json_is_string(enc) && !json_is_null(enc))
            return chat_msg_fail(c, ".encrypted_content", err, "must be a string or null");
        return price_reasoning(c, v, enc, err);
    }
    if (kind == ITEM_COMPACTION && !json_is_string(json_object_get(v, "encrypted_content")))
        return chat_msg_fail(c, ".encrypted_content", err,
                             "is required: the compaction item's encrypted_content, as returned");
    return 0;
}

/* An item_reference stands for an item the API has stored: compactd cannot
 * see it, so it is counted from annotations[].tokens. */
static int read_reference(chat_msg_ctx *c, const json_t *v, compactd_error *err)
{
    chat_str id;
    c->m->role = ROLE_SYSTEM;
    if (required_id(c, v, "id", &id, err) != 0)
        return -1;
    return mark_opaque(c, "", err);
}

/* An item's id, where its type has a prefix: the API answers one that
 * begins otherwise with "Expected an ID that begins with 'msg'", and one
 * with other characters than letters, digits, _ and - with "Expected an ID
 * that contains letters, numbers, underscores, or dashes". */
static int check_item_id(chat_msg_ctx *c, const json_t *v, size_t row, compactd_error *err)
{
    const json_t *id = json_object_get(v, "id");
    const char *prefix = row == NTYPES ? NULL : types[row].id_prefix;
    if (!prefix || !id)
        return 0;
    if (json_is_string(id) &&
        chat_id_matches((chat_str){json_string_value(id), json_string_length(id)}, prefix, 1))
        return 0;
    char message[128];
    chat_pathf(message, sizeof(message),
               "must be an id that begins with \"%s\" followed by letters, digits, _ or -, as "
               "the API gives a %s item",
               prefix, types[row].type);
    return chat_msg_fail(c, ".id", err, message);
}

static int read_item(chat_input *in, const json_t *v, size_t i, compactd_error *err)
{
    chat_msg_ctx c = {in, &in->req.m[i], i, ""};
    chat_message *m = c.m;
    chat_pathf(c.path, sizeof(c.path), "$.messages[%zu]", i);
    if (!json_is_object(v))
        return chat_invalid(err, c.path, "must be an input item object, not %s", json_type_name(v));
    const json_t *type = json_object_get(v, "type");
    if (type && !json_is_string(type))
        return chat_msg_fail(&c, ".type", err, "must be a string: the item's type");
    size_t row = type_row(v);
    item_kind kind = row == NTYPES ? ITEM_UNKNOWN : types[row].kind;
    const json_t *content = json_object_get(v, kind == ITEM_OUTPUT ? "output" : "content");
    size_t nparts = json_is_array(content) ? json_array_size(content) : 1;
    m->kept = chat_alloc(in, 3 * sizeof(chat_str));
    m->payload = chat_alloc(in, (1 + nparts) * sizeof(chat_str));
    m->calls = chat_alloc(in, sizeof(chat_call));
    m->answers = chat_alloc(in, sizeof(chat_str));
    in->where[i].call_at = chat_alloc(in, sizeof(size_t));
    in->where[i].answer_at = chat_alloc(in, sizeof(size_t));
    if (!m->kept || !m->payload || !m->calls || !m->answers || !in->where[i].call_at ||
        !in->where[i].answer_at || chat_message_json(in, i, v, &m->json) != 0)
        return chat_out_of_memory(err);
    in->values[i] = (json_t *)v;
    if (check_item_id(&c, v, row, err) != 0)
        return -1;
    switch (kind) {
    case ITEM_MESSAGE:
        return read_message_item(&c, v, err);
    case ITEM_CALL:
        return read_call(&c, v, row, err);
    case ITEM_OUTPUT:
        return read_output(&c, v, err);
    case ITEM_HOSTED_CALL:
    case ITEM_HOSTED_OUT:
    case ITEM_HOSTED:
    case ITEM_HOSTED_REPLY:
        return read_hosted(&c, v, kind, err);
    case ITEM_REFERENCE:
        return read_reference(&c, v, err);
    case ITEM_REASONING:
    case ITEM_COMPACTION:
    case ITEM_UNKNOWN:
        break;
    }
    return read_state(&c, v, kind, err);
}

/* The items of one response share its turn; a reasoning item must be
 * followed by the item of its response it came before (the API refuses a
 * reasoning item "provided without its required following item"). */
static int link_turns(chat_input *in, compactd_error *err)
{
    /* Each item's kind and whether a response outputs it, looked up once:
     * the loop asks about every item three times. */
    size_t n = in->req.n;
    unsigned char *kind = malloc(n ? n : 1), *output = malloc(n ? n : 1);
    if (!kind || !output) {
        free(kind);
        free(output);
        return chat_out_of_memory(err);
    }
    for (size_t i = 0; i < n; i++) {
        kind[i] = (unsigned char)kind_of(in->values[i]);
        output[i] = (unsigned char)model_output(in->values[i]);
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0 && (kind[i] == ITEM_HOSTED_REPLY || (output[i] && output[i - 1])))
            in->req.m[i].same_turn = 1;
        in->req.m[i].leads = kind[i] == ITEM_REASONING;
        if (kind[i] == ITEM_REASONING && (i + 1 == n || !output[i + 1])) {
            char path[ERROR_PATH_MAX];
            chat_pathf(path, sizeof(path), "$.messages[%zu]", i);
            rc = chat_invalid(err, path,
                              "is a reasoning item without the item of its response that "
                              "follows it (an assistant message or a call): reasoning is "
                              "sent back in place, before it");
        }
    }
    free(kind);
    free(output);
    return rc;
}

/* The first item of the last response: the last run of items a response
 * outputs, before the outputs answering its calls. */
static size_t last_response(const chat_input *in)
{
    size_t i = in->req.n;
    while (i > 0 && !model_output(in->values[i - 1]))
        i--;
    while (i > 1 && model_output(in->values[i - 2]))
        i--;
    return i > 0 ? i - 1 : 0;
}

/* The assistant message v as an input message of its own, without the
 * response it came from: its parts' texts (output_text and refusal, the
 * two kinds the API gives) as one string, as the input types carry an
 * assistant message without an id (EasyInputMessage), every member but id,
 * status and content kept. Returns 1 with its JSON in out and that string
 * in joined (what it is priced by, as it renders), 0 when v holds a part
 * of another kind (left as sent), -1 when out of memory. */
static int unlinked_message(chat_input *in, const json_t *v, chat_str *out, chat_str *joined)
{
    const json_t *parts = json_object_get(v, "content");
    size_t k, len = 0;
    const json_t *part;
    if (!json_is_array(parts))
        return 0;
    json_array_foreach(parts, k, part)
    {
        const json_t *t = part_text(part);
        if (!t)
            return 0;
        len += json_string_length(t);
    }
    char *text = chat_alloc(in, len ? len : 1), *p = text;
    json_t *rest = json_object(), *str = NULL;
    int rc = text && rest ? 0 : -1;
    if (rc == 0) {
        json_array_foreach(parts, k, part)
        {
            const json_t *t = part_text(part);
            memcpy(p, json_string_value(t), json_string_length(t));
            p += json_string_length(t);
        }
        rc = (str = json_stringn_nocheck(text, len)) ? 0 : -1;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        if (rc != 0 || strcmp(key, "id") == 0 || strcmp(key, "status") == 0)
            continue;
        rc = json_object_set(rest, key, strcmp(key, "content") == 0 ? str : value);
    }
    if (rc == 0)
        rc = chat_dump(in, rest, out);
    json_decref(str);
    json_decref(rest);
    *joined = (chat_str){text, len};
    return rc == 0 ? 1 : -1;
}

/* The items of the response a dropped reasoning item (at i) came before go
 * without their id: the API refuses a call or a message whose id names a
 * reasoning item that was not sent ("Item 'fc_...' of type 'function_call'
 * was provided without its required 'reasoning' item", and the same for
 * 'msg_...' of type 'message', with store: false too). A call without an id
 * (which the input types allow, unlike a hosted call's) is an input item
 * of its own; a message becomes one as unlinked_message() makes it. Their
 * JSON as sent becomes that. */
static int unlink_response(chat_input *in, size_t i, compactd_error *err)
{
    for (size_t j = i + 1; j < in->req.n && in->req.m[j].same_turn && model_output(in->values[j]);
         j++) {
        /* An item two reasoning items of its response came before is
         * unlinked once: its JSON as sent is the one with the id. */
        item_kind kind = kind_of(in->values[j]);
        if ((kind != ITEM_CALL && kind != ITEM_MESSAGE) || !json_object_get(in->values[j], "id") ||
            in->where[j].unlinked)
            continue;
        chat_message *m = &in->req.m[j];
        chat_str sent = m->json, joined;
        int rc = kind == ITEM_CALL ? dump_without(in, in->values[j], "id", &m->json)
                                   : unlinked_message(in, in->values[j], &m->json, &joined);
        if (rc < 0)
            return chat_out_of_memory(err);
        if (kind == ITEM_MESSAGE) {
            if (rc == 0)
                continue; /* left as sent */
            m->payload[0] = joined;
            m->n_payload = 1;
        }
        m->sent = sent;
        in->where[j].unlinked = 1;
    }
    return 0;
}

/* Whether reasoning item i led to a hosted tool's item with an id, which
 * names it as a call's does and which the input types require. */
static int leads_hosted(const chat_input *in, size_t i)
{
    for (size_t j = i + 1; j < in->req.n && in->req.m[j].same_turn && model_output(in->values[j]);
         j++) {
        item_kind kind = kind_of(in->values[j]);
        if ((kind == ITEM_HOSTED || kind == ITEM_HOSTED_CALL) &&
            json_object_get(in->values[j], "id"))
            return 1;
    }
    return 0;
}

/* Reasoning follows the API's rules (docs/chat.md): a finished turn's is
 * dropped from the context unread, so stale, unless it led to a hosted
 * item with an id (refused without it). The last response's go back with
 * its calls as sent, so pinned; the turn in flight's others stay in their
 * exchange, never edited: kept or dropped with its calls and outputs. */
static int place_reasoning(chat_input *in, compactd_error *err)
{
    size_t n = in->req.n, flight = 0;
    for (size_t i = n; i > 0 && flight == 0; i--)
        if (in->req.m[i - 1].role == ROLE_USER && kind_of(in->values[i - 1]) == ITEM_MESSAGE)
            flight = i;
    size_t last = last_response(in);
    for (size_t i = 0; i < n; i++) {
        if (kind_of(in->values[i]) != ITEM_REASONING)
            continue;
        if (i < flight && !leads_hosted(in, i)) {
            in->req.m[i].stale = 1;
            if (unlink_response(in, i, err) != 0)
                return -1;
            continue;
        }
        in->req.m[i].pinned = i >= last && i >= flight;
        in->req.sealed |= json_is_string(json_object_get(in->values[i], "encrypted_content"));
    }
    return 0;
}

static int decode(chat_input *in, json_t *messages, compactd_error *err)
{
    if (chat_read_messages(in, messages, read_item, err) != 0 || link_turns(in, err) != 0)
        return -1;
    return place_reasoning(in, err);
}

static void item_path(const chat_input *in, size_t i, int is_call, size_t k, char *out, size_t size)
{
    (void)in;
    (void)is_call;
    (void)k;
    snprintf(out, size, "$.messages[%zu].call_id", i);
}

/* Items in any order; calls of one response may come one after another,
 * answered by their outputs in the run right after them; call ids are
 * unique in the history (the API pairs by call_id). */
const chat_rules chat_responses_rules = {
    .alternating = 0,
    .marker_role = ROLE_DEVELOPER,
    .pairing = CHAT_PAIR_RESULT_RUN,
    .result_role = ROLE_TOOL,
    .unique_call_ids = 1,
    .args_are_text = 1,
};

const chat_codec chat_responses_codec = {
    .format = &chat_format_responses,
    .rules = &chat_responses_rules,
    .system_member = "instructions",
    .decode = decode,
    .render_replaced = chat_responses_render_replaced,
    .render_appended = chat_responses_render_appended,
    .render_narration = chat_responses_render_narration,
    .render_marker = chat_responses_render_marker,
    .opaque_texts = NULL, /* images and files are not text */
    .item_path = item_path,
};
