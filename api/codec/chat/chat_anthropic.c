/* Anthropic Messages histories: user and assistant turns whose content is a
 * string or an array of text, image, document, tool_use, tool_result,
 * thinking and redacted_thinking blocks. What compactd reads is decoded
 * strictly; every other member is kept as sent and priced, a block of a
 * type compactd does not know kept whole (chat_passthrough.h). Rendered
 * with ids and tool names kept. */
#include "chat_codec.h"
#include "chat_anthropic_media.h"
#include "chat_anthropic_thinking.h"
#include "chat_passthrough.h"
#include "chat_own.h"

#include "chat_price.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Decoding ---- */

/* A string member the API takes only non-empty: ids, names, text blocks
 * (it answers "text content blocks must be non-empty" and holds ids to
 * ^[a-zA-Z0-9_-]+$). 0 with *out set, or -1 (err at the member's path). */
static int nonempty_text(chat_msg_ctx *c, const json_t *v, const char *suffix, chat_str *out,
                         compactd_error *err)
{
    if (chat_msg_text(c, v, suffix, out, err) != 0)
        return -1;
    if (out->len == 0)
        return chat_msg_fail(c, suffix, err, "must not be empty");
    return 0;
}

/* Whether text ends in whitespace, which the API refuses at the end of the
 * final assistant turn (the reply it would continue). */
static int ends_in_space(chat_str s)
{
    if (s.len == 0)
        return 0;
    char last = s.s[s.len - 1];
    return last == ' ' || last == '\t' || last == '\n' || last == '\r' || last == '\v' ||
           last == '\f';
}

/* nonempty_text() of a tool_use id or a tool_result's tool_use_id, held to
 * the API's pattern, ^[a-zA-Z0-9_-]+$ ("String should match pattern"). */
static int tool_id(chat_msg_ctx *c, const json_t *v, const char *suffix, chat_str *out,
                   compactd_error *err)
{
    if (nonempty_text(c, v, suffix, out, err) != 0)
        return -1;
    if (!chat_id_matches(*out, "", 1))
        return chat_msg_fail(c, suffix, err,
                             "must match ^[a-zA-Z0-9_-]+$, as the API holds tool ids to");
    return 0;
}

typedef enum {
    BLOCK_TEXT,
    BLOCK_IMAGE,
    BLOCK_DOCUMENT,
    BLOCK_TOOL_USE,
    BLOCK_TOOL_RESULT,
    BLOCK_THINKING
} block_kind;

static const struct {
    const char *type;
    block_kind kind;
    const char *fields; /* every member it may have, space-separated */
    const char *required;
} blocks[] = {
    {"text", BLOCK_TEXT, " type text cache_control citations ", " text "},
    {"image", BLOCK_IMAGE, " type source cache_control ", " source "},
    {"document", BLOCK_DOCUMENT, " type source title context citations cache_control ", " source "},
    {"tool_use", BLOCK_TOOL_USE, " type id name input cache_control ", " id name input "},
    {"tool_result", BLOCK_TOOL_RESULT, " type tool_use_id content is_error cache_control ",
     " tool_use_id "},
    {"thinking", BLOCK_THINKING, " type thinking signature ", " thinking signature "},
    {"redacted_thinking", BLOCK_THINKING, " type data ", " data "},
};
#define NBLOCKS (sizeof(blocks) / sizeof(blocks[0]))

/* The row of a block type, or NBLOCKS for a type compactd does not know. */
static size_t block_row(const char *type)
{
    size_t t = 0;
    while (t < NBLOCKS && strcmp(type, blocks[t].type) != 0)
        t++;
    return t;
}

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    /* Names are single words of the list: "", " type" or "type text" are
     * none of them. */
    if (n == 0 || strchr(name, ' '))
        return 0;
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if (p > list && p[-1] == ' ' && p[n] == ' ')
            return 1;
    return 0;
}

