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

/* Appends s[0..n) to out[*at..size - 1), cutting what does not fit. */
static void put(char *out, size_t size, size_t *at, const char *s, size_t n)
{
    size_t room = size - 1 - *at;
    if (n > room)
        n = room;
    memcpy(out + *at, s, n);
    *at += n;
}

/* Paths are built for every message and part a request holds, on the way
 * to an error that almost never comes: the three conversions they use
 * (%s, %.*s, %zu) are written here, which costs a fraction of vsnprintf's
 * general machinery. Any other conversion goes to vsnprintf. */
void chat_pathf(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (size == 0)
        return;
    va_start(ap, fmt);
    size_t at = 0;
    for (const char *f = fmt; *f; f++) {
        const char *pct = strchr(f, '%');
        size_t lit = pct ? (size_t)(pct - f) : strlen(f);
        put(out, size, &at, f, lit);
        if (!pct)
            break;
        f = pct + 1;
        if (f[0] == 's') {
            const char *a = va_arg(ap, const char *);
            put(out, size, &at, a, strlen(a));
        } else if (f[0] == '.' && f[1] == '*' && f[2] == 's') {
            int n = va_arg(ap, int);
            const char *a = va_arg(ap, const char *);
            put(out, size, &at, a, n > 0 ? strnlen(a, (size_t)n) : 0);
            f += 2;
        } else if (f[0] == 'z' && f[1] == 'u') {
            char digits[24], *d = digits + sizeof(digits);
            size_t v = va_arg(ap, size_t);
            do
                *--d = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            put(out, size, &at, d, (size_t)(digits + sizeof(digits) - d));
            f += 1;
        } else {
            va_end(ap);
            va_start(ap, fmt);
            vsnprintf(out, size, fmt, ap);
            va_end(ap);
            return;
        }
    }
    out[at] = '\0';
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
        json_text_free(in->dumps[i]);
    free(in->dumps);
    while (in->blocks) {
        chat_block *next = in->blocks->next;
        free(in->blocks);
        in->blocks = next;
    }
    json_region_release(in->doc);
    memset(in, 0, sizeof(*in));
}

/* ---- Ids ---- */

int chat_id_matches(chat_str s, const char *prefix, int dash)
{
    size_t n = strlen(prefix);
    if (s.len <= n || memcmp(s.s, prefix, n) != 0)
        return 0;
    for (size_t k = n; k < s.len; k++) {
        unsigned char ch = (unsigned char)s.s[k];
        if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') && !(ch >= '0' && ch <= '9') &&
            ch != '_' && !(dash && ch == '-'))
            return 0;
    }
    return 1;
}
