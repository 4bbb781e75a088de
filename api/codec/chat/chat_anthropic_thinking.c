/* Anthropic thinking blocks: read and priced (the text by the tokenizer,
 * the signature or data by the bound of encrypted state), then placed by
 * Anthropic's rules once the whole history is read: the tool-use loop in
 * flight's pinned, a finished turn's taken from it. See chat_anthropic_thinking.h. */
#include "chat_anthropic_thinking.h"

#include "chat_own.h"
#include "chat_passthrough.h"
#include "chat_price.h"

#include <string.h>

/* The members of a thinking block compactd reads (or of a redacted one). */
static int own_member(const char *name, int redacted)
{
    if (strcmp(name, "type") == 0)
        return 1;
    if (redacted)
        return strcmp(name, "data") == 0;
    return strcmp(name, "thinking") == 0 || strcmp(name, "signature") == 0;
}

/* thinking (its text and signature) and redacted_thinking (its data):
 * opaque and atomic, never edited. They open their turn: the API answers a
 * turn whose thinking follows its text or tool_use. Priced by what the
 * model reads: the thinking text by the tokenizer (a kept text, not prose),
 * the signature or data by the bound of encrypted state (chat_price.h),
 * any other member as its text. */
int chat_anthropic_read_thinking(chat_msg_ctx *c, const json_t *b, const char *suffix,
                                 size_t *n_tools, size_t *n_other, compactd_error *err)
{
    char sub[128];
    int redacted = strcmp(json_string_value(json_object_get(b, "type")), "redacted_thinking") == 0;
    static const char *const thinking_members[] = {"thinking", "signature"};
    static const char *const redacted_members[] = {"data"};
    const char *const *need = redacted ? redacted_members : thinking_members;
    for (size_t j = 0; j < (redacted ? 1u : 2u); j++) {
        const json_t *s = json_object_get(b, need[j]);
        chat_path_join(sub, sizeof(sub), suffix, ".", need[j]);
        if (!json_is_string(s))
            return chat_msg_fail(c, sub, err, "must be a string, as the API returned it");
        if (j == 1 && json_string_length(s) == 0)
            return chat_msg_fail(c, sub, err,
                                 "must not be empty: a thinking block is sent back "
                                 "with the signature the API gave it");
    }
    if (*n_tools + *n_other > (size_t)c->m->thinking)
        return chat_msg_fail(c, suffix, err,
                             "comes after a text or tool_use block: a turn's thinking blocks "
                             "come first, in the order the API returned them");
    (*n_other)++;
    c->m->thinking++;
    const json_t *sealed = json_object_get(b, redacted ? "data" : "signature");
    c->m->bound_tokens += chat_encrypted_tokens(json_string_length(sealed));
    if (!redacted) {
        const json_t *text = json_object_get(b, "thinking");
        c->m->kept[c->m->n_kept++] = (chat_str){json_string_value(text), json_string_length(text)};
    }
    const char *name;
    json_t *f;
    json_object_foreach((json_t *)b, name, f)
    {
        if (!own_member(name, redacted) && chat_pass_member(c->in, c->m, name, f) != 0)
            return chat_out_of_memory(err);
    }
    return 0;
}

/* Whether m is a user turn that speaks: neither tool results alone nor a
 * loss marker compactd wrote (an answer sent back), which ends no loop. */
static int real_user_turn(const chat_message *m)
{
    return m->role == ROLE_USER && !m->results_only && chat_own_kind_of(m) != CHAT_OWN_MARKER;
}

/* The first message of the turn in flight: the one after the last real user
 * turn (0 when there is none). */
static size_t turn_in_flight(const chat_request *req)
{
    size_t i = req->n;
    while (i > 0 && !real_user_turn(&req->m[i - 1]))
        i--;
    return i;
}

/* An assistant turn of a finished turn, read again without its thinking
 * blocks (which open it): the API strips them from the context unread, so
 * the turn is sent, spilled and priced without them. A turn of thinking
 * alone is left whole and marked stale: it goes, as redundant. */
static int strip_thinking(chat_input *in, json_t *messages, size_t i, chat_read_message_fn read,
                          compactd_error *err)
{
    chat_message *m = &in->req.m[i];
    json_t *v = json_array_get(messages, i), *content = json_object_get(v, "content");
    size_t n = (size_t)m->thinking;
    if (n >= json_array_size(content)) {
        m->stale = 1;
        return 0;
    }
    chat_str sent = m->json;
    for (size_t k = 0; k < n; k++)
        if (json_array_remove(content, 0) != 0)
            return chat_out_of_memory(err);
    memset(m, 0, sizeof(*m));
    if (read(in, v, i, err) != 0)
        return -1;
    /* Not the request's bytes any more: the turn as it now is. */
    if (chat_dump(in, v, &m->json) != 0)
        return chat_out_of_memory(err);
    m->sent = sent;
    m->thinking_dropped = (int)n;
    /* Error paths name the blocks where they were sent. */
    for (size_t k = 0; k < m->n_calls; k++)
        in->where[i].call_at[k] += n;
    return 0;
}

/* Thinking follows Anthropic's rules (docs/chat.md): that of the turns
 * before the last real user turn is dropped; that of the tool-use loop in
 * flight is needed back as sent, so pinned. */
int chat_anthropic_place_thinking(chat_input *in, json_t *messages, chat_read_message_fn read,
                                  compactd_error *err)
{
    chat_request *req = &in->req;
    size_t flight = turn_in_flight(req);
    for (size_t i = 0; i < req->n; i++) {
        if (!req->m[i].thinking)
            continue;
        if (i >= flight)
            req->m[i].pinned = req->sealed = 1; /* sent as it is, its bound priced */
        else if (strip_thinking(in, messages, i, read, err) != 0)
            return -1;
    }
    return 0;
}