/* A tool_result's content: a string, or text, image and document blocks. */
static int read_result_content(chat_msg_ctx *c, const json_t *v, const char *suffix,
                               compactd_error *err)
{
    char sub[128], type_sub[160];
    chat_str s;
    if (json_is_string(v))
        return chat_msg_payload_text(c, v, suffix, err);
    if (!json_is_array(v))
        return chat_msg_fail(c, suffix, err,
                             "must be a string or an array of text and image blocks");
    for (size_t j = 0; j < json_array_size(v); j++) {
        json_t *b = json_array_get(v, j), *f;
        const char *name;
        chat_pathf(sub, sizeof(sub), "%s[%zu]", suffix, j);
        json_t *type = json_object_get(b, "type");
        const char *t = json_name(type) ? json_name(type) : "";
        int text = strcmp(t, "text") == 0, image = strcmp(t, "image") == 0;
        int document = strcmp(t, "document") == 0;
        if (!json_is_object(b) || !*t)
            return chat_msg_fail(c, sub, err, "must be a content block with a \"type\"");
        if (!text && !image && !document && block_row(t) < NBLOCKS) {
            /* A block of the turn itself, which the API's tool_result
             * content (text, image, document, search_result, ...) never
             * holds. */
            chat_path_join(type_sub, sizeof(type_sub), sub, ".", "type");
            return chat_msg_fail(c, type_sub, err,
                                 "a tool_result's content holds no tool_use, tool_result or "
                                 "thinking block");
        }
        if (!text && !image && !document) { /* a search result, ...: kept whole */
            c->m->protect = 1;
            if (chat_pass_block(c->in, c->m, b) != 0)
                return chat_out_of_memory(err);
            continue;
        }
        json_object_foreach(b, name, f)
        {
            char fsub[160];
            chat_path_join(fsub, sizeof(fsub), sub, ".", name);
            if (!listed(blocks[text ? 0 : image ? 1 : 2].fields, name)) {
                if (chat_pass_member(c->in, c->m, name, f) != 0)
                    return chat_out_of_memory(err);
                continue;
            }
            if (text && strcmp(name, "text") == 0) {
                if (nonempty_text(c, f, fsub, &s, err) != 0)
                    return -1;
                c->m->payload[c->m->n_payload++] = s;
            }
        }
        if (!json_object_get(b, text ? "text" : "source"))
            return chat_msg_fail(c, sub, err, text ? "must have \"text\"" : "must have \"source\"");
        if (!text && chat_anthropic_check_source(c, b, sub, err) != 0)
            return -1;
        if (image)
            chat_anthropic_price_image(c, b);
        if (document && chat_anthropic_price_document(c, b, sub, err) != 0)
            return -1;
    }
    return 0;
}

/* Whether b, a block kept whole, has the id its type needs: a
 * server_tool_use's is the API's own pattern ("String should match pattern
 * '^srvtoolu_[a-zA-Z0-9_]+$'"); other types compactd holds to none. */
static int whole_block_id_ok(const json_t *b)
{
    const json_t *id = json_object_get(b, "id");
    if (strcmp(json_string_value(json_object_get(b, "type")), "server_tool_use") != 0)
        return 1;
    return json_is_string(id) &&
           chat_id_matches((chat_str){json_string_value(id), json_string_length(id)}, "srvtoolu_",
                           0);
}

/* A block of a type compactd does not know: kept whole, priced by its
 * bytes, its message protected, since nothing says what it may lose. */
static int unknown_block(chat_msg_ctx *c, const json_t *b, const char *suffix, size_t *n_other,
                         compactd_error *err)
{
    if (!whole_block_id_ok(b)) {
        char sub[128];
        chat_path_join(sub, sizeof(sub), suffix, ".", "id");
        return chat_msg_fail(c, sub, err,
                             "must match ^srvtoolu_[a-zA-Z0-9_]+$, the API's pattern for a "
                             "server_tool_use id");
    }
    (*n_other)++;
    c->m->protect = 1;
    return chat_pass_block(c->in, c->m, b) == 0 ? 0 : chat_out_of_memory(err);
}

