/* The messages/compact request: its members, the policy and the annotations;
 * the message array itself goes to the format's codec. */
#include "chat_codec.h"
#include "json_span.h"

#include "chat_check.h"
#include "tokenizer.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tool inputs are JSON of the caller's choosing: nesting is allowed well
 * past what a units request needs, and still bounded. */
#define CHAT_MAX_DEPTH 32
#define CHAT_DEFAULT_KEEP_LAST 2

static const chat_codec *const codecs[] = {&chat_openai_codec, &chat_anthropic_codec};

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

/* One pass of jansson's writer (json_dumpb would need two to size its
 * buffer); the string is freed with the input. */
int chat_dump(chat_input *in, const json_t *v, chat_str *out)
{
    if (in->n_dumps == in->cap_dumps) {
        size_t cap = in->cap_dumps ? 2 * in->cap_dumps : 64;
        char **more = realloc(in->dumps, cap * sizeof(*more));
        if (!more)
            return -1;
        in->dumps = more;
        in->cap_dumps = cap;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return -1;
    in->dumps[in->n_dumps++] = s;
    *out = (chat_str){s, strlen(s)};
    return 0;
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
    if (!err)
        return -1;
    va_list ap;
    err->kind = ERR_INVALID_REQUEST;
    snprintf(err->path, sizeof(err->path), "%s", path);
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    json_sanitize_text(err->message);
    json_sanitize_text(err->path);
    return -1;
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
    if (!json_is_string(v))
        return chat_invalid(err, path, "must be a string, not %s", json_type_name(v));
    size_t n = json_string_length(v);
    if (n > in->lim->max_text_bytes)
        return chat_invalid(err, path,
                            "is %zu bytes long; the limit is %zu (COMPACTD_MAX_TEXT_BYTES)", n,
                            in->lim->max_text_bytes);
    *out = (chat_str){json_string_value(v), n};
    return 0;
}

static int read_int(const json_t *v, const char *path, long long lo, long long hi, int64_t *out,
                    compactd_error *err)
{
    if (!json_is_integer(v))
        return chat_invalid(err, path, "must be an integer from %lld to %lld, not %s", lo, hi,
                            json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return chat_invalid(err, path, "must be an integer from %lld to %lld, got %lld", lo, hi,
                            (long long)i);
    *out = (int64_t)i;
    return 0;
}

/* ---- Shape ---- */

/* Refuses, before any parse tree is built, nesting deeper than
 * CHAT_MAX_DEPTH and more values than the unit limit allows (jansson's tree
 * costs 50 to 150 bytes per value). Counts brackets and separators outside
 * strings; grammar is jansson's job. */
static int shape_ok(const char *s, size_t len, const decode_limits *lim, compactd_error *err)
{
    size_t depth = 0, values = 0, max_values = 64 + 256 * lim->max_units;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '"') {
            /* To the quote that ends the string: one not escaped by an odd
             * run of backslashes. */
            for (;;) {
                const char *q = memchr(s + i + 1, '"', i + 1 < len ? len - i - 1 : 0);
                if (!q) {
                    i = len;
                    break;
                }
                size_t k = (size_t)(q - s), b = 0;
                while (s[k - 1 - b] == '\\')
                    b++;
                i = k;
                if (b % 2 == 0)
                    break;
            }
        } else if (c == '{' || c == '[') {
            if (++depth > CHAT_MAX_DEPTH)
                return chat_invalid(err, "$", "nests objects and arrays deeper than %d levels",
                                    CHAT_MAX_DEPTH);
            values++;
        } else if (c == '}' || c == ']') {
            depth -= depth > 0;
        } else if (c == ',' || c == ':') {
            values++;
        }
        if (values > max_values)
            return chat_invalid(err, "$",
                                "holds more JSON values than %zu messages could "
                                "(COMPACTD_MAX_UNITS)",
                                lim->max_units);
    }
    return 0;
}

/* ---- Messages as sent ---- */

/* A message's JSON is its compact serialization, the same for the same value
 * however a client wrote it, so that the same message always gets the same
 * digest and pointer. When the request's own bytes are already in that form
 * (no whitespace between tokens, no \u escape, no fraction or exponent),
 * they are used as they are and nothing is written out again. The body has
 * been parsed already, so the scans can trust its grammar. */

/* Finds the n elements of the body's top-level "messages" array. Returns
 * 0, or -1 when they are not found as expected (a member name written with
 * escapes, say): the caller then writes each message out with jansson. */
