/* OpenAI Chat Completions histories: roles system, developer, user,
 * assistant (with tool_calls) and tool (with tool_call_id), content as a
 * string or an array of parts. Decoded strictly; rendered with ids and tool
 * names kept. */
#include "chat_codec.h"

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

/* The parts an array content may hold for the message's role. */
static int read_part(chat_msg_ctx *c, const json_t *p, size_t k, compactd_error *err)
{
    char suffix[64], sub[96];
    const char *name;
    json_t *v;
    chat_pathf(suffix, sizeof(suffix), ".content[%zu]", k);
    if (!json_is_object(p))
        return chat_msg_fail(c, suffix, err, "must be a content part object");
    json_t *type = json_object_get(p, "type");
    const char *t = json_name(type) ? json_name(type) : "";
    chat_role role = c->m->role;
    int text = strcmp(t, "text") == 0;
    int refusal = strcmp(t, "refusal") == 0 && role == ROLE_ASSISTANT;
    int opaque = role == ROLE_USER && (strcmp(t, "image_url") == 0 ||
                                       strcmp(t, "input_audio") == 0 || strcmp(t, "file") == 0);
    if (!text && !refusal && !opaque) {
        chat_pathf(sub, sizeof(sub), "%s.type", suffix);
        return chat_msg_fail(c, sub, err,
                             role == ROLE_USER
                                 ? "must be \"text\", \"image_url\", \"input_audio\" or "
                                   "\"file\""
                             : role == ROLE_ASSISTANT ? "must be \"text\" or \"refusal\""
                                                      : "must be \"text\"");
    }
    json_object_foreach((json_t *)p, name, v)
    {
        chat_path_join(sub, sizeof(sub), suffix, ".", name);
        chat_str s;
        if (strcmp(name, "type") == 0)
            continue;
        if (text && strcmp(name, "text") == 0) {
            if (chat_msg_text(c, v, sub, &s, err) != 0)
                return -1;
            add_payload(c->m, s);
        } else if (refusal && strcmp(name, "refusal") == 0) {
            if (chat_msg_text(c, v, sub, &s, err) != 0)
                return -1;
            add_payload(c->m, s);
        } else if (opaque && strcmp(name, t) == 0) {
            if (!json_is_object(v))
                return chat_msg_fail(c, sub, err, "must be an object");
        } else {
            return chat_msg_fail(c, sub, err, "unknown field");
        }
    }
    const char *need = text ? "text" : refusal ? "refusal" : t;
    if (!json_object_get(p, need)) {
        chat_path_join(sub, sizeof(sub), suffix, ".", need);
        return chat_msg_fail(c, sub, err, "is required");
    }
    if (opaque && !c->m->opaque) {
        c->m->opaque = 1;
        char path[ERROR_PATH_MAX];
        chat_path_join(path, sizeof(path), c->path, "", suffix);
        if (!(c->in->where[c->index].opaque_path = chat_path_copy(c->in, path)))
            return chat_out_of_memory(err);
    }
    return 0;
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
    for (size_t k = 0; k < json_array_size(v); k++)
        if (read_part(c, json_array_get(v, k), k, err) != 0)
            return -1;
    return 0;
}

static int read_call(chat_msg_ctx *c, const json_t *v, size_t k, compactd_error *err)
{
    char suffix[64], sub[96];
    const char *name;
    json_t *m;
    chat_call *call = &c->m->calls[k];
    int has_id = 0, has_fn = 0;
    chat_pathf(suffix, sizeof(suffix), ".tool_calls[%zu]", k);
    if (!json_is_object(v))
        return chat_msg_fail(c, suffix, err, "must be a tool call object");
    json_object_foreach((json_t *)v, name, m)
    {
        chat_path_join(sub, sizeof(sub), suffix, ".", name);
        if (strcmp(name, "id") == 0) {
            if (chat_msg_text(c, m, sub, &call->id, err) != 0)
                return -1;
            has_id = 1;
        } else if (strcmp(name, "type") == 0) {
            if (!json_name(m) || strcmp(json_name(m), "function") != 0)
                return chat_msg_fail(c, sub, err, "must be \"function\"");
        } else if (strcmp(name, "function") == 0) {
            const char *fname;
            json_t *f;
            int has_name = 0, has_args = 0;
            if (!json_is_object(m))
                return chat_msg_fail(c, sub, err, "must be an object {\"name\", \"arguments\"}");
            json_object_foreach(m, fname, f)
            {
                char fsub[128];
                chat_path_join(fsub, sizeof(fsub), sub, ".", fname);
                if (strcmp(fname, "name") == 0) {
                    if (chat_msg_text(c, f, fsub, &call->name, err) != 0)
                        return -1;
                    has_name = 1;
                } else if (strcmp(fname, "arguments") == 0) {
                    if (chat_msg_text(c, f, fsub, &call->args, err) != 0)
                        return -1;
                    has_args = 1;
                } else {
                    return chat_msg_fail(c, fsub, err, "unknown field");
                }
            }
            if (!has_name || !has_args)
                return chat_msg_fail(c, sub, err, "must have \"name\" and \"arguments\"");
            has_fn = 1;
        } else {
            return chat_msg_fail(c, sub, err, "unknown field");
        }
    }
    if (!has_id || !has_fn || !json_object_get(v, "type"))
        return chat_msg_fail(c, suffix, err,
                             "must have \"id\", \"type\": \"function\" and \"function\"");
    add_kept(c->m, call->id);
    add_kept(c->m, call->name);
    add_payload(c->m, call->args);
    c->in->where[c->index].call_at[k] = k;
    return 0;
}