static int read_block(chat_msg_ctx *c, const json_t *b, size_t k, size_t *n_tools, size_t *n_other,
                      compactd_error *err)
{
    char suffix[64], sub[128];
    const char *name;
    json_t *f;
    chat_message *m = c->m;
    chat_pathf(suffix, sizeof(suffix), ".content[%zu]", k);
    if (!json_is_object(b))
        return chat_msg_fail(c, suffix, err, "must be a content block object");
    json_t *type = json_object_get(b, "type");
    size_t t = json_name(type) ? block_row(json_name(type)) : NBLOCKS;
    chat_pathf(sub, sizeof(sub), "%s.type", suffix);
    if (!json_name(type) || !*json_name(type))
        return chat_msg_fail(c, sub, err, "is required: the block's type, a non-empty string");
    if (t == NBLOCKS) /* server tool blocks, ...: kept whole, never edited */
        return unknown_block(c, b, suffix, n_other, err);
    block_kind kind = blocks[t].kind;
    if (m->role == ROLE_ASSISTANT && kind != BLOCK_TEXT && kind != BLOCK_TOOL_USE &&
        kind != BLOCK_THINKING)
        return chat_msg_fail(c, sub, err,
                             "an assistant turn holds text, tool_use and thinking blocks only");
    if (m->role == ROLE_USER && kind == BLOCK_THINKING)
        return chat_msg_fail(c, sub, err,
                             "a thinking block belongs to the assistant turn that "
                             "made it");
    if (m->role == ROLE_USER && kind == BLOCK_TOOL_USE)
        return chat_msg_fail(c, sub, err, "a user turn cannot hold a tool_use block");

    json_object_foreach((json_t *)b, name, f)
    {
        if (listed(blocks[t].fields, name) || kind == BLOCK_THINKING)
            continue; /* a thinking block is priced in read_thinking() */
        if (chat_pass_member(c->in, m, name, f) != 0)
            return chat_out_of_memory(err);
    }
    for (const char *r = blocks[t].required + 1; *r; r += strcspn(r, " ") + 1) {
        char req[32];
        size_t n = strcspn(r, " ");
        chat_pathf(req, sizeof(req), "%.*s", (int)n, r);
        if (!json_object_get(b, req)) {
            chat_path_join(sub, sizeof(sub), suffix, ".", req);
            return chat_msg_fail(c, sub, err, "is required");
        }
    }

    chat_str s;
    switch (kind) {
    case BLOCK_TEXT:
        (*n_other)++;
        if (nonempty_text(c, json_object_get(b, "text"), strcat(strcpy(sub, suffix), ".text"), &s,
                          err) != 0)
            return -1;
        m->payload[m->n_payload++] = s;
        return 0;
    case BLOCK_IMAGE:
    case BLOCK_DOCUMENT:
        (*n_other)++;
        if (chat_anthropic_check_source(c, b, suffix, err) != 0)
            return -1;
        if (kind == BLOCK_IMAGE) {
            chat_anthropic_price_image(c, b);
            return 0;
        }
        return chat_anthropic_price_document(c, b, suffix, err);
    case BLOCK_TOOL_USE: {
        chat_call *call = &m->calls[m->n_calls];
        json_t *input = json_object_get(b, "input");
        (*n_tools)++;
        if (tool_id(c, json_object_get(b, "id"), strcat(strcpy(sub, suffix), ".id"), &call->id,
                    err) != 0 ||
            nonempty_text(c, json_object_get(b, "name"), strcat(strcpy(sub, suffix), ".name"),
                          &call->name, err) != 0)
            return -1;
        if (!json_is_object(input))
            return chat_msg_fail(c, strcat(strcpy(sub, suffix), ".input"), err,
                                 "must be an object");
        if (chat_dump(c->in, input, &call->args) != 0)
            return chat_out_of_memory(err);
        m->kept[m->n_kept++] = call->id;
        m->kept[m->n_kept++] = call->name;
        m->payload[m->n_payload++] = call->args;
        c->in->where[c->index].call_at[m->n_calls++] = k;
        return 0;
    }
    case BLOCK_THINKING:
        return chat_anthropic_read_thinking(c, b, suffix, n_tools, n_other, err);
    case BLOCK_TOOL_RESULT: {
        json_t *err_flag = json_object_get(b, "is_error"), *content = json_object_get(b, "content");
        /* The API reads a turn's results before anything else in it. */
        if (*n_other > 0)
            return chat_msg_fail(c, suffix, err,
                                 "comes after a text, image or document block: a turn's "
                                 "tool_result blocks must come first");
        (*n_tools)++;
        if (tool_id(c, json_object_get(b, "tool_use_id"),
                    strcat(strcpy(sub, suffix), ".tool_use_id"), &s, err) != 0)
            return -1;
        if (err_flag && !json_is_boolean(err_flag))
            return chat_msg_fail(c, strcat(strcpy(sub, suffix), ".is_error"), err,
                                 "must be a boolean");
        if (content &&
            read_result_content(c, content, strcat(strcpy(sub, suffix), ".content"), err) != 0)
            return -1;
        m->kept[m->n_kept++] = s;
        m->answers[m->n_answers] = s;
        c->in->where[c->index].answer_at[m->n_answers++] = k;
        m->text_slots++;
        return 0;
    }
    }
    return 0;
}

