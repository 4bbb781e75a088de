/* How a Responses item renders in an answer: as sent, with its text
 * replaced (a summary, a pointer), or without its id where the reasoning
 * before it was not sent; and a loss marker as a developer message. For
 * chat_responses.c. */
#include "chat_responses_render.h"

#include "chat_price.h"

#include <stdlib.h>
#include <string.h>

static void raw_value(jw *w, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) {
        w->oom = 1;
        return;
    }
    jw_raw(w, s, strlen(s));
    json_text_free(s);
}

/* A message's replaced content: a string, or where the item is one the API
 * returned (it has an id, not taken away with its reasoning), the one part
 * of the kind it holds. */
static void replaced_content(jw *w, const json_t *v, const chat_message *m, const char *text,
                             size_t len, int unlinked)
{
    if (json_is_string(json_object_get(v, "content")) || !json_object_get(v, "id") || unlinked) {
        jw_string(w, text, len);
        return;
    }
    jw_array_open(w);
    jw_object_open(w);
    jw_member_cstring(w, "type", m->role == ROLE_ASSISTANT ? "output_text" : "input_text");
    jw_member_string(w, "text", text, len);
    if (m->role == ROLE_ASSISTANT) {
        jw_member(w, "annotations");
        jw_array_open(w);
        jw_array_close(w);
    }
    jw_object_close(w);
    jw_array_close(w);
}

/* The item as sent with the member that carries its text replaced: the
 * other members, known or not, are kept. Items with nowhere to carry a text
 * (reasoning, hosted calls, compaction) are priced as kept, and are. */
/* The item with its text replaced, without its id (and, a message, its
 * status) where unlinked. */
static void replaced_item(jw *w, const chat_input *in, size_t i, const char *text, size_t len,
                          int unlinked)
{
    const chat_message *m = &in->req.m[i];
    const json_t *v = in->values[i];
    const char *member = chat_responses_payload(v);
    if (!member) {
        jw_raw(w, m->json.s, m->json.len);
        return;
    }
    const char *key;
    const json_t *value;
    jw_object_open(w);
    json_object_foreach((json_t *)v, key, value)
    {
        if (unlinked && (strcmp(key, "id") == 0 ||
                         (chat_responses_is_message(v) && strcmp(key, "status") == 0)))
            continue;
        jw_member(w, key);
        if (strcmp(key, member) != 0) {
            raw_value(w, value);
        } else if (m->json_slots) {
            char *args = malloc(chat_carrier_room(len));
            if (!args) {
                w->oom = 1;
                break;
            }
            jw_string(w, args, chat_carrier_json(text, len, args));
            free(args);
        } else if (chat_responses_is_message(v)) {
            replaced_content(w, v, m, text, len, unlinked);
        } else {
            jw_string(w, text, len);
        }
    }
    jw_object_close(w);
}

void chat_responses_render_replaced(jw *w, const chat_input *in, size_t i, const char *text,
                                    size_t len, const chat_marker *const *extra, size_t n_extra)
{
    (void)extra;
    (void)n_extra;
    replaced_item(w, in, i, text, len, in->where[i].unlinked);
}

/* Narration whose reasoning went with the calls it led to (calls 0) is an
 * input message of its own: its one text (chat_message.one_text), or its
 * pointer, as its content, without its id. */
void chat_responses_render_narration(jw *w, const chat_input *in, size_t i, const char *text,
                                     size_t len, int calls)
{
    const chat_message *m = &in->req.m[i];
    if (calls || (!text && !json_object_get(in->values[i], "id"))) {
        if (text)
            replaced_item(w, in, i, text, len, in->where[i].unlinked);
        else
            jw_raw(w, m->json.s, m->json.len);
        return;
    }
    if (!text) {
        text = m->payload[0].s;
        len = m->payload[0].len;
    }
    replaced_item(w, in, i, text, len, 1);
}

void chat_responses_render_appended(jw *w, const chat_input *in, size_t i,
                                    const chat_marker *const *extra, size_t n_extra)
{
    (void)extra;
    (void)n_extra;
    jw_raw(w, in->req.m[i].json.s, in->req.m[i].json.len);
}

/* A loss marker: a developer message, which the API takes anywhere. */
void chat_responses_render_marker(jw *w, const chat_marker *mk)
{
    jw_object_open(w);
    jw_member_cstring(w, "type", "message");
    jw_member_cstring(w, "role", chat_role_name(mk->role));
    jw_member_string(w, "content", mk->text, mk->len);
    jw_object_close(w);
}
