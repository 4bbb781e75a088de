/* Anthropic's cache_control breakpoints through compaction. See
 * chat_cache.h. */
#include "chat_cache.h"

#include <stdlib.h>
#include <string.h>

/* ---- Reading ---- */

static int is_anthropic(const chat_input *in)
{
    return in->codec->format == &chat_format_anthropic;
}

int chat_cache_wanted(const chat_input *in)
{
    return is_anthropic(in) && (in->cache.n > 0 || in->cache.prefix);
}

/* Counts one breakpoint at path; refuses the fifth and a value that is not
 * an object. */
static int count_one(const json_t *cc, size_t *total, const char *path, compactd_error *err)
{
    if (!json_is_object(cc))
        return chat_invalid(err, path, "must be an object such as {\"type\": \"ephemeral\"}");
    if (++*total > CHAT_CACHE_BREAKPOINTS_MAX)
        return chat_invalid(err, path,
                            "is a breakpoint over Anthropic's limit of %d blocks with "
                            "cache_control in one request (tools, system and messages together)",
                            CHAT_CACHE_BREAKPOINTS_MAX);
    return 0;
}

/* The breakpoints of the tool definitions and the system blocks: kept as
 * sent, counted. */
static int read_outside(chat_input *in, size_t *total, compactd_error *err)
{
    static const char *const members[] = {"tools", "system"};
    char path[ERROR_PATH_MAX];
    for (size_t m = 0; m < 2; m++) {
        const json_t *arr = json_object_get(in->doc, members[m]);
        for (size_t k = 0; json_is_array(arr) && k < json_array_size(arr); k++) {
            const json_t *cc = json_object_get(json_array_get(arr, k), "cache_control");
            if (!cc)
                continue;
            chat_pathf(path, sizeof(path), "$.%s[%zu].cache_control", members[m], k);
            if (count_one(cc, total, path, err) != 0)
                return -1;
            in->cache.outside++;
        }
    }
    return 0;
}

/* Counts a breakpoint of message i's block k (nested: on a block inside
 * it) and, with marks, keeps it. Returns 0 or -1. */
static int mark_one(chat_input *in, size_t i, size_t k, int nested, const json_t *cc,
                    const char *path, size_t *total, chat_cache_mark *marks, compactd_error *err)
{
    if (count_one(cc, total, path, err) != 0)
        return -1;
    if (marks)
        marks[in->cache.n] = (chat_cache_mark){i, k, nested, cc};
    in->cache.n++;
    return 0;
}

/* Reads (marks non-NULL) or counts the breakpoints of message i's blocks
 * and of the blocks inside a tool_result's content. Returns 0 or -1. */
static int read_message(chat_input *in, size_t i, size_t *total, chat_cache_mark *marks,
                        compactd_error *err)
{
    const json_t *content = json_object_get(in->values[i], "content");
    size_t shift = (size_t)in->req.m[i].thinking_dropped; /* the blocks as sent */
    char path[ERROR_PATH_MAX];
    for (size_t k = 0; json_is_array(content) && k < json_array_size(content); k++) {
        const json_t *b = json_array_get(content, k), *cc = json_object_get(b, "cache_control");
        if (cc) {
            chat_pathf(path, sizeof(path), "$.messages[%zu].content[%zu].cache_control", i,
                       k + shift);
            if (mark_one(in, i, k, 0, cc, path, total, marks, err) != 0)
                return -1;
        }
        const json_t *inner = json_object_get(b, "content");
        for (size_t j = 0; json_is_array(inner) && j < json_array_size(inner); j++) {
            if (!(cc = json_object_get(json_array_get(inner, j), "cache_control")))
                continue;
            chat_pathf(path, sizeof(path),
                       "$.messages[%zu].content[%zu].content[%zu].cache_control", i, k + shift, j);
            if (mark_one(in, i, k, 1, cc, path, total, marks, err) != 0)
                return -1;
        }
    }
    return 0;
}

int chat_cache_read(chat_input *in, compactd_error *err)
{
    size_t total = 0;
    if (!is_anthropic(in))
        return 0;
    if (read_outside(in, &total, err) != 0)
        return -1;
    size_t outside = total;
    for (size_t i = 0; i < in->req.n; i++)
        if (read_message(in, i, &total, NULL, err) != 0)
            return -1;
    if (in->cache.n == 0)
        return 0;
    chat_cache_mark *marks = chat_alloc(in, in->cache.n * sizeof(*marks));
    if (!marks)
        return chat_out_of_memory(err);
    in->cache.n = 0;
    total = outside;
    for (size_t i = 0; i < in->req.n; i++)
        read_message(in, i, &total, marks, err);
    in->cache.marks = marks;
    return 0;
}