/* Texts a block list can name: a text per block and per nested result
 * block, and for each tool_use its id and name. */
static size_t nested_blocks(const json_t *content)
{
    size_t n = 0;
    for (size_t k = 0; k < json_array_size(content); k++) {
        json_t *nested = json_object_get(json_array_get(content, k), "content");
        n += 1 + (json_is_array(nested) ? json_array_size(nested) : 1);
    }
    return n;
}

/* Whether block k of content is the text block whose text is payload p
 * and one of compactd's markers. */
static int marker_block(const json_t *content, size_t k, chat_str p)
{
    const json_t *b = json_array_get(content, k), *text = json_object_get(b, "text");
    return json_is_string(text) && json_string_value(text) == p.s &&
           strcmp(json_string_value(json_object_get(b, "type")), "text") == 0 &&
           chat_own_is_marker(p);
}

/* Markers compactd appended to a user turn (of tool results, or of text),
 * sent back, leave it the turn it was: the marker blocks it ends in, one
 * (markers appended to one turn are written in one block, one a line) or
 * more (as an older compactd wrote them), go from its payload to its tail,
 * joined one a line. Returns 0, or -1 when out of memory. */
static int read_tail(chat_input *in, chat_message *m, const json_t *content, compactd_error *err)
{
    size_t nb = json_array_size(content), k = 0, len = 0;
    while (m->role == ROLE_USER && k + 1 < m->n_payload && k < nb &&
           marker_block(content, nb - 1 - k, m->payload[m->n_payload - 1 - k]))
        len += m->payload[m->n_payload - 1 - k++].len + 1;
    m->tail_marker = (int)k;
    if (k <= 1) {
        if (k)
            m->tail = m->payload[--m->n_payload];
        return 0;
    }
    char *joined = chat_alloc(in, len);
    if (!joined)
        return chat_out_of_memory(err);
    m->tail = (chat_str){joined, len - 1};
    for (size_t j = m->n_payload - k; j < m->n_payload; j++) {
        memcpy(joined, m->payload[j].s, m->payload[j].len);
        joined += m->payload[j].len;
        *joined++ = '\n';
    }
    m->n_payload -= k;
    return 0;
}