static int message_spans(const char *s, size_t len, size_t n, chat_str *out)
{
    size_t i, end;
    if (json_span_member(s, len, 0, "messages", &i, &end) != 0 || s[i] != '[')
        return -1;
    size_t k = 0;
    for (i = json_span_skip_ws(s, i + 1, len); i < end && s[i] != ']';) {
        size_t next = json_span_skip_value(s, i, len);
        if (k == n)
            return -1;
        out[k++] = (chat_str){s + i, next - i};
        i = json_span_skip_ws(s, next, len);
        if (i < len && s[i] == ',')
            i = json_span_skip_ws(s, i + 1, len);
    }
    return k == n ? 0 : -1;
}

/* Whether s[0..len) is what jansson's compact writer makes of its value. */
static int is_compact_form(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '"') {
            size_t end = json_span_skip_value(s, i, len);
            for (const char *b = memchr(s + i, '\\', end - i); b;
                 b = memchr(b + 2, '\\', (size_t)(s + end - (b + 2)))) {
                if (b[1] == 'u')
                    return 0;
                if (b + 2 >= s + end)
                    break;
            }
            i = end - 1;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '.') {
            return 0;
        } else if ((c == 'e' || c == 'E') && i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') {
            return 0;
        } else if (c == '-' && i + 1 < len && s[i + 1] == '0') {
            return 0;
        }
    }
    return 1;
}

int chat_message_json(chat_input *in, size_t i, const json_t *v, chat_str *out)
{
    if (in->raw && is_compact_form(in->raw[i].s, in->raw[i].len)) {
        *out = in->raw[i];
        return 0;
    }
    return chat_dump(in, v, out);
}

/* ---- Policy and annotations ---- */

static int read_names(chat_input *in, const json_t *v, const char *path, chat_names *out,
                      compactd_error *err)
{
    char sub[ERROR_PATH_MAX];
    if (!json_is_array(v))
        return chat_invalid(err, path, "must be an array of tool names, not %s", json_type_name(v));
    out->n = json_array_size(v);
    out->names = chat_alloc(in, out->n * sizeof(*out->names));
    if (!out->names)
        return chat_out_of_memory(err);
    for (size_t i = 0; i < out->n; i++) {
        chat_pathf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (chat_text(in, json_array_get(v, i), sub, &out->names[i], err) != 0)
            return -1;
    }
    return 0;
}

static int read_policy(chat_input *in, const json_t *v, compactd_error *err)
{
    const char *name;
    json_t *m;
    char path[ERROR_PATH_MAX];
    chat_policy *p = &in->req.policy;
    if (!json_is_object(v))
        return chat_invalid(err, "$.policy", "must be an object, not %s", json_type_name(v));
    json_object_foreach((json_t *)v, name, m)
    {
        chat_pathf(path, sizeof(path), "$.policy.%s", name);
        int64_t keep = 0;
        if (strcmp(name, "keep_last") == 0) {
            if (read_int(m, path, 0, TOKENS_MAX, &keep, err) != 0)
                return -1;
            p->keep_last = (size_t)keep;
        } else if (strcmp(name, "protect_tools") == 0) {
            if (read_names(in, m, path, &p->protect_tools, err) != 0)
                return -1;
        } else if (strcmp(name, "redundant_tools") == 0) {
            if (read_names(in, m, path, &p->redundant_tools, err) != 0)
                return -1;
        } else {
            return chat_invalid(err, path, "unknown field");
        }
    }
    return 0;
}

static int read_class(const json_t *v, const char *path, unit_class *out, compactd_error *err)
{
    static const char *names[] = {"protected", "derivable", "redundant"};
    if (json_is_string(v))
        for (int c = 0; c < UNIT_CLASSES; c++)
            if (strcmp(json_string_value(v), names[c]) == 0 &&
                json_string_length(v) == strlen(names[c])) {
                *out = (unit_class)c;
                return 0;
            }
    return chat_invalid(err, path, "must be one of \"protected\", \"derivable\", \"redundant\"");
}

static int read_summary(chat_input *in, const json_t *v, const char *path, chat_annotation *a,
                        compactd_error *err)
{
    const char *name;
    json_t *m;
    char sub[ERROR_PATH_MAX];
    if (!json_is_object(v))
        return chat_invalid(err, path, "must be an object {\"text\", \"tokens\"?}, not %s",
                            json_type_name(v));
    json_object_foreach((json_t *)v, name, m)
    {
        chat_path_join(sub, sizeof(sub), path, ".", name);
        if (strcmp(name, "text") == 0) {
            if (chat_text(in, m, sub, &a->summary, err) != 0)
                return -1;
            a->has_summary = 1;
        } else if (strcmp(name, "tokens") == 0) {
            if (read_int(m, sub, 0, TOKENS_MAX, &a->summary_tokens, err) != 0)
                return -1;
            a->has_summary_tokens = 1;
        } else {
            return chat_invalid(err, sub, "unknown field");
        }
    }
    if (!a->has_summary)
        return chat_invalid(err, path, "must have \"text\"");
    return 0;
}