static int allowed(chat_role role, const char *field)
{
    if (strcmp(field, "role") == 0 || strcmp(field, "content") == 0)
        return 1;
    if (strcmp(field, "name") == 0)
        return role != ROLE_TOOL;
    if (strcmp(field, "tool_calls") == 0 || strcmp(field, "refusal") == 0)
        return role == ROLE_ASSISTANT;
    if (strcmp(field, "tool_call_id") == 0)
        return role == ROLE_TOOL;
    return 0;
}

static int read_message(chat_input *in, const json_t *v, size_t i, compactd_error *err)
{
    chat_msg_ctx c = {in, &in->req.m[i], i, ""};
    chat_message *m = c.m;
    const char *name;
    json_t *f;
    snprintf(c.path, sizeof(c.path), "$.messages[%zu]", i);
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
    m->payload = chat_alloc(in, (2 + nparts + ncalls) * sizeof(chat_str));
    m->calls = chat_alloc(in, ncalls * sizeof(chat_call));
    in->where[i].call_at = chat_alloc(in, ncalls * sizeof(size_t));
    m->answers = chat_alloc(in, sizeof(chat_str));
    in->where[i].answer_at = chat_alloc(in, sizeof(size_t));
    if (!m->kept || !m->payload || !m->calls || !in->where[i].call_at || !m->answers ||
        !in->where[i].answer_at || chat_message_json(in, i, v, &m->json) != 0)
        return chat_out_of_memory(err);
    add_kept(m, (chat_str){roles[r].name, strlen(roles[r].name)});

    json_object_foreach((json_t *)v, name, f)
    {
        char suffix[80];
        chat_path_join(suffix, sizeof(suffix), "", ".", name);
        chat_str s;
        if (!allowed(m->role, name))
            return chat_msg_fail(&c, suffix, err, "unknown field for this role");
        if (strcmp(name, "content") == 0) {
            if (read_content(&c, f, err) != 0)
                return -1;
        } else if (strcmp(name, "name") == 0) {
            if (chat_msg_text(&c, f, suffix, &s, err) != 0)
                return -1;
            add_kept(m, s);
        } else if (strcmp(name, "refusal") == 0) {
            if (!json_is_null(f)) {
                if (chat_msg_text(&c, f, suffix, &s, err) != 0)
                    return -1;
                add_payload(m, s);
            }
        } else if (strcmp(name, "tool_call_id") == 0) {
            if (chat_msg_text(&c, f, suffix, &s, err) != 0)
                return -1;
            add_kept(m, s);
            m->answers[0] = s;
            m->n_answers = 1;
        } else if (strcmp(name, "tool_calls") == 0) {
            if (!json_is_array(f) || json_array_size(f) == 0)
                return chat_msg_fail(&c, suffix, err, "must be a non-empty array of tool calls");
            for (size_t k = 0; k < ncalls; k++)
                if (read_call(&c, json_array_get(f, k), k, err) != 0)
                    return -1;
            m->n_calls = ncalls;
        }
    }
    if (m->role == ROLE_TOOL && !m->n_answers)
        return chat_msg_fail(&c, ".tool_call_id", err, "is required for a tool message");
    if (!content && !(m->role == ROLE_ASSISTANT && m->n_calls))
        return chat_msg_fail(&c, ".content", err, "is required");
    m->results_only = m->role == ROLE_TOOL;
    /* A replaced form carries its text as content, or in every call. */
    m->text_slots = m->n_calls ? 0 : 1;
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

static void render_replaced(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                            const chat_marker *const *extra, size_t n_extra)
{
    const chat_message *m = &in->req.m[i];
    const json_t *v = in->values[i];
    (void)extra;
    (void)n_extra;
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(m->role));
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
    jw_null(w);
    jw_member(w, "tool_calls");
    jw_array_open(w);
    for (size_t k = 0; k < m->n_calls; k++) {
        jw_object_open(w);
        jw_member_string(w, "id", m->calls[k].id.s, m->calls[k].id.len);
        jw_member_cstring(w, "type", "function");
        jw_member(w, "function");
        jw_object_open(w);
        jw_member_string(w, "name", m->calls[k].name.s, m->calls[k].name.len);
        jw_member_string(w, "arguments", args ? args : "", alen);
        jw_object_close(w);
        jw_object_close(w);
    }
    jw_array_close(w);
    jw_object_close(w);
    free(args);
}

static void render_appended(jw *w, const chat_input *in, size_t i, const chat_marker *const *extra,
                            size_t n_extra)
{
    (void)extra;
    (void)n_extra;
    jw_raw(w, in->req.m[i].json.s, in->req.m[i].json.len);
}

static void render_marker(jw *w, const chat_marker *mk)
{
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(mk->role));
    jw_member_string(w, "content", mk->text, mk->len);
    jw_object_close(w);
}

const chat_codec chat_openai_codec = {"openai",        CHAT_OPENAI,   decode,   render_replaced,
                                      render_appended, render_marker, item_path};