static int read_message(chat_input *in, const json_t *v, size_t i, compactd_error *err)
{
    chat_msg_ctx c = {in, &in->req.m[i], i, ""};
    chat_message *m = c.m;
    const char *name;
    json_t *f;
    chat_pathf(c.path, sizeof(c.path), "$.messages[%zu]", i);
    if (!json_is_object(v))
        return chat_invalid(err, c.path, "must be a message object, not %s", json_type_name(v));
    size_t n_pass = 0;
    json_object_foreach((json_t *)v, name, f)
    {
        if (!listed(" role content ", name))
            n_pass++;
    }
    json_t *role = json_object_get(v, "role"), *content = json_object_get(v, "content");
    if (json_name(role) && strcmp(json_name(role), "user") == 0)
        m->role = ROLE_USER;
    else if (json_name(role) && strcmp(json_name(role), "assistant") == 0)
        m->role = ROLE_ASSISTANT;
    else if (json_name(role) && strcmp(json_name(role), "system") == 0)
        return chat_msg_fail(&c, ".role", err,
                             "must be \"user\" or \"assistant\": Anthropic has no system role, "
                             "its system prompt goes in the top-level \"system\" (the clients move "
                             "such messages there)");
    else
        return chat_msg_fail(&c, ".role", err, "must be \"user\" or \"assistant\"");
    if (!content)
        return chat_msg_fail(&c, ".content", err, "is required");

    size_t nb = json_is_array(content) ? json_array_size(content) : 1;
    size_t texts = json_is_array(content) ? nested_blocks(content) : 1;
    m->kept =
        chat_alloc(in, (1 + 2 * nb) * sizeof(chat_str)); /* role; ids and names, or thinking */
    m->payload = chat_alloc(in, (texts + chat_members_within(v, 5)) * sizeof(chat_str));
    m->calls = chat_alloc(in, nb * sizeof(chat_call));
    m->answers = chat_alloc(in, nb * sizeof(chat_str));
    in->where[i].call_at = chat_alloc(in, nb * sizeof(size_t));
    in->where[i].answer_at = chat_alloc(in, nb * sizeof(size_t));
    if (!m->kept || !m->payload || !m->calls || !m->answers || !in->where[i].call_at ||
        !in->where[i].answer_at || chat_message_json(in, i, v, &m->json) != 0)
        return chat_out_of_memory(err);
    const char *rname = chat_role_name(m->role);
    m->kept[m->n_kept++] = (chat_str){rname, strlen(rname)};
    json_object_foreach((json_t *)v, name, f)
    {
        if (n_pass && !listed(" role content ", name) && chat_pass_member(in, m, name, f) != 0)
            return chat_out_of_memory(err);
    }

    /* The final assistant turn is the reply the model would continue: it
     * alone may be empty, and it may not end in whitespace. */
    int final_reply = i + 1 == in->req.n && m->role == ROLE_ASSISTANT;
    if (json_is_string(content)) {
        chat_str s;
        if (chat_msg_text(&c, content, ".content", &s, err) != 0)
            return -1;
        if (s.len == 0 && !final_reply)
            return chat_msg_fail(&c, ".content", err,
                                 "must not be empty (only a final assistant turn may be)");
        if (final_reply && ends_in_space(s))
            return chat_msg_fail(&c, ".content", err,
                                 "ends in whitespace, which the final assistant turn may not");
        m->payload[m->n_payload++] = s;
        m->text_slots = 1;
    } else if (json_is_array(content) && nb > 0) {
        size_t n_tools = 0, n_other = 0;
        for (size_t k = 0; k < nb; k++)
            if (read_block(&c, json_array_get(content, k), k, &n_tools, &n_other, err) != 0)
                return -1;
        json_t *last = json_array_get(content, nb - 1);
        json_t *text = json_object_get(last, "text");
        if (final_reply && json_is_string(text) &&
            strcmp(json_string_value(json_object_get(last, "type")), "text") == 0 &&
            ends_in_space((chat_str){json_string_value(text), json_string_length(text)})) {
            char suffix[64];
            chat_pathf(suffix, sizeof(suffix), ".content[%zu].text", nb - 1);
            return chat_msg_fail(&c, suffix, err,
                                 "ends in whitespace, which the final assistant turn may not");
        }
        /* Every text, image and document block of a replaced form becomes
         * one text block; each tool block carries the text itself. */
        if (read_tail(in, m, content, err) != 0)
            return -1;
        n_other -= (size_t)m->tail_marker;
        m->text_slots += n_other ? 1 : 0;
        m->json_slots = m->n_calls;
        m->results_only = m->role == ROLE_USER && n_other == 0;
    } else {
        return chat_msg_fail(&c, ".content", err,
                             "must be a string or a non-empty array of blocks");
    }
    in->values[i] = (json_t *)v;
    return 0;
}