static int read_annotation(chat_input *in, const json_t *v, size_t k, unsigned char *seen,
                           compactd_error *err)
{
    const char *name;
    json_t *m;
    char path[ERROR_PATH_MAX], sub[ERROR_PATH_MAX];
    chat_annotation a = {0};
    int64_t index = -1;

    chat_pathf(path, sizeof(path), "$.annotations[%zu]", k);
    if (!json_is_object(v))
        return chat_invalid(err, path, "must be an object, not %s", json_type_name(v));
    json_object_foreach((json_t *)v, name, m)
    {
        chat_path_join(sub, sizeof(sub), path, ".", name);
        int rc = 0;
        if (strcmp(name, "index") == 0) {
            rc = read_int(m, sub, 0, (long long)in->req.n - 1, &index, err);
            if (in->req.n == 0)
                rc = chat_invalid(err, sub, "there are no messages to annotate");
        } else if (strcmp(name, "class") == 0) {
            rc = read_class(m, sub, &a.cls, err);
            a.has_class = 1;
        } else if (strcmp(name, "priority") == 0) {
            rc = read_int(m, sub, -TOKENS_MAX - 1, TOKENS_MAX, &a.priority, err);
            a.has_priority = 1;
        } else if (strcmp(name, "reacquire") == 0) {
            rc = chat_text(in, m, sub, &a.reacquire, err);
            a.has_reacquire = 1;
        } else if (strcmp(name, "summary") == 0) {
            rc = read_summary(in, m, sub, &a, err);
        } else if (strcmp(name, "tokens") == 0) {
            rc = read_int(m, sub, 0, TOKENS_MAX, &a.tokens, err);
            a.has_tokens = 1;
        } else {
            rc = chat_invalid(err, sub, "unknown field");
        }
        if (rc != 0)
            return -1;
    }
    chat_pathf(sub, sizeof(sub), "%s.index", path);
    if (index < 0)
        return chat_invalid(err, sub, "is required");
    if (seen[index])
        return chat_invalid(err, sub, "annotates message %lld a second time", (long long)index);
    seen[index] = 1;
    chat_message *msg = &in->req.m[index];
    if (a.has_tokens && !msg->opaque) {
        chat_pathf(sub, sizeof(sub), "%s.tokens", path);
        return chat_invalid(err, sub,
                            "is for parts compactd cannot count (images, audio, files), and "
                            "message %lld has none: compactd counts its text itself",
                            (long long)index);
    }
    msg->note = a;
    return 0;
}

static int read_annotations(chat_input *in, const json_t *v, compactd_error *err)
{
    if (!json_is_array(v))
        return chat_invalid(err, "$.annotations", "must be an array, not %s", json_type_name(v));
    unsigned char *seen = chat_alloc(in, in->req.n);
    if (!seen)
        return chat_out_of_memory(err);
    for (size_t k = 0; k < json_array_size(v); k++)
        if (read_annotation(in, json_array_get(v, k), k, seen, err) != 0)
            return -1;
    return 0;
}

/* ---- Structure ---- */

static int check_structure(chat_input *in, compactd_error *err)
{
    size_t n = in->req.n;
    chat_check_msg *cm = chat_alloc(in, n * sizeof(*cm));
    if (!cm)
        return chat_out_of_memory(err);
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &in->req.m[i];
        cm[i] = (chat_check_msg){m->role, m->calls, m->n_calls, m->answers, m->n_answers};
    }
    chat_check_result r = chat_check(in->req.rules, cm, n);
    if (r.problem == CHECK_OK)
        return 0;
    if (r.problem == CHECK_OOM)
        return chat_out_of_memory(err);
    char path[ERROR_PATH_MAX];
    if (r.problem == CHECK_ALTERNATION)
        chat_pathf(path, sizeof(path), "$.messages[%zu].role", r.message);
    else
        in->codec->item_path(in, r.message, chat_check_item_is_call(r.problem), r.item, path,
                             sizeof(path));
    return chat_invalid(err, path, "%s", chat_check_describe(r.problem));
}

/* ---- The request ---- */

static int find_codec(const json_t *doc, chat_input *in, compactd_error *err)
{
    json_t *f = json_object_get(doc, "format");
    if (!f)
        return chat_invalid(err, "$.format", "is required: \"openai\" or \"anthropic\"");
    for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
        if (json_is_string(f) && strcmp(json_string_value(f), codecs[i]->name) == 0) {
            in->codec = codecs[i];
            in->req.rules = codecs[i]->rules;
            return 0;
        }
    return chat_invalid(err, "$.format", "must be \"openai\" or \"anthropic\"");
}

