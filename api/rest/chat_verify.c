/* POST /v1/sessions/{session}/messages/verify: the truncation audit over a
 * chat history. Protected units are looked for in the texts the model
 * reads as text, never in a JSON dump of the messages (so that JSON
 * escaping can neither hide a unit nor fake one) nor in what it does not
 * read as text (ids, URLs, image data). */
#include "handlers.h"

#include "answers.h"
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

/* put_text() as the codecs' opaque_texts() call it. */
static void put_text_cb(void *t, const char *s, size_t len)
{
    put_text(t, s, len);
}

/* Every string value under v, as a tool reads the values of its
 * arguments. */
static void collect_strings(text_buf *t, const json_t *v)
{
    const char *name;
    json_t *m;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_STRING:
        put_text(t, json_string_value(v), json_string_length(v));
        break;
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, name, m)
        {
            collect_strings(t, m);
        }
        break;
    case JSON_ARRAY:
        json_array_foreach(v, i, m)
        {
            collect_strings(t, m);
        }
        break;
    default:
        break;
    }
}

/* A call's arguments: the strings in them, and where the format hands
 * them to the model as a string of JSON, that string too. Such a string is
 * a JSON text the body's shape guard did not see: it goes through the guard
 * first, against what the body left of the request's value count. 0, or -1
 * with err set (a refused text, at path: the message it is in). */
static int collect_args(chat_input *in, text_buf *t, chat_str args, const char *path,
                        compactd_error *err)
{
    if (in->req.rules->args_are_text) {
        int rc =
            json_shape_check(args.s, args.len, in->lim, SHAPE_DEPTH_CHAT, path, &in->budget, err);
        if (rc != 0)
            return -1;
        put_text(t, args.s, args.len);
    }
    json_t *v = json_loadb(args.s, args.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v && !json_is_string(v))
        collect_strings(t, v);
    json_decref(v);
    return 0;
}

/* What the model reads of message i as text: its texts, refusals, tool
 * results and call arguments (its payload, as the decoder found it), to
 * which the codec adds the text inside documents. Not role names, call
 * ids, tool names, image URLs or base64 data: a fact that only those carry
 * is not in the context. 0, or -1 with err set. */
static int collect_message(chat_input *in, text_buf *t, size_t i, compactd_error *err)
{
    const chat_message *m = &in->req.m[i];
    char path[ERROR_PATH_MAX];
    chat_pathf(path, sizeof(path), "$.messages[%zu]", i);
    size_t j = 0; /* the next call: the payload holds their args in call order */
    for (size_t k = 0; k < m->n_payload; k++) {
        const chat_str *p = &m->payload[k];
        if (j < m->n_calls && p->s == m->calls[j].args.s && p->len == m->calls[j].args.len) {
            if (collect_args(in, t, *p, path, err) != 0)
                return -1;
            j++;
        } else {
            put_text(t, p->s, p->len);
        }
    }
    if (m->opaque && in->codec->opaque_texts)
        in->codec->opaque_texts(in, i, put_text_cb, t);
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
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &err);
        goto done;
    }
    /* The body stays: each message's JSON is its bytes in it. */
    for (size_t k = 0; k < in.req.n_system; k++)
        put_text(&t, in.req.system[k].s, in.req.system[k].len);
    for (size_t i = 0; i < in.req.n; i++)
        if (collect_message(&in, &t, i, &err) != 0) {
            api_call_of(req)->facts.outcome = OUTCOME_INVALID;
            respond_error(res, &err);
            goto done;
        }
    into = repair_into(&in, &into_len);
    if (t.oom || !into) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        goto done;
    }
    v.context = t.buf ? t.buf : "";
    v.context_len = t.len;
    ops_scope s = api_scope(req);
    answer ans;
    run_verify(&s, &v, into, into_len, &api_call_of(req)->facts, &ans);
    respond_answer(res, &ans);
done:
    free(into);
    free(t.buf);
    verify_input_free(&v);
    chat_input_free(&in);
}