static int decode(chat_input *in, json_t *messages, compactd_error *err)
{
    if (chat_read_messages(in, messages, read_message, err) != 0)
        return -1;
    return chat_anthropic_place_thinking(in, messages, read_message, err);
}

static void item_path(const chat_input *in, size_t i, int is_call, size_t k, char *out, size_t size)
{
    const chat_where *w = &in->where[i];
    if (is_call)
        snprintf(out, size, "$.messages[%zu].content[%zu].id", i, w->call_at[k]);
    else
        snprintf(out, size, "$.messages[%zu].content[%zu].tool_use_id", i, w->answer_at[k]);
}

/* ---- Rendering ---- */

static void text_block(jw *w, const char *text, size_t len)
{
    jw_object_open(w);
    jw_member_cstring(w, "type", "text");
    jw_member_string(w, "text", text, len);
    jw_object_close(w);
}

/* The markers appended to a turn, in one text block, one a line: sent
 * back, the turn ends in one marker block, which read_tail() takes whole. */
static void extra_blocks(jw *w, const chat_marker *const *extra, size_t n_extra)
{
    if (n_extra == 1)
        text_block(w, extra[0]->text, extra[0]->len);
    if (n_extra <= 1)
        return;
    size_t len = 0;
    for (size_t k = 0; k < n_extra; k++)
        len += extra[k]->len + 1;
    char *joined = malloc(len), *p = joined;
    if (!joined) {
        w->oom = 1;
        return;
    }
    for (size_t k = 0; k < n_extra; k++) {
        memcpy(p, extra[k]->text, extra[k]->len);
        p += extra[k]->len;
        *p++ = '\n';
    }
    text_block(w, joined, len - 1);
    free(joined);
}

static void render_replaced(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                            const chat_marker *const *extra, size_t n_extra)
{
    const chat_message *m = &in->req.m[i];
    const json_t *content = json_object_get(in->values[i], "content");
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(m->role));
    jw_member(w, "content");
    if (json_is_string(content) && n_extra == 0) {
        jw_string(w, text, len);
        jw_object_close(w);
        return;
    }
    char *input = malloc(chat_carrier_room(len));
    size_t ilen = input ? chat_carrier_json(text, len, input) : 0;
    if (!input)
        w->oom = 1;
    int text_done = 0;
    jw_array_open(w);
    if (json_is_string(content))
        text_block(w, text, len);
    /* A marker the turn ended in is rendered again among the extras. */
    for (size_t k = 0; k + (size_t)m->tail_marker < json_array_size(content); k++) {
        const json_t *b = json_array_get(content, k);
        const char *type = json_string_value(json_object_get(b, "type"));
        if (strcmp(type, "tool_use") == 0) {
            const json_t *id = json_object_get(b, "id"), *name = json_object_get(b, "name");
            jw_object_open(w);
            jw_member_cstring(w, "type", "tool_use");
            jw_member_string(w, "id", json_string_value(id), json_string_length(id));
            jw_member_string(w, "name", json_string_value(name), json_string_length(name));
            jw_member(w, "input");
            jw_raw(w, input ? input : "{}", input ? ilen : 2);
            jw_object_close(w);
        } else if (strcmp(type, "tool_result") == 0) {
            const json_t *id = json_object_get(b, "tool_use_id");
            const json_t *is_error = json_object_get(b, "is_error");
            jw_object_open(w);
            jw_member_cstring(w, "type", "tool_result");
            jw_member_string(w, "tool_use_id", json_string_value(id), json_string_length(id));
            jw_member_string(w, "content", text, len);
            if (is_error) {
                jw_member(w, "is_error");
                jw_bool(w, json_is_true(is_error));
            }
            jw_object_close(w);
        } else if (!text_done) {
            text_block(w, text, len);
            text_done = 1;
        }
    }
    extra_blocks(w, extra, n_extra);
    jw_array_close(w);
    jw_object_close(w);
    free(input);
}