static int read_system(chat_input *in, json_t *v, compactd_error *err)
{
    char path[ERROR_PATH_MAX];
    if (!in->codec->top_level_system)
        return chat_invalid(err, "$.system",
                            "is Anthropic's: an OpenAI history carries its system prompt as a "
                            "message");
    in->system = v;
    if (json_is_string(v)) {
        in->req.n_system = 1;
        in->req.system = chat_alloc(in, sizeof(chat_str));
        return in->req.system ? chat_text(in, v, "$.system", &in->req.system[0], err)
                              : chat_out_of_memory(err);
    }
    if (!json_is_array(v))
        return chat_invalid(err, "$.system", "must be a string or an array of text blocks, not %s",
                            json_type_name(v));
    in->req.n_system = json_array_size(v);
    in->req.system = chat_alloc(in, in->req.n_system * sizeof(chat_str));
    if (!in->req.system)
        return chat_out_of_memory(err);
    for (size_t k = 0; k < in->req.n_system; k++) {
        json_t *b = json_array_get(v, k), *m;
        const char *name;
        int has_text = 0;
        chat_pathf(path, sizeof(path), "$.system[%zu]", k);
        if (!json_is_object(b))
            return chat_invalid(err, path, "must be a text block, not %s", json_type_name(b));
        json_object_foreach(b, name, m)
        {
            char sub[ERROR_PATH_MAX];
            chat_path_join(sub, sizeof(sub), path, ".", name);
            if (strcmp(name, "type") == 0) {
                if (!json_is_string(m) || strcmp(json_string_value(m), "text") != 0)
                    return chat_invalid(err, sub, "must be \"text\"");
            } else if (strcmp(name, "text") == 0) {
                if (chat_text(in, m, sub, &in->req.system[k], err) != 0)
                    return -1;
                has_text = 1;
            } else if (strcmp(name, "cache_control") != 0) {
                return chat_invalid(err, sub, "unknown field");
            }
        }
        if (!has_text || !json_object_get(b, "type"))
            return chat_invalid(err, path, "must have \"type\": \"text\" and \"text\"");
    }
    return 0;
}

/* The members only an audit takes: the protected units and the budget
 * that a repair must fit in. */
static int read_verify_member(chat_input *in, const char *name, json_t *m, verify_input *v,
                              compactd_error *err)
{
    char path[ERROR_PATH_MAX];
    chat_path_join(path, sizeof(path), "$", ".", name);
    if (strcmp(name, "units") == 0) {
        return json_decode_units(m, "units", in->lim, 1, &v->set, err);
    }
    if (strcmp(name, "budget") == 0) {
        v->has_budget = 1;
        return read_int(m, path, 0, TOKENS_MAX, &v->budget, err);
    }
    if (strcmp(name, "context_tokens") == 0) {
        v->has_context_tokens = 1;
        return read_int(m, path, 0, TOKENS_MAX, &v->context_tokens, err);
    }
    return chat_invalid(err, path, "unknown field");
}

static int read_member(chat_input *in, const char *name, json_t *m, int *seen_budget,
                       verify_input *v, compactd_error *err)
{
    char path[ERROR_PATH_MAX];
    chat_path_join(path, sizeof(path), "$", ".", name);
    if (strcmp(name, "format") == 0 || strcmp(name, "messages") == 0)
        return 0; /* read in their turn */
    if (strcmp(name, "system") == 0)
        return read_system(in, m, err);
    if (strcmp(name, "dry_run") == 0) {
        if (!json_is_boolean(m))
            return chat_invalid(err, path, "must be a boolean, not %s", json_type_name(m));
        in->req.dry_run = json_is_true(m);
        return 0;
    }
    if (strcmp(name, "tokenizer") == 0) {
        const tokenizer *t =
            json_is_string(m) ? tokenizer_find(json_string_value(m), json_string_length(m)) : NULL;
        if (!t)
            return chat_invalid(err, path, "must name a known tokenizer");
        in->req.tokenizer = t;
        return 0;
    }
    if (v)
        return read_verify_member(in, name, m, v, err);
    if (strcmp(name, "annotations") == 0)
        return 0; /* read once the messages are */
    if (strcmp(name, "budget") == 0) {
        *seen_budget = 1;
        return read_int(m, path, 0, TOKENS_MAX, &in->req.budget, err);
    }
    if (strcmp(name, "policy") == 0)
        return read_policy(in, m, err);
    if (strcmp(name, "mode") == 0) {
        const char *mode = json_is_string(m) ? json_string_value(m) : "";
        if (strcmp(mode, "strict") == 0)
            in->req.mode = PLAN_STRICT;
        else if (strcmp(mode, "discovery") == 0)
            in->req.mode = PLAN_DISCOVERY;
        else
            return chat_invalid(err, path, "must be \"strict\" or \"discovery\"");
        return 0;
    }
    return chat_invalid(err, path, "unknown field");
}

