/* POST /v1/sessions/{session}/messages/verify: the truncation audit over a
 * chat history. Protected units are looked for in the messages' texts as
 * the model reads them, never in a JSON dump of the messages, so that JSON
 * escaping can neither hide a unit nor fake one. */
#include "audit.h"
#include "chat_codec.h"
#include "json_writer.h"

#include <stdlib.h>
#include <string.h>

/* Separates texts in the audited context: no UTF-8 text holds the byte
 * 0xff, so no unit (UTF-8 itself) can be found across two texts. */
#define TEXT_SEPARATOR '\xff'

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} text_buf;

static void put_text(text_buf *t, const char *s, size_t len)
{
    if (t->oom)
        return;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + len + 1)
            cap *= 2;
        char *p = realloc(t->buf, cap);
        if (!p) {
            t->oom = 1;
            return;
        }
        t->buf = p;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, len);
    t->len += len;
    t->buf[t->len++] = TEXT_SEPARATOR;
}

/* Every string value under v; tool-call arguments (a string holding JSON)
 * also by the strings in it, as the tool would read them. Each such text
 * goes through the shape guard first, against what the request's body left
 * of its value count. 0, or -1 with err set (a refused text, at path: the
 * message it is in). */
static int collect(chat_input *in, text_buf *t, const json_t *v, const char *member,
                   const char *path, compactd_error *err)
{
    const char *name;
    json_t *m;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_STRING:
        put_text(t, json_string_value(v), json_string_length(v));
        if (member && strcmp(member, "arguments") == 0) {
            if (json_shape_check(json_string_value(v), json_string_length(v), in->lim,
                                 SHAPE_DEPTH_CHAT, path, &in->budget, err) != 0)
                return -1;
            json_t *args = json_loadb(json_string_value(v), json_string_length(v),
                                      JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            int rc = args && !json_is_string(args) ? collect(in, t, args, NULL, path, err) : 0;
            json_decref(args);
            return rc;
        }
        break;
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, name, m)
        {
            if (collect(in, t, m, name, path, err) != 0)
                return -1;
        }
        break;
    case JSON_ARRAY:
        json_array_foreach(v, i, m)
        {
            if (collect(in, t, m, NULL, path, err) != 0)
                return -1;
        }
        break;
    default:
        break;
    }
    return 0;
}

/* Where restored units go: text blocks at the end of the last user message
 * (every format takes text there, after any tool results). */
static char *repair_into(const chat_input *in, size_t *len)
{
    size_t at = in->req.n;
    for (size_t i = in->req.n; i-- > 0;)
        if (in->req.m[i].role == ROLE_USER) {
            at = i;
            break;
        }
    jw w;
    jw_init(&w, 128);
    jw_object_open(&w);
    jw_member(&w, "repair_into");
    jw_object_open(&w);
    if (at < in->req.n) {
        jw_member_int(&w, "message", (int64_t)at);
        jw_member_cstring(&w, "as", "text_blocks_at_end");
    } else {
        jw_member_int(&w, "message", (int64_t)in->req.n);
        jw_member_cstring(&w, "as", "new_user_message");
    }
    jw_object_close(&w);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

void handle_messages_verify(const app *a, api_request *req, api_response *res)
{
    chat_input in;
    verify_input v;
    compactd_error err = {0};
    text_buf t = {0};
    size_t into_len = 0;
    char *into = NULL;

    if (chat_decode_verify(req->body, req->body_len, &a->cfg->limits, &in, &v, &err) != 0) {
        req->facts.outcome = "invalid";
        respond_error(res, &err);
        goto done;
    }
    /* The body stays: each message's JSON is its bytes in it. */
    if (in.system && collect(&in, &t, in.system, NULL, "$.system", &err) != 0)
        goto refused;
    for (size_t i = 0; i < in.req.n; i++) {
        char path[ERROR_PATH_MAX];
        chat_pathf(path, sizeof(path), "$.messages[%zu]", i);
        if (collect(&in, &t, in.values[i], NULL, path, &err) != 0)
            goto refused;
    }
    into = repair_into(&in, &into_len);
    if (t.oom || !into) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        goto done;
    }
    v.context = t.buf ? t.buf : "";
    v.context_len = t.len;
    respond_audit(req, res, &v, into, into_len);
    goto done;
refused:
    req->facts.outcome = "invalid";
    respond_error(res, &err);
done:
    free(into);
    free(t.buf);
    verify_input_free(&v);
    chat_input_free(&in);
}