static void render_narration(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                             int calls)
{
    const chat_message *m = &in->req.m[i];
    const json_t *content = json_object_get(in->values[i], "content");
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(m->role));
    jw_member(w, "content");
    jw_array_open(w);
    if (text) {
        text_block(w, text, len); /* its prose, replaced */
        for (size_t k = 0; calls && k < m->n_calls; k++) {
            jw_object_open(w);
            jw_member_cstring(w, "type", "tool_use");
            jw_member_string(w, "id", m->calls[k].id.s, m->calls[k].id.len);
            jw_member_string(w, "name", m->calls[k].name.s, m->calls[k].name.len);
            jw_member(w, "input");
            jw_raw(w, m->calls[k].args.s, m->calls[k].args.len);
            jw_object_close(w);
        }
    } else {
        for (size_t k = 0; k < json_array_size(content); k++) {
            const json_t *b = json_array_get(content, k);
            if (strcmp(json_string_value(json_object_get(b, "type")), "tool_use") == 0)
                continue;
            char *s = json_dumps(b, JSON_COMPACT);
            if (!s) {
                w->oom = 1;
                break;
            }
            jw_raw(w, s, strlen(s));
            json_text_free(s);
        }
    }
    jw_array_close(w);
    jw_object_close(w);
}

static void render_appended(jw *w, const chat_input *in, size_t i, const chat_marker *const *extra,
                            size_t n_extra)
{
    const chat_message *m = &in->req.m[i];
    const json_t *content = json_object_get(in->values[i], "content");
    /* A marker the turn ended in is rendered again among the extras. */
    size_t nb = json_array_size(content) - (size_t)m->tail_marker;
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(m->role));
    jw_member(w, "content");
    jw_array_open(w);
    if (json_is_string(content)) {
        text_block(w, json_string_value(content), json_string_length(content));
    } else {
        for (size_t k = 0; k < nb; k++) {
            char *b = json_dumps(json_array_get(content, k), JSON_COMPACT);
            if (!b) {
                w->oom = 1;
                break;
            }
            jw_raw(w, b, strlen(b));
            json_text_free(b);
        }
    }
    extra_blocks(w, extra, n_extra);
    jw_array_close(w);
    jw_object_close(w);
}

/* Turns alternate from user; a marker is priced as the longer of the two
 * roles it may take; the next turn answers every tool_use of its caller.
 * Its tool_use ids are unique in the whole history (the API answers
 * "tool_use ids must be unique"). The input of a tool_use reaches the model
 * as a JSON value, not as a string. */
const chat_rules chat_anthropic_rules = {
    .alternating = 1,
    .marker_role = ROLE_ASSISTANT,
    .pairing = CHAT_PAIR_NEXT_MESSAGE,
    .result_role = ROLE_USER,
    .unique_call_ids = 1,
    .args_are_text = 0,
    /* The tool-use system prompt: the largest count Anthropic's tool-use
     * pricing table lists for any model and tool_choice (530, Claude 3 Opus
     * with auto; current models list 346 or fewer). */
    .tools_prompt_tokens = 530,
};

const chat_codec chat_anthropic_codec = {
    .format = &chat_format_anthropic,
    .rules = &chat_anthropic_rules,
    .system_member = "system",
    .decode = decode,
    .render_replaced = render_replaced,
    .render_appended = render_appended,
    .render_narration = render_narration,
    .render_marker = chat_render_role_marker,
    .opaque_texts = chat_anthropic_opaque_texts,
    .item_path = item_path,
};