/* Both routes' requests: v is NULL for compact, the audit's members for
 * verify. */
static int decode_request(const char *body, size_t len, const char *front_member,
                          const decode_limits *lim, chat_input *in, verify_input *v,
                          compactd_error *err)
{
    json_error_t jerr;
    const char *name;
    json_t *m;
    int seen_budget = 0;

    memset(in, 0, sizeof(*in));
    in->lim = lim;
    in->req.tokenizer = tokenizer_default();
    in->req.policy.keep_last = CHAT_DEFAULT_KEEP_LAST;
    if (!body)
        body = "";
    if (shape_ok(body, len, lim, err) != 0)
        return -1;
    in->doc = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!in->doc) {
        json_sanitize_text(jerr.text);
        return chat_invalid(err, "$", "malformed JSON at line %d, column %d: %s", jerr.line,
                            jerr.column, jerr.text);
    }
    if (!json_is_object(in->doc))
        return chat_invalid(err, "$", "the request body must be a JSON object, not %s",
                            json_type_name(in->doc));
    if (front_member)
        json_object_del(in->doc, front_member);
    if (find_codec(in->doc, in, err) != 0)
        return -1;
    json_object_foreach(in->doc, name, m)
    {
        if (read_member(in, name, m, &seen_budget, v, err) != 0)
            return -1;
    }
    if (!v && !seen_budget)
        return chat_invalid(err, "$.budget", "is required");
    json_t *msgs = json_object_get(in->doc, "messages");
    if (!msgs)
        return chat_invalid(err, "$.messages", "is required");
    if (!json_is_array(msgs))
        return chat_invalid(err, "$.messages", "must be an array, not %s", json_type_name(msgs));
    if (json_array_size(msgs) == 0) /* both providers refuse an empty history */
        return chat_invalid(err, "$.messages", "must hold at least one message");
    if (json_array_size(msgs) > lim->max_units)
        return chat_invalid(err, "$.messages",
                            "has %zu messages; the limit is %zu (COMPACTD_MAX_UNITS)",
                            json_array_size(msgs), lim->max_units);
    size_t n = json_array_size(msgs);
    in->raw = chat_alloc(in, n * sizeof(chat_str));
    if (!in->raw)
        return chat_out_of_memory(err);
    if (message_spans(body, len, n, in->raw) != 0)
        in->raw = NULL;
    if (in->codec->decode(in, msgs, err) != 0 || check_structure(in, err) != 0)
        return -1;
    json_t *notes = json_object_get(in->doc, "annotations");
    if (notes && read_annotations(in, notes, err) != 0)
        return -1;
    in->tokenizer = tokenizer_name(in->req.tokenizer);
    if (v)
        return 0; /* an audit counts no message */
    for (size_t i = 0; i < in->req.n; i++)
        if (in->req.m[i].opaque && !in->req.m[i].note.has_tokens)
            return chat_invalid(err, in->where[i].opaque_path,
                                "compactd cannot count the tokens of this part: give them as "
                                "annotations[].tokens for message %zu",
                                i);
    return 0;
}

int chat_decode_compact(const char *body, size_t len, const decode_limits *lim, chat_input *in,
                        compactd_error *err)
{
    return decode_request(body, len, NULL, lim, in, NULL, err);
}

int chat_decode_compact_args(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, chat_input *in, compactd_error *err)
{
    return decode_request(body, len, front_member, lim, in, NULL, err);
}

int chat_decode_verify(const char *body, size_t len, const decode_limits *lim, chat_input *in,
                       verify_input *v, compactd_error *err)
{
    memset(v, 0, sizeof(*v));
    if (decode_request(body, len, NULL, lim, in, v, err) != 0)
        return -1;
    if (!v->set.units)
        return chat_invalid(err, "$.units", "is required");
    if (v->has_budget != v->has_context_tokens)
        return chat_invalid(err, v->has_budget ? "$.context_tokens" : "$.budget",
                            "budget and context_tokens come together: repair needs both");
    v->dry_run = in->req.dry_run;
    v->set.tokenizer = in->req.tokenizer;
    return 0;
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