/* ---- Placing ---- */

static const char *type_of(const json_t *block)
{
    const char *t = json_string_value(json_object_get(block, "type"));
    return t ? t : "";
}

/* The API takes cache_control on any block but thinking. */
static int cacheable(const json_t *block)
{
    const char *t = type_of(block);
    return strcmp(t, "thinking") != 0 && strcmp(t, "redacted_thinking") != 0;
}

/* The content array of an answer's message, a string content made one text
 * block (the same to the API) so that a block can carry a breakpoint. NULL
 * when out of memory. */
static json_t *blocks_of(json_t *msg)
{
    json_t *c = json_object_get(msg, "content");
    if (json_is_array(c))
        return c;
    json_t *b = json_object();
    if (!b || json_object_set_new(b, "type", json_string("text")) != 0 ||
        json_object_set(b, "text", c) != 0) {
        json_decref(b);
        return NULL;
    }
    json_t *arr = json_array();
    /* Both steal their reference, also when they fail. */
    if (!arr || json_array_append_new(arr, b) != 0) {
        if (!arr)
            json_decref(b);
        json_decref(arr);
        return NULL;
    }
    return json_object_set_new(msg, "content", arr) == 0 ? arr : NULL;
}

/* The index of the block of out of type `type` whose member `key` equals
 * that of in, or SIZE_MAX. */
static size_t same_block(const json_t *out, const char *type, const char *key, const json_t *in)
{
    const json_t *want = json_object_get(in, key);
    for (size_t k = 0; k < json_array_size(out); k++) {
        const json_t *b = json_array_get(out, k);
        if (strcmp(type_of(b), type) == 0 && json_equal(json_object_get(b, key), want))
            return k;
    }
    return SIZE_MAX;
}

/* Where block k of message i is in its rendering out (a content array), or
 * the nearest block before it there; SIZE_MAX when none. A preserved
 * message keeps its blocks (narration without its tool_use blocks); a
 * replaced one keeps its calls and results, and one text block stands for
 * the rest. */
static size_t block_in(const chat_input *in, const chat_plan *p, size_t i, size_t k,
                       const json_t *out)
{
    const json_t *content = json_object_get(in->values[i], "content");
    const json_t *b = json_array_get(content, k);
    const char *t = type_of(b);
    size_t last = json_array_size(content) - 1;
    if (strcmp(t, "tool_use") == 0 || strcmp(t, "tool_result") == 0) {
        size_t at = t[5] == 'u' ? same_block(out, "tool_use", "id", b)
                                : same_block(out, "tool_result", "tool_use_id", b);
        if (at != SIZE_MAX || k == 0)
            return at;
        return block_in(in, p, i, k - 1, out); /* a call that went: the block before it */
    }
    if (in->req.m[i].tail_marker && k == last) /* compactd's marker, appended again last */
        return json_array_size(out) - 1;
    if (p->c.plan.entries[i].decision != DECISION_PRESERVED) {
        for (size_t j = 0; j < json_array_size(out); j++)
            if (strcmp(type_of(json_array_get(out, j)), "text") == 0)
                return j;
        return SIZE_MAX;
    }
    size_t calls_before = 0; /* narration is rendered without its tool_use blocks */
    for (size_t j = 0; chat_plan_calls_dropped(p, i) && j < k; j++)
        calls_before += strcmp(type_of(json_array_get(content, j)), "tool_use") == 0;
    return k - calls_before;
}

/* The last block that takes a breakpoint in item o of arr or an item before
 * it: *o and its index, or 0 when there is none. */
static int last_cacheable(json_t *arr, size_t *o, size_t *block)
{
    for (size_t at = *o + 1; at-- > 0;) {
        json_t *blocks = blocks_of(json_array_get(arr, at));
        for (size_t k = json_array_size(blocks); blocks && k-- > 0;)
            if (cacheable(json_array_get(blocks, k))) {
                *o = at;
                *block = k;
                return 1;
            }
    }
    return 0;
}

/* Puts value on block k of item o unless a breakpoint is there already. */
static int put(json_t *arr, size_t o, size_t k, const json_t *value)
{
    json_t *b = json_array_get(json_object_get(json_array_get(arr, o), "content"), k);
    if (!b || json_object_get(b, "cache_control"))
        return 0;
    return json_object_set_new(b, "cache_control", json_deep_copy(value));
}

