/* Request decoding with jansson: parse strictly, then walk the document in
 * member order so the first offending field is the one reported. */
#include "json_decode.h"

#include "bytemap.h"

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_char_len(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned min;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, min = 0x80;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, min = 0x800;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void json_sanitize_text(char *s)
{
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len((const unsigned char *)s + i, len - i);
        if (n == 0 || (unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            s[i++] = '?';
            continue;
        }
        i += n;
    }
}

/* ---- Errors ---- */

static int invalid(compactd_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int invalid(compactd_error *err, const char *path, const char *fmt, ...)
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
    return -1;
}

#define PATH_NAME_MAX 64

/* The JSON path of a member: $.name, or $["na me"] when the name is not a
 * plain identifier, so the path itself stays unambiguous. The name is cut
 * at a character boundary after PATH_NAME_MAX bytes, and bytes that are not
 * UTF-8 become '?': a path goes into a JSON response as it is. */
static void member_path_n(char *out, size_t size, const char *parent, const char *name,
                          size_t name_len)
{
    int plain = name_len > 0 && name_len <= PATH_NAME_MAX;
    for (size_t i = 0; i < name_len && plain; i++) {
        char c = name[i];
        plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                (i > 0 && c >= '0' && c <= '9');
    }
    if (plain) {
        snprintf(out, size, "%s.%.*s", parent, (int)name_len, name);
        return;
    }
    /* Room for the quoted name so that the whole path fits in out. */
    char quoted[PATH_NAME_MAX * 6 + 1];
    size_t used = strlen(parent) + 5, room = sizeof(quoted) - 1, o = 0;
    if (size < used)
        room = 0;
    else if (size - used < room)
        room = size - used;
    for (size_t i = 0; i < name_len && i < PATH_NAME_MAX;) {
        const unsigned char *p = (const unsigned char *)name + i;
        size_t n = utf8_char_len(p, name_len - i);
        char piece[8];
        size_t plen;
        if (n == 0) {
            piece[0] = '?';
            plen = 1;
            n = 1;
        } else if (*p == '"' || *p == '\\') {
            piece[0] = '\\';
            piece[1] = (char)*p;
            plen = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            plen = (size_t)snprintf(piece, sizeof(piece), "\\u%04x", *p);
        } else {
            memcpy(piece, p, n);
            plen = n;
        }
        if (i + n > PATH_NAME_MAX || o + plen > room)
            break;
        memcpy(quoted + o, piece, plen);
        o += plen;
        i += n;
    }
    quoted[o] = '\0';
    if (size >= used) { /* room was sized for exactly this */
        size_t plen = used - 5;
        memmove(out, parent, plen);
        memcpy(out + plen, "[\"", 2);
        memcpy(out + plen + 2, quoted, o);
        memcpy(out + plen + 2 + o, "\"]", 3);
    } else if (size > 0) {
        snprintf(out, size, "%s", parent);
    }
}

/* Where a value sits, as the links of its JSON path: a member of its
 * parent (name set) or an element of it (index). The path is spelled out
 * only when there is an error to report, never for the fields that pass. */
typedef struct field_ref {
    const struct field_ref *parent; /* NULL: a member of the document */
    const char *name;               /* NULL for an array element */
    size_t index;
} field_ref;

static void ref_path(const field_ref *r, char *out, size_t size)
{
    char parent[ERROR_PATH_MAX];
    if (r->parent)
        ref_path(r->parent, parent, sizeof(parent));
    else
        strcpy(parent, "$");
    if (r->name)
        member_path_n(out, size, parent, r->name, strlen(r->name));
    else
        snprintf(out, size, "%s[%zu]", parent, r->index);
}

static int invalid_at(compactd_error *err, const field_ref *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int invalid_at(compactd_error *err, const field_ref *at, const char *fmt, ...)
{
    char path[ERROR_PATH_MAX], message[sizeof(err->message)];
    va_list ap;
    if (!err)
        return -1;
    ref_path(at, path, sizeof(path));
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return invalid(err, path, "%s", message);
}

const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a non-integer number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* ---- Field readers ---- */

static int read_int(const json_t *v, const field_ref *at, long long lo, long long hi, int64_t *out,
                    compactd_error *err)
{
    if (!json_is_integer(v))
        return invalid_at(err, at, "must be an integer from %lld to %lld, not %s", lo, hi,
                          json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return invalid_at(err, at, "must be an integer from %lld to %lld, got %lld", lo, hi,
                          (long long)i);
    *out = (int64_t)i;
    return 0;
}

static int read_string(const json_t *v, const field_ref *at, size_t min, size_t max,
                       const char **out, size_t *len, compactd_error *err)
{
    if (!json_is_string(v))
        return invalid_at(err, at, "must be a string, not %s", json_type_name(v));
    size_t n = json_string_length(v);
    if (n < min || n > max)
        return invalid_at(err, at, "must be %zu to %zu bytes long, got %zu", min, max, n);
    *out = json_string_value(v);
    *len = n;
    return 0;
}

static int read_bool(const json_t *v, const field_ref *at, int *out, compactd_error *err)
{
    if (!json_is_boolean(v))
        return invalid_at(err, at, "must be a boolean, not %s", json_type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* ---- Enumerations ---- */

/* Reads a string that must be one of names[0..n): compared by length, so
 * a string with an embedded NUL matches none. Sets *out to its index. */
static int read_enum(const json_t *v, const field_ref *at, const char *const *names, int n,
                     int *out, compactd_error *err)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == len && memcmp(s, names[i], len) == 0) {
                *out = i;
                return 0;
            }
    }
    char list[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
                 i == 0       ? ""
                 : i == n - 1 ? (n == 2 ? " or " : ", or ")
                              : ", ",
                 names[i]);
    return invalid_at(err, at, "must be %s%s", n > 2 ? "one of " : "", list);
}

/* ---- Units ---- */

/* One field of an object the decoder knows: its name, whether it must be
 * there, whether only a derivable unit may carry it, and how it is read
 * into the unit. A new unit field is a new row (and, when it nests values,
 * a look at SHAPE_VALUES_PER_UNIT below). */
typedef struct {
    const char *name;
    int required;
    int derivable_only;
    int (*read)(const json_t *v, const field_ref *at, const decode_limits *lim, plan_unit *u,
                unit_detail *x, compactd_error *err);
} field_spec;

#define FIELDS_MAX 16 /* rows of the longest table: fits the "seen" mask */

/* Fields only a derivable unit may carry: what compaction may do to it
 * (summarize, rank, hint at re-acquisition) is refused for protected
 * state, which is never summarized, and for redundant units, which go. */
static int derivable_only(const plan_unit *u, const field_ref *at, const char *field,
                          compactd_error *err)
{
    if (u->cls == UNIT_DERIVABLE)
        return 0;
    if (u->cls == UNIT_PROTECTED && strcmp(field, "summary") == 0)
        return invalid_at(err, at,
                          "a protected unit cannot carry a summary: summarizing protected state "
                          "is silent truncation; it stays verbatim or is externalized");
    return invalid_at(err, at, "only a derivable unit may carry \"%s\", not a %s one", field,
                      unit_class_name(u->cls));
}

/* Reads the members of the object v by the table spec[0..n): unknown
 * members are refused, each in member order, and then the first required
 * field (in table order) that is missing. */
static int read_fields(const json_t *v, const field_ref *at, const field_spec *spec, size_t n,
                       const decode_limits *lim, plan_unit *u, unit_detail *x, compactd_error *err)
{
    const char *name;
    json_t *m;
    unsigned seen = 0;

    json_object_foreach((json_t *)v, name, m)
    {
        field_ref sub = {at, name, 0};
        size_t f = 0;
        while (f < n && strcmp(spec[f].name, name) != 0)
            f++;
        if (f == n)
            return invalid_at(err, &sub, "unknown field");
        seen |= 1u << f;
        if (!spec[f].read)
            continue; /* read before the others */
        if ((spec[f].derivable_only && derivable_only(u, &sub, name, err) != 0) ||
            spec[f].read(m, &sub, lim, u, x, err) != 0)
            return -1;
    }
    for (size_t f = 0; f < n; f++)
        if (spec[f].required && !(seen & (1u << f)))
            return invalid_at(err, at, "\"%s\" is required", spec[f].name);
    return 0;
}

/* A request's "tokenizer": the name of a known encoding. */
static int read_tokenizer(const json_t *v, const field_ref *at, const tokenizer **out,
                          compactd_error *err)
{
    if (json_is_string(v) &&
        (*out = tokenizer_find(json_string_value(v), json_string_length(v))) != NULL)
        return 0;
    char names[128] = "";
    const tokenizer *t;
    for (size_t i = 0; (t = tokenizer_at(i)) != NULL; i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s\"%s\"", i ? ", " : "",
                 tokenizer_name(t));
    return invalid_at(err, at, "must be one of %s", names);
}

static int read_key(const json_t *v, const field_ref *at, const decode_limits *lim, plan_unit *u,
                    unit_detail *x, compactd_error *err)
{
    (void)x;
    if (read_string(v, at, 1, lim->max_key_bytes, &u->key, &u->key_len, err) != 0)
        return -1;
    for (size_t i = 0; i < u->key_len; i++) {
        unsigned char c = (unsigned char)u->key[i];
        if (c < 0x20 || c == 0x7f)
            return invalid_at(err, at,
                              "must not contain control characters: keys appear in pointers and "
                              "URLs");
    }
    return 0;
}

static int read_tokens(const json_t *v, const field_ref *at, const decode_limits *lim, plan_unit *u,
                       unit_detail *x, compactd_error *err)
{
    (void)lim;
    x->has_tokens = 1;
    return read_int(v, at, 0, TOKENS_MAX, &u->tokens, err);
}

static int read_text(const json_t *v, const field_ref *at, const decode_limits *lim, plan_unit *u,
                     unit_detail *x, compactd_error *err)
{
    (void)x;
    u->has_text = 1;
    return read_string(v, at, 0, lim->max_text_bytes, &u->text, &u->text_len, err);
}

static int read_priority(const json_t *v, const field_ref *at, const decode_limits *lim,
                         plan_unit *u, unit_detail *x, compactd_error *err)
{
    (void)lim;
    (void)x;
    return read_int(v, at, -TOKENS_MAX - 1, TOKENS_MAX, &u->priority, err);
}

static int read_group(const json_t *v, const field_ref *at, const decode_limits *lim, plan_unit *u,
                      unit_detail *x, compactd_error *err)
{
    (void)lim;
    (void)x;
    return read_string(v, at, 1, GROUP_MAX_BYTES, &u->group, &u->group_len, err);
}

static int read_reacquire(const json_t *v, const field_ref *at, const decode_limits *lim,
                          plan_unit *u, unit_detail *x, compactd_error *err)
{
    (void)u;
    return read_string(v, at, 0, lim->max_text_bytes, &x->reacquire, &x->reacquire_len, err);
}

static int read_summary_text(const json_t *v, const field_ref *at, const decode_limits *lim,
                             plan_unit *u, unit_detail *x, compactd_error *err)
{
    (void)u;
    return read_string(v, at, 0, lim->max_text_bytes, &x->summary, &x->summary_len, err);
}

static int read_summary_tokens(const json_t *v, const field_ref *at, const decode_limits *lim,
                               plan_unit *u, unit_detail *x, compactd_error *err)
{
    (void)lim;
    x->has_summary_tokens = 1;
    return read_int(v, at, 0, TOKENS_MAX, &u->summary_tokens, err);
}

/* metadata: a flat object, echoed as compactd writes it (compact, member
 * order kept); the text lives until the request is freed. */
static int read_metadata(const json_t *v, const field_ref *at, const decode_limits *lim,
                         plan_unit *u, unit_detail *x, compactd_error *err)
{
    const char *name;
    json_t *m;
    (void)lim;
    (void)u;
    if (!json_is_object(v))
        return invalid_at(err, at, "must be an object, not %s", json_type_name(v));
    if (json_object_size(v) > UNIT_METADATA_MAX_MEMBERS)
        return invalid_at(err, at, "has %zu members; the limit is %d", json_object_size(v),
                          UNIT_METADATA_MAX_MEMBERS);
    json_object_foreach((json_t *)v, name, m)
    {
        if (json_is_object(m) || json_is_array(m)) {
            field_ref sub = {at, name, 0};
            return invalid_at(err, &sub,
                              "must be a string, number, boolean or null: metadata is flat");
        }
    }
    size_t len = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (len > UNIT_METADATA_MAX_BYTES)
        return invalid_at(err, at, "takes %zu bytes as JSON; the limit is %d", len,
                          UNIT_METADATA_MAX_BYTES);
    char *text = malloc(len + 1);
    if (!text)
        return error_set(err, ERR_INTERNAL, "out of memory decoding metadata");
    json_dumpb(v, text, len, JSON_COMPACT | JSON_PRESERVE_ORDER);
    text[len] = '\0';
    x->metadata = text;
    x->metadata_len = len;
    return 0;
}

static const field_spec summary_fields[] = {
    {"text", 1, 0, read_summary_text},
    {"tokens", 0, 0, read_summary_tokens}, /* counted from the text when missing */
};

#define SUMMARY_FIELDS (sizeof(summary_fields) / sizeof(summary_fields[0]))

static int read_summary(const json_t *v, const field_ref *at, const decode_limits *lim,
                        plan_unit *u, unit_detail *x, compactd_error *err)
{
    if (!json_is_object(v))
        return invalid_at(err, at, "must be an object {\"text\", \"tokens\"}, not %s",
                          json_type_name(v));
    if (read_fields(v, at, summary_fields, SUMMARY_FIELDS, lim, u, x, err) != 0)
        return -1;
    u->has_summary = 1;
    return 0;
}

/* "class" has no reader: it is read first, whatever its position, so that
 * class-specific fields can be judged as they come. */
static const field_spec unit_fields[] = {
    {"class", 1, 0, NULL},
    {"key", 1, 0, read_key},
    {"tokens", 0, 0, read_tokens}, /* counted from the text when missing */
    {"text", 0, 0, read_text},
    {"priority", 0, 1, read_priority},
    {"group", 0, 0, read_group}, /* every class: the strongest of a group wins */
    {"summary", 0, 1, read_summary},
    {"reacquire", 0, 1, read_reacquire},
    {"metadata", 0, 0, read_metadata},
};

#define UNIT_FIELDS (sizeof(unit_fields) / sizeof(unit_fields[0]))
_Static_assert(UNIT_FIELDS <= FIELDS_MAX, "the seen mask holds every field");

static const char *const class_names[] = {"protected", "derivable", "redundant"};

/* Reads one unit by the table, then checks it by the domain's rules. */
static int read_unit(const json_t *v, const field_ref *at, const decode_limits *lim, plan_unit *u,
                     unit_detail *x, compactd_error *err)
{
    memset(u, 0, sizeof(*u));
    memset(x, 0, sizeof(*x));
    if (!json_is_object(v))
        return invalid_at(err, at, "must be an object, not %s", json_type_name(v));

    json_t *cls = json_object_get(v, "class");
    field_ref class_ref = {at, "class", 0};
    int c = 0;
    if (!cls)
        return invalid_at(err, &class_ref, "is required");
    if (read_enum(cls, &class_ref, class_names, UNIT_CLASSES, &c, err) != 0)
        return -1;
    u->cls = (unit_class)c;

    if (read_fields(v, at, unit_fields, UNIT_FIELDS, lim, u, x, err) != 0)
        return -1;
    const char *field, *problem = compaction_unit_problem(u, x, &field);
    if (problem) {
        field_ref ref = {at, field, 0};
        return invalid_at(err, &ref, "%s", problem);
    }
    return 0;
}

/* Frees the metadata texts read_metadata() made for the units of r. */
static void free_metadata(compaction_request *r)
{
    for (size_t i = 0; r->detail && i < r->n; i++)
        free((char *)r->detail[i].metadata);
}

/* Reads the units array into dst's units (its other fields are left as
 * they are); keys must be unique within it. On error dst has no units. */
static int read_units(const json_t *v, const field_ref *at, const decode_limits *lim,
                      int protected_only, compaction_request *dst, compactd_error *err)
{
    bytemap seen = {0};
    compaction_request got, *out = &got;
    int rc = -1;

    if (!json_is_array(v))
        return invalid_at(err, at, "must be an array, not %s", json_type_name(v));
    size_t count = json_array_size(v);
    if (count > lim->max_units)
        return invalid_at(err, at, "has %zu units; the limit is %zu", count, lim->max_units);

    if (compaction_request_init(out, count) != 0 || bytemap_init(&seen, count) != 0) {
        error_set(err, ERR_INTERNAL, "out of memory decoding %zu units", count);
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        field_ref elem = {at, NULL, i};
        plan_unit *u = &out->units[i];
        if (read_unit(json_array_get(v, i), &elem, lim, u, &out->detail[i], err) != 0)
            goto done;
        if (protected_only && u->cls != UNIT_PROTECTED) {
            field_ref cls = {&elem, "class", 0};
            invalid_at(err, &cls, "must be \"protected\": only protected units are audited");
            goto done;
        }
        size_t *dup = bytemap_put_new(&seen, u->key, u->key_len, i);
        if (dup) {
            field_ref key = {&elem, "key", 0}, first = {at, NULL, *dup};
            char first_path[ERROR_PATH_MAX];
            ref_path(&first, first_path, sizeof(first_path));
            invalid_at(err, &key, "duplicates the key of %s; keys must be unique", first_path);
            goto done;
        }
    }
    dst->units = got.units;
    dst->detail = got.detail;
    dst->sha256 = got.sha256;
    dst->n = got.n;
    bytemap_free(&seen);
    return 0;
done:
    bytemap_free(&seen);
    free_metadata(out);
    compaction_request_free(out);
    return rc;
}

int json_decode_units(const void *array, const char *member, const decode_limits *lim,
                      int protected_only, compaction_request *out, compactd_error *err)
{
    field_ref at = {NULL, member, 0};
    return read_units(array, &at, lim, protected_only, out, err);
}

/* ---- Shape ---- */

/* jansson builds a tree of 50 to 150 bytes per value, so a 32 MiB body of
 * "[[],[],..." would cost gigabytes before any field is looked at. The shape
 * scan walks the raw bytes first and refuses what no request can be: nesting
 * deeper than SHAPE_MAX_DEPTH, an array longer than the unit limit, more
 * values than that many units can hold. It only counts; grammar is jansson's
 * job, so it stays simple and skips what it does not understand. The same
 * walk, stopped at a byte offset, names the JSON path of a parse error. */

#define SHAPE_MAX_DEPTH 4 /* {"units": [{"summary": {...}}]} */
/* A unit object, every member it may have, the members of its summary and
 * of its metadata, and one to spare. */
#define SHAPE_VALUES_PER_UNIT (1 + UNIT_FIELDS + SUMMARY_FIELDS + UNIT_METADATA_MAX_MEMBERS + 1)
#define SHAPE_VALUES_TOP 16

typedef struct {
    char kind; /* '{' or '[' */
    size_t index;
    int has_elem;    /* an array's element index has begun */
    const char *key; /* raw, still escaped, without its quotes */
    size_t key_len;
    int has_key;
} shape_level;

typedef struct {
    shape_level level[SHAPE_MAX_DEPTH];
    int depth;
    size_t values;
    const char *problem; /* why the scan stopped early, or NULL */
} shape;

/* The offset of the quote that ends the string starting at from, or stop:
 * a quote is escaped when an odd number of backslashes precede it. */
static size_t string_end(const char *s, size_t from, size_t stop)
{
    for (size_t j = from; j < stop;) {
        const char *q = memchr(s + j, '"', stop - j);
        if (!q)
            break;
        size_t k = (size_t)(q - s), b = 0;
        while (k - b > from && s[k - b - 1] == '\\')
            b++;
        if (b % 2 == 0)
            return k;
        j = k + 1;
    }
    return stop;
}

/* Scans body[0..stop). Returns 0 when it got there, -1 when the shape is
 * refused (sh->problem says why; sh describes where). */
static int shape_scan(const char *s, size_t stop, const decode_limits *lim, shape *sh)
{
    size_t max_values = SHAPE_VALUES_TOP + SHAPE_VALUES_PER_UNIT * lim->max_units;
    int in_scalar = 0;
    memset(sh, 0, sizeof(*sh));
    for (size_t i = 0; i < stop; i++) {
        char c = s[i];
        shape_level *top = sh->depth ? &sh->level[sh->depth - 1] : NULL;
        int starts_value = 0;
        if (c == '"') {
            size_t j = string_end(s, i + 1, stop);
            if (top && top->kind == '{' && !top->has_key) {
                if (j < stop) { /* a complete member name */
                    top->key = s + i + 1;
                    top->key_len = j - i - 1;
                    top->has_key = 1;
                }
            } else {
                starts_value = 1;
            }
            i = j;
            in_scalar = 0;
        } else if (c == '{' || c == '[') {
            starts_value = 1;
            in_scalar = 0;
        } else if (c == '}' || c == ']') {
            if (sh->depth > 0)
                sh->depth--;
            in_scalar = 0;
        } else if (c == ',') {
            if (top && top->kind == '[') {
                top->index++;
                top->has_elem = 0;
            } else if (top)
                top->has_key = 0;
            in_scalar = 0;
        } else if (c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            in_scalar = 0;
        } else if (!in_scalar) {
            starts_value = 1;
            in_scalar = 1;
        }
        if (!starts_value)
            continue;
        if (top && top->kind == '[')
            top->has_elem = 1;
        if (top && top->kind == '[' && top->index >= lim->max_units) {
            sh->problem = "array";
            return -1;
        }
        if (++sh->values > max_values) {
            sh->problem = "values";
            return -1;
        }
        if (c == '{' || c == '[') {
            if (sh->depth == SHAPE_MAX_DEPTH) {
                sh->problem = "depth";
                return -1;
            }
            shape_level *l = &sh->level[sh->depth++];
            memset(l, 0, sizeof(*l));
            l->kind = c;
        }
    }
    return 0;
}

/* Writes the JSON path of the first depth levels of where the scan stopped:
 * each level adds the element or member it was reading. */
static void shape_path(const shape *sh, int depth, char *out, size_t size)
{
    char parent[ERROR_PATH_MAX];
    snprintf(out, size, "$");
    for (int d = 0; d < depth; d++) {
        const shape_level *l = &sh->level[d];
        snprintf(parent, sizeof(parent), "%s", out);
        if (l->kind == '[' && l->has_elem) {
            int n = snprintf(out, size, "%s[%zu]", parent, l->index);
            if (n < 0 || (size_t)n >= size)
                snprintf(out, size, "%s", parent);
        } else if (l->has_key) {
            /* Decode the name with jansson; its quotes are in the body. */
            json_t *name =
                json_loadb(l->key - 1, l->key_len + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            if (json_is_string(name))
                member_path_n(out, size, parent, json_string_value(name), json_string_length(name));
            else
                member_path_n(out, size, parent, l->key, l->key_len);
            json_decref(name);
        }
    }
}

/* ---- Documents ---- */

/* front_member (or NULL) names a top-level member the front read itself
 * (MCP's "session"): no field of the request, it is left out. */
static json_t *parse(const char *body, size_t len, const char *front_member,
                     const decode_limits *lim, compactd_error *err)
{
    json_error_t jerr;
    shape sh;
    char path[ERROR_PATH_MAX];

    if (!body)
        body = "";
    if (shape_scan(body, len, lim, &sh) != 0) {
        if (strcmp(sh.problem, "depth") == 0) {
            shape_path(&sh, sh.depth, path, sizeof(path));
            invalid(err, path,
                    "nests objects and arrays deeper than any request does (at most %d levels)",
                    SHAPE_MAX_DEPTH);
        } else if (strcmp(sh.problem, "array") == 0) {
            shape_path(&sh, sh.depth - 1, path, sizeof(path));
            invalid(err, path,
                    "has more than %zu elements; the limit is %zu units "
                    "(COMPACTD_MAX_UNITS)",
                    lim->max_units, lim->max_units);
        } else {
            shape_path(&sh, sh.depth, path, sizeof(path));
            invalid(err, path,
                    "the request holds more JSON values than %zu units could "
                    "(COMPACTD_MAX_UNITS)",
                    lim->max_units);
        }
        return NULL;
    }

    /* NUL is a control character like any other: texts round-trip byte for
     * byte, so it is allowed in strings (never in keys, see above). */
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!doc) {
        size_t at = (size_t)jerr.position < len ? (size_t)jerr.position : len;
        shape_scan(body, at, lim, &sh);
        shape_path(&sh, sh.depth, path, sizeof(path));
        switch (json_error_code(&jerr)) {
        case json_error_duplicate_key:
            invalid(err, path, "appears twice in its object; each member may appear once");
            break;
        case json_error_invalid_utf8:
            invalid(err, path, "is not valid UTF-8 (line %d, column %d)", jerr.line, jerr.column);
            break;
        case json_error_numeric_overflow:
            invalid(err, path, "is a number too large for any field (integers from %lld to %lld)",
                    -TOKENS_MAX - 1, TOKENS_MAX);
            break;
        case json_error_end_of_input_expected:
            invalid(err, "$", "unexpected bytes after the JSON document (line %d, column %d)",
                    jerr.line, jerr.column);
            break;
        case json_error_null_byte_in_key:
            invalid(err, path, "a member name must not contain \\u0000");
            break;
        default:
            json_sanitize_text(jerr.text);
            invalid(err, path, "malformed JSON at line %d, column %d: %s", jerr.line, jerr.column,
                    jerr.text);
        }
        return NULL;
    }
    if (!json_is_object(doc)) {
        invalid(err, "$", "the request body must be a JSON object, not %s", json_type_name(doc));
        json_decref(doc);
        return NULL;
    }
    if (front_member)
        json_object_del(doc, front_member);
    return doc;
}

int json_decode_compact(const char *body, size_t len, const decode_limits *lim, compact_input *in,
                        compactd_error *err)
{
    return json_decode_compact_args(body, len, NULL, lim, in, err);
}

int json_decode_compact_args(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, compact_input *in, compactd_error *err)
{
    const char *name;
    json_t *m;
    int has_budget = 0, has_units = 0;

    memset(in, 0, sizeof(*in));
    json_t *doc = parse(body, len, front_member, lim, err);
    if (!doc)
        return -1;
    in->doc = doc;

    json_object_foreach(doc, name, m)
    {
        field_ref at = {NULL, name, 0};
        if (strcmp(name, "budget") == 0) {
            if (read_int(m, &at, 0, TOKENS_MAX, &in->req.budget, err) != 0)
                goto fail;
            has_budget = 1;
        } else if (strcmp(name, "units") == 0) {
            if (read_units(m, &at, lim, 0, &in->req, err) != 0)
                goto fail;
            has_units = 1;
        } else if (strcmp(name, "mode") == 0) {
            static const char *const modes[] = {
                [PLAN_STRICT] = "strict", [PLAN_DISCOVERY] = "discovery"};
            int mode = 0;
            if (read_enum(m, &at, modes, 2, &mode, err) != 0)
                goto fail;
            in->req.mode = (plan_mode)mode;
        } else if (strcmp(name, "dry_run") == 0) {
            if (read_bool(m, &at, &in->req.dry_run, err) != 0)
                goto fail;
        } else if (strcmp(name, "tokenizer") == 0) {
            if (read_tokenizer(m, &at, &in->req.tokenizer, err) != 0)
                goto fail;
        } else {
            invalid_at(err, &at, "unknown field");
            goto fail;
        }
    }
    if (!has_budget) {
        invalid(err, "$.budget", "is required");
        goto fail;
    }
    if (!has_units) {
        invalid(err, "$.units", "is required");
        goto fail;
    }
    return 0;
fail:
    compact_input_free(in);
    return -1;
}

void compact_input_free(compact_input *in)
{
    free_metadata(&in->req);
    compaction_request_free(&in->req);
    if (in->doc)
        json_decref(in->doc);
    memset(in, 0, sizeof(*in));
}

int json_decode_verify(const char *body, size_t len, const decode_limits *lim, verify_input *in,
                       compactd_error *err)
{
    return json_decode_verify_args(body, len, NULL, lim, in, err);
}

int json_decode_verify_args(const char *body, size_t len, const char *front_member,
                            const decode_limits *lim, verify_input *in, compactd_error *err)
{
    const char *name;
    json_t *m;
    int has_context = 0, has_units = 0;

    memset(in, 0, sizeof(*in));
    json_t *doc = parse(body, len, front_member, lim, err);
    if (!doc)
        return -1;
    in->doc = doc;

    json_object_foreach(doc, name, m)
    {
        field_ref at = {NULL, name, 0};
        int rc = 0;
        if (strcmp(name, "context") == 0) {
            rc = read_string(m, &at, 0, (size_t)-1, &in->context, &in->context_len, err);
            has_context = 1;
        } else if (strcmp(name, "units") == 0) {
            rc = read_units(m, &at, lim, 1, &in->set, err);
            has_units = 1;
        } else if (strcmp(name, "context_tokens") == 0) {
            rc = read_int(m, &at, 0, TOKENS_MAX, &in->context_tokens, err);
            in->has_context_tokens = 1;
        } else if (strcmp(name, "budget") == 0) {
            rc = read_int(m, &at, 0, TOKENS_MAX, &in->budget, err);
            in->has_budget = 1;
        } else if (strcmp(name, "dry_run") == 0) {
            rc = read_bool(m, &at, &in->dry_run, err);
        } else if (strcmp(name, "tokenizer") == 0) {
            rc = read_tokenizer(m, &at, &in->set.tokenizer, err);
        } else {
            rc = invalid_at(err, &at, "unknown field");
        }
        if (rc != 0)
            goto fail;
    }
    if (!has_context) {
        invalid(err, "$.context", "is required");
        goto fail;
    }
    if (!has_units) {
        invalid(err, "$.units", "is required");
        goto fail;
    }
    size_t text_bytes = 0;
    for (size_t i = 0; i < in->set.n; i++)
        text_bytes += in->set.units[i].text_len;
    if (text_bytes > lim->max_verify_text_bytes) {
        invalid(err, "$.units",
                "the units' texts take %zu bytes together; one verify audits at most %zu "
                "(COMPACTD_MAX_VERIFY_TEXT_BYTES)",
                text_bytes, lim->max_verify_text_bytes);
        goto fail;
    }
    if (in->has_budget != in->has_context_tokens) {
        invalid(err, in->has_budget ? "$.context_tokens" : "$.budget",
                "budget and context_tokens come together: repair needs both");
        goto fail;
    }
    return 0;
fail:
    verify_input_free(in);
    return -1;
}

int json_decode_tokens(const char *body, size_t len, const decode_limits *lim, tokens_input *in,
                       compactd_error *err)
{
    const char *name;
    json_t *m;
    int has_texts = 0;

    memset(in, 0, sizeof(*in));
    json_t *doc = parse(body, len, NULL, lim, err);
    if (!doc)
        return -1;
    in->doc = doc;

    json_object_foreach(doc, name, m)
    {
        field_ref at = {NULL, name, 0};
        if (strcmp(name, "tokenizer") == 0) {
            if (read_tokenizer(m, &at, &in->tokenizer, err) != 0)
                goto fail;
        } else if (strcmp(name, "texts") == 0) {
            if (!json_is_array(m)) {
                invalid_at(err, &at, "must be an array of strings, not %s", json_type_name(m));
                goto fail;
            }
            size_t n = json_array_size(m);
            if (n > lim->max_units) {
                invalid_at(err, &at, "has %zu texts; the limit is %zu (COMPACTD_MAX_UNITS)", n,
                           lim->max_units);
                goto fail;
            }
            in->texts = malloc((n ? n : 1) * sizeof(*in->texts));
            in->lens = malloc((n ? n : 1) * sizeof(*in->lens));
            if (!in->texts || !in->lens) {
                error_set(err, ERR_INTERNAL, "out of memory decoding %zu texts", n);
                goto fail;
            }
            for (size_t i = 0; i < n; i++) {
                field_ref elem = {&at, NULL, i};
                if (read_string(json_array_get(m, i), &elem, 0, lim->max_text_bytes, &in->texts[i],
                                &in->lens[i], err) != 0)
                    goto fail;
            }
            in->n = n;
            has_texts = 1;
        } else {
            invalid_at(err, &at, "unknown field");
            goto fail;
        }
    }
    if (!has_texts) {
        invalid(err, "$.texts", "is required");
        goto fail;
    }
    return 0;
fail:
    tokens_input_free(in);
    return -1;
}

void tokens_input_free(tokens_input *in)
{
    free(in->texts);
    free(in->lens);
    if (in->doc)
        json_decref(in->doc);
    memset(in, 0, sizeof(*in));
}

void verify_input_free(verify_input *in)
{
    free_metadata(&in->set);
    compaction_request_free(&in->set);
    if (in->doc)
        json_decref(in->doc);
    memset(in, 0, sizeof(*in));
}
