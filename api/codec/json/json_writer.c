/* Streaming JSON output with correct string escaping. */
#include "json_writer.h"

#include "answer_account.h"
#include "json_escape.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(jw *w, size_t cap_hint)
{
    memset(w, 0, sizeof(*w));
    w->cap = cap_hint < 256 ? 256 : cap_hint;
    answer_refusal why = answer_take(w->cap);
    if (why != ANSWER_OK) {
        answer_refuse(why);
        w->cap = 0;
        w->oom = 1;
        return;
    }
    w->buf = malloc(w->cap);
    w->oom = w->buf == NULL;
    if (w->oom) {
        answer_give(w->cap);
        w->cap = 0;
    }
    w->first[0] = 1;
}

void jw_discard(jw *w)
{
    free(w->buf);
    answer_give(w->cap);
    w->buf = NULL;
    w->cap = w->len = 0;
    w->oom = 1;
}

/* The unused room a finished document may keep. */
#define SPARE_KEPT (64u << 10)

char *jw_finish(jw *w, size_t *len)
{
    if (!w->oom && w->len == w->cap && jw_try_reserve(w, 1) != 0)
        w->oom = 1;
    if (w->oom) {
        jw_discard(w);
        return NULL;
    }
    w->buf[w->len] = '\0';
    /* Room the doubling left unused goes back, so that an answer holds
     * what it is, not up to twice that, while later work is counted. */
    if (w->cap - w->len - 1 > SPARE_KEPT) {
        char *p = realloc(w->buf, w->len + 1);
        if (p) {
            answer_give(w->cap - w->len - 1);
            w->buf = p;
            w->cap = w->len + 1;
        }
    }
    *len = w->len;
    char *out = w->buf;
    w->buf = NULL;
    return out;
}

/* Grows the buffer to cap, taking the growth from the answer account:
 * ANSWER_OK, why the account refused, or -1 out of memory. */
static int grow_to(jw *w, size_t cap)
{
    answer_refusal why = answer_take(cap - w->cap);
    if (why != ANSWER_OK)
        return (int)why;
    char *p = realloc(w->buf, cap);
    if (!p) {
        answer_give(cap - w->cap);
        return -1;
    }
    w->buf = p;
    w->cap = cap;
    return 0;
}

int jw_try_reserve(jw *w, size_t more)
{
    if (w->oom)
        return -1;
    if (more > SIZE_MAX / 4 - w->len)
        return -1;
    size_t need = w->len + more;
    if (need <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need)
        cap *= 2;
    /* Doubling keeps appends linear; when the account cannot hold that
     * much, less spare room, then none, before refusing. */
    size_t tries[] = {cap, need + need / 4, need + (64u << 10), need};
    int why = ANSWER_OK;
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
        if (tries[i] < need || (i > 0 && tries[i] >= cap))
            continue;
        int r = grow_to(w, tries[i]);
        if (r == ANSWER_OK)
            return 0;
        if (r > 0)
            why = r;
    }
    /* Refused by the account, not out of memory: the caller is told why. */
    if (why != ANSWER_OK)
        answer_refuse((answer_refusal)why);
    return -1;
}

jw_mark jw_mark_here(const jw *w)
{
    jw_mark m = {w->len, w->depth, w->after_member, {0}};
    memcpy(m.first, w->first, sizeof(m.first));
    return m;
}

void jw_rewind(jw *w, const jw_mark *m)
{
    if (!w->buf)
        return;
    /* A growth that failed left the buffer as it was: what it holds up to
     * the mark is still the document. */
    w->oom = 0;
    w->len = m->len;
    w->depth = m->depth;
    w->after_member = m->after_member;
    memcpy(w->first, m->first, sizeof(w->first));
}

static int reserve(jw *w, size_t more)
{
    /* Most writes fit what is there: no call for them. */
    if (!w->oom && more <= w->cap - w->len)
        return 0;
    if (jw_try_reserve(w, more) == 0)
        return 0;
    w->oom = 1;
    return -1;
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
    /* Room for exactly what the escaped string takes, counted first: a
     * worst-case reservation (six bytes a byte) would charge the answer's
     * account six times a long text's size. */
    size_t clean = json_clean_prefix(s, len);
    if (clean == len) { /* most strings: nothing to escape */
        if (reserve(w, len + 2) != 0)
            return;
        char *o = w->buf + w->len;
        *o = '"';
        memcpy(o + 1, s, len);
        o[len + 1] = '"';
        w->len += len + 2;
        return;
    }
    size_t need = clean + json_escape_len(s + clean, len - clean) + 2;
    if (reserve(w, need) != 0)
        return;
    char *o = w->buf + w->len;
    *o++ = '"';
    memcpy(o, s, clean);
    o += clean;
    o += json_escape(s + clean, len - clean, o);
    *o++ = '"';
    assert((size_t)(o - w->buf) == w->len + need);
    w->len = (size_t)(o - w->buf);
}

/* Writes a name with nothing to escape, its comma, quotes and colon at
 * once. 0, or -1 when there is no room (the writer is then failed). */
static int member_plain(jw *w, const char *name, size_t len)
{
    if (reserve(w, len + 4) != 0)
        return -1;
    char *o = w->buf + w->len;
    if (w->first[w->depth])
        w->first[w->depth] = 0;
    else
        *o++ = ',';
    *o = '"';
    memcpy(o + 1, name, len);
    o[len + 1] = '"';
    o[len + 2] = ':';
    w->len = (size_t)(o + len + 3 - w->buf);
    w->after_member = 1;
    return 0;
}

/* Not asserted: asserts stay on in every build, and the scan is what this
 * saves. A literal holding a quote, a backslash or a control byte would go
 * out as it is; compactd's names are plain identifiers. */
void jw_member_plain(jw *w, const char *name, size_t len)
{
    member_plain(w, name, len);
}

void jw_member_n(jw *w, const char *name, size_t len)
{
    /* A name with nothing to escape (every name compactd writes) goes in
     * at once. */
    if (json_clean_prefix(name, len) == len && member_plain(w, name, len) == 0)
        return;
    separate(w);
    put_escaped(w, name, len);
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
    /* Digits from the right, without printf: answers write an integer or
     * more for every unit and message. The magnitude is taken unsigned, so
     * INT64_MIN has one too. */
    char num[24], *d = num + sizeof(num);
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--d = (char)('0' + m % 10);
    while ((m /= 10) != 0);
    if (v < 0)
        *--d = '-';
    value_prefix(w);
    put(w, d, (size_t)(num + sizeof(num) - d));
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

void jw_append(jw *w, const char *s, size_t len)
{
    put(w, s, len);
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
