/* Streaming JSON output with correct string escaping. */
#include "json_writer.h"

#include "json_escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(jw *w, size_t cap_hint)
{
    memset(w, 0, sizeof(*w));
    w->cap = cap_hint < 256 ? 256 : cap_hint;
    w->buf = malloc(w->cap);
    w->oom = w->buf == NULL;
    w->first[0] = 1;
}

char *jw_finish(jw *w, size_t *len)
{
    if (!w->oom && w->len == w->cap) {
        char *p = realloc(w->buf, w->cap + 1);
        if (!p)
            w->oom = 1;
        else
            w->buf = p;
    }
    if (w->oom) {
        free(w->buf);
        w->buf = NULL;
        return NULL;
    }
    w->buf[w->len] = '\0';
    *len = w->len;
    char *out = w->buf;
    w->buf = NULL;
    return out;
}

static int reserve(jw *w, size_t more)
{
    if (w->oom)
        return -1;
    if (w->len + more <= w->cap)
        return 0;
    size_t cap = w->cap;
    while (cap < w->len + more)
        cap *= 2;
    char *p = realloc(w->buf, cap);
    if (!p) {
        w->oom = 1;
        return -1;
    }
    w->buf = p;
    w->cap = cap;
    return 0;
}

static void put(jw *w, const char *s, size_t len)
{
    if (reserve(w, len) == 0) {
        memcpy(w->buf + w->len, s, len);
        w->len += len;
    }
}

/* Writes the comma that separates this value from the one before. */
static void separate(jw *w)
{
    if (w->first[w->depth])
        w->first[w->depth] = 0;
    else
        put(w, ",", 1);
}

static void value_prefix(jw *w);

static void open_container(jw *w, char c)
{
    value_prefix(w);
    put(w, &c, 1);
    if (w->depth + 1 < JW_MAX_DEPTH)
        w->depth++;
    else
        w->oom = 1; /* deeper than any document compactd writes */
    w->first[w->depth] = 1;
}

static void close_container(jw *w, char c)
{
    put(w, &c, 1);
    if (w->depth > 0)
        w->depth--;
}

void jw_object_open(jw *w)
{
    open_container(w, '{');
}

void jw_object_close(jw *w)
{
    close_container(w, '}');
}

void jw_array_open(jw *w)
{
    open_container(w, '[');
}

void jw_array_close(jw *w)
{
    close_container(w, ']');
}

static void put_escaped(jw *w, const char *s, size_t len)
{
    if (reserve(w, json_escape_room(len) + 2) != 0)
        return;
    char *o = w->buf + w->len;
    *o++ = '"';
    o += json_escape(s, len, o);
    *o++ = '"';
    w->len = (size_t)(o - w->buf);
}

void jw_member(jw *w, const char *name)
{
    separate(w);
    put_escaped(w, name, strlen(name));
    put(w, ":", 1);
    w->after_member = 1;
}

/* A value right after its member name takes no comma of its own. */
static void value_prefix(jw *w)
{
    if (w->after_member)
        w->after_member = 0;
    else
        separate(w);
}

void jw_string(jw *w, const char *s, size_t len)
{
    value_prefix(w);
    put_escaped(w, s, len);
}

void jw_cstring(jw *w, const char *s)
{
    jw_string(w, s, strlen(s));
}

void jw_int(jw *w, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%lld", (long long)v);
    value_prefix(w);
    put(w, num, (size_t)n);
}

void jw_double(jw *w, double v)
{
    char num[40];
    int n = snprintf(num, sizeof(num), "%.9g", v);
    value_prefix(w);
    put(w, num, (size_t)n);
}

void jw_bool(jw *w, int v)
{
    value_prefix(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_raw(jw *w, const char *json, size_t len)
{
    value_prefix(w);
    put(w, json, len);
}

void jw_members_raw(jw *w, const char *obj, size_t len)
{
    if (len < 2 || obj[0] != '{' || obj[len - 1] != '}') {
        w->oom = 1; /* not an object: refuse to write a broken document */
        return;
    }
    if (len == 2)
        return;
    separate(w);
    put(w, obj + 1, len - 2);
}

void jw_null(jw *w)
{
    value_prefix(w);
    put(w, "null", 4);
}

void jw_member_string(jw *w, const char *name, const char *s, size_t len)
{
    jw_member(w, name);
    jw_string(w, s, len);
}

void jw_member_cstring(jw *w, const char *name, const char *s)
{
    jw_member(w, name);
    jw_cstring(w, s);
}

void jw_member_int(jw *w, const char *name, int64_t v)
{
    jw_member(w, name);
    jw_int(w, v);
}
