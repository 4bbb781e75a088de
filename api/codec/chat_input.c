/* What every reader of a chat request shares: the input's bump allocator
 * and its freeing, the error paths and messages, and the readers of one
 * message's text and of the message array. See chat_codec.h. */
#include "chat_codec.h"
#include "json_fields.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Memory ---- */

/* A bump allocator over blocks of at least CHAT_BLOCK_BYTES: a history's
 * many small arrays cost a pointer increment each, and are freed at once. */
#define CHAT_BLOCK_BYTES 65536

struct chat_block {
    struct chat_block *next;
    size_t used, cap;
    max_align_t data[];
};

void *chat_alloc(chat_input *in, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    chat_block *b = in->blocks;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > CHAT_BLOCK_BYTES ? size : CHAT_BLOCK_BYTES;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->next = in->blocks;
        b->used = 0;
        b->cap = cap;
        in->blocks = b;
    }
    char *p = (char *)b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

const char *chat_path_copy(chat_input *in, const char *path)
{
    char *p = chat_alloc(in, strlen(path) + 1);
    if (p)
        strcpy(p, path);
    return p;
}

/* ---- Errors ---- */

void chat_pathf(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

void chat_path_join(char *out, size_t size, const char *a, const char *sep, const char *b)
{
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    if (size == 0)
        return;
    if (la + ls + lb >= size) { /* cut: only an error message gets shorter */
        chat_pathf(out, size, "%s%s%s", a, sep, b);
        return;
    }
    memcpy(out, a, la);
    memcpy(out + la, sep, ls);
    memcpy(out + la + ls, b, lb + 1);
}

int chat_invalid(compactd_error *err, const char *path, const char *fmt, ...)
{
    char message[sizeof(err->message)];
    va_list ap;
    if (!err)
        return -1;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return field_invalid(err, path, "%s", message);
}

int chat_out_of_memory(compactd_error *err)
{
    return error_set(err, ERR_INTERNAL, "out of memory decoding the messages");
}

int chat_msg_fail(chat_msg_ctx *c, const char *suffix, compactd_error *err, const char *message)
{
    char path[ERROR_PATH_MAX];
    chat_path_join(path, sizeof(path), c->path, "", suffix);
    return chat_invalid(err, path, "%s", message);
}

int chat_msg_text(chat_msg_ctx *c, const json_t *v, const char *suffix, chat_str *out,
                  compactd_error *err)
{
    if (json_is_string(v) && json_string_length(v) <= c->in->lim->max_text_bytes) {
        *out = (chat_str){json_string_value(v), json_string_length(v)};
        return 0;
    }
    char path[ERROR_PATH_MAX];
    chat_path_join(path, sizeof(path), c->path, "", suffix);
    return chat_text(c->in, v, path, out, err);
}

int chat_msg_payload_text(chat_msg_ctx *c, const json_t *v, const char *suffix, compactd_error *err)
{
    chat_str s;
    if (chat_msg_text(c, v, suffix, &s, err) != 0)
        return -1;
    c->m->payload[c->m->n_payload++] = s;
    return 0;
}

int chat_read_messages(chat_input *in, json_t *messages, chat_read_message_fn read,
                       compactd_error *err)
{
    size_t n = json_array_size(messages);
    in->req.n = n;
    in->req.m = chat_alloc(in, n * sizeof(chat_message));
    in->values = chat_alloc(in, n * sizeof(json_t *));
    in->where = chat_alloc(in, n * sizeof(chat_where));
    if (!in->req.m || !in->values || !in->where)
        return chat_out_of_memory(err);
    for (size_t i = 0; i < n; i++)
        if (read(in, json_array_get(messages, i), i, err) != 0)
            return -1;
    return 0;
}

int chat_text(const chat_input *in, const json_t *v, const char *path, chat_str *out,
              compactd_error *err)
{
    field_ref at = {NULL, NULL, 0, path};
    return field_read_string(v, &at, 0, in->lim->max_text_bytes, "COMPACTD_MAX_TEXT_BYTES", &out->s,
                             &out->len, err);
}

void chat_input_free(chat_input *in)
{
    for (size_t i = 0; i < in->n_dumps; i++)
        free(in->dumps[i]);
    free(in->dumps);
    while (in->blocks) {
        chat_block *next = in->blocks->next;
        free(in->blocks);
        in->blocks = next;
    }
    if (in->doc)
        json_decref(in->doc);
    memset(in, 0, sizeof(*in));
}