/* Blocks of arr with a breakpoint, on them or inside them. */
static size_t marked(const json_t *arr)
{
    size_t n = 0;
    for (size_t o = 0; o < json_array_size(arr); o++) {
        const json_t *c = json_object_get(json_array_get(arr, o), "content");
        for (size_t k = 0; json_is_array(c) && k < json_array_size(c); k++) {
            const json_t *b = json_array_get(c, k), *inner = json_object_get(b, "content");
            n += json_object_get(b, "cache_control") != NULL;
            for (size_t j = 0; json_is_array(inner) && j < json_array_size(inner); j++)
                n += json_object_get(json_array_get(inner, j), "cache_control") != NULL;
        }
    }
    return n;
}

/* Where mark m goes: its message's block, or the nearest kept block before
 * it. */
static chat_cache_where place_mark(const chat_input *in, const chat_plan *p,
                                   const chat_cache_mark *m, json_t *arr, const size_t *keys,
                                   size_t nkeys)
{
    chat_cache_where w = {m->msg, m->block + (size_t)in->req.m[m->msg].thinking_dropped,
                          SIZE_MAX, SIZE_MAX};
    size_t o = 0;
    while (o < nkeys && keys[o] < 2 * m->msg + 1)
        o++;
    size_t k = SIZE_MAX;
    if (o < nkeys && keys[o] == 2 * m->msg + 1) { /* kept, in some form */
        json_t *blocks = blocks_of(json_array_get(arr, o));
        k = blocks ? block_in(in, p, m->msg, m->block, blocks) : SIZE_MAX;
        if (k != SIZE_MAX && m->nested && p->c.plan.entries[m->msg].decision == DECISION_PRESERVED)
            return (chat_cache_where){w.from_msg, w.from_block, o, k}; /* inside it, as sent */
    }
    if (k == SIZE_MAX && (o == 0 || (o--, !last_cacheable(arr, &o, &k))))
        return w; /* nothing kept before it */
    if (put(arr, o, k, m->value) != 0)
        return w;
    w.to_msg = o;
    w.to_block = k;
    return w;
}

int chat_cache_place(const chat_input *in, const chat_plan *p, const char *out, size_t len,
                     jw *w, chat_cache_placed *placed)
{
    json_error_t e;
    json_t *arr = json_loadb(out, len, 0, &e);
    size_t *keys = malloc((in->req.n + p->n_markers + 1) * sizeof(*keys));
    placed->n = 0;
    placed->w = malloc((in->cache.n + 1) * sizeof(*placed->w));
    if (!arr || !keys || !placed->w) {
        json_decref(arr);
        free(keys);
        free(placed->w);
        placed->w = NULL;
        return -1;
    }
    size_t nkeys = chat_output_keys(in, p, keys);
    for (size_t m = 0; m < in->cache.n; m++)
        placed->w[placed->n++] = place_mark(in, p, &in->cache.marks[m], arr, keys, nkeys);
    if (in->cache.prefix) {
        /* One more at the end, while the limit leaves room for it. */
        chat_cache_where at = {SIZE_MAX, SIZE_MAX, nkeys - 1, SIZE_MAX};
        static const char ephemeral[] = "{\"type\":\"ephemeral\"}";
        json_t *value = json_loads(ephemeral, 0, &e);
        if (in->cache.outside + marked(arr) < CHAT_CACHE_BREAKPOINTS_MAX &&
            last_cacheable(arr, &at.to_msg, &at.to_block) &&
            put(arr, at.to_msg, at.to_block, value) != 0)
            at.to_msg = SIZE_MAX;
        if (at.to_block == SIZE_MAX)
            at.to_msg = SIZE_MAX;
        json_decref(value);
        placed->w[placed->n++] = at;
    }
    char *s = json_dumps(arr, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s)
        jw_raw(w, s, strlen(s));
    else
        w->oom = 1;
    json_text_free(s);
    json_decref(arr);
    free(keys);
    return 0;
}

static void where(jw *w, const char *name, size_t a, size_t b, const char *an, const char *bn)
{
    jw_member(w, name);
    if (a == SIZE_MAX) {
        jw_null(w);
        return;
    }
    jw_object_open(w);
    jw_member_int(w, an, (int64_t)a);
    jw_member_int(w, bn, (int64_t)b);
    jw_object_close(w);
}

void chat_cache_report(jw *w, chat_cache_placed *placed)
{
    jw_member(w, "cache_breakpoints");
    jw_array_open(w);
    for (size_t k = 0; k < placed->n; k++) {
        const chat_cache_where *at = &placed->w[k];
        jw_object_open(w);
        where(w, "from", at->from_msg, at->from_block, "index", "block");
        where(w, "to", at->to_msg, at->to_block, "message", "block");
        jw_object_close(w);
    }
    jw_array_close(w);
    free(placed->w);
    placed->w = NULL;
    placed->n = 0;
}
