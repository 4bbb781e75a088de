/* The units array of a request: each unit's fields by a table, checked by
 * the domain's rules, keys unique. */
#include "json_decode.h"
#include "json_fields.h"
#include "json_shape.h"

#include "bytemap.h"

#include <stdlib.h>
#include <string.h>

/* What a unit's readers fill: the unit and its details, under the limits. */
typedef struct {
    const decode_limits *lim;
    plan_unit *u;
    unit_detail *x;
} unit_ctx;

/* Fields only a derivable unit may carry: what compaction may do to it
 * (summarize, rank, hint at re-acquisition) is refused for protected
 * state, which is never summarized, and for redundant units, which go. */
static int derivable_only(void *ctx, const field_spec *f, const field_ref *at, compactd_error *err)
{
    const plan_unit *u = ((unit_ctx *)ctx)->u;
    if (u->cls == UNIT_DERIVABLE)
        return 0;
    if (u->cls == UNIT_PROTECTED && strcmp(f->name, "summary") == 0)
        return field_invalid_at(err, at,
                                "a protected unit cannot carry a summary: summarizing protected "
                                "state is silent truncation; it stays verbatim or is externalized");
    return field_invalid_at(err, at, "only a derivable unit may carry \"%s\", not a %s one",
                            f->name, unit_class_name(u->cls));
}

/* ---- Readers ---- */

static int read_key(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    unit_ctx *c = ctx;
    plan_unit *u = c->u;
    if (field_read_string(v, at, 1, c->lim->max_key_bytes, NULL, &u->key, &u->key_len, err) != 0)
        return -1;
    for (size_t i = 0; i < u->key_len; i++) {
        unsigned char ch = (unsigned char)u->key[i];
        if (ch < 0x20 || ch == 0x7f)
            return field_invalid_at(err, at,
                                    "must not contain control characters: keys appear in "
                                    "pointers and URLs");
    }
    return 0;
}

static int read_tokens(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    unit_ctx *c = ctx;
    c->x->has_tokens = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &c->u->tokens, err);
}

static int read_text(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    unit_ctx *c = ctx;
    c->u->has_text = 1;
    return field_read_string(v, at, 0, c->lim->max_text_bytes, NULL, &c->u->text, &c->u->text_len,
                             err);
}

static int read_priority(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_int(v, at, -TOKENS_MAX - 1, TOKENS_MAX, &((unit_ctx *)ctx)->u->priority, err);
}

static int read_group(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    plan_unit *u = ((unit_ctx *)ctx)->u;
    return field_read_string(v, at, 1, GROUP_MAX_BYTES, NULL, &u->group, &u->group_len, err);
}

static int read_reacquire(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    unit_ctx *c = ctx;
    return field_read_string(v, at, 0, c->lim->max_text_bytes, NULL, &c->x->reacquire,
                             &c->x->reacquire_len, err);
}

static int read_summary_text(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    unit_ctx *c = ctx;
    return field_read_string(v, at, 0, c->lim->max_text_bytes, NULL, &c->x->summary,
                             &c->x->summary_len, err);
}

static int read_summary_tokens(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    unit_ctx *c = ctx;
    c->x->has_summary_tokens = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &c->u->summary_tokens, err);
}

/* metadata: a flat object, echoed as compactd writes it (compact, member
 * order kept); the text lives until the request is freed. */
static int read_metadata(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    const char *name;
    json_t *m;
    unit_detail *x = ((unit_ctx *)ctx)->x;
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object, not %s", json_type_name(v));
    if (json_object_size(v) > UNIT_METADATA_MAX_MEMBERS)
        return field_invalid_at(err, at, "has %zu members; the limit is %d", json_object_size(v),
                                UNIT_METADATA_MAX_MEMBERS);
    json_object_foreach((json_t *)v, name, m)
    {
        if (json_is_object(m) || json_is_array(m)) {
            field_ref sub = {at, name, 0, NULL};
            return field_invalid_at(err, &sub,
                                    "must be a string, number, boolean or null: metadata is flat");
        }
    }
    /* An object is never 0 bytes of JSON: 0 is jansson out of memory. */
    size_t len = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (len == 0)
        return error_set(err, ERR_INTERNAL, "out of memory decoding metadata");
    if (len > UNIT_METADATA_MAX_BYTES)
        return field_invalid_at(err, at, "takes %zu bytes as JSON; the limit is %d", len,
                                UNIT_METADATA_MAX_BYTES);
    char *text = malloc(len + 1);
    if (!text || json_dumpb(v, text, len, JSON_COMPACT | JSON_PRESERVE_ORDER) != len) {
        free(text);
        return error_set(err, ERR_INTERNAL, "out of memory decoding metadata");
    }
    text[len] = '\0';
    x->metadata = text;
    x->metadata_len = len;
    return 0;
}

static const field_spec summary_fields[] = {
    {"text", FIELD_REQUIRED, 0, read_summary_text},
    {"tokens", FIELD_OPTIONAL, 0, read_summary_tokens}, /* counted from the text when missing */
};

#define SUMMARY_FIELDS (sizeof(summary_fields) / sizeof(summary_fields[0]))

static int read_summary(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object {\"text\", \"tokens\"}, not %s",
                                json_type_name(v));
    if (field_read_object(v, at, summary_fields, SUMMARY_FIELDS, ctx, NULL, err) != 0)
        return -1;
    ((unit_ctx *)ctx)->u->has_summary = 1;
    return 0;
}

/* "class" has no reader: it is read first, whatever its position, so that
 * class-specific fields (the restricted rows) can be judged as they come. */
static const field_spec unit_fields[] = {
    {"class", FIELD_REQUIRED, 0, NULL},
    {"key", FIELD_REQUIRED, 0, read_key},
    {"tokens", FIELD_OPTIONAL, 0, read_tokens}, /* counted from the text when missing */
    {"text", FIELD_OPTIONAL, 0, read_text},
    {"priority", FIELD_OPTIONAL, 1, read_priority},
    {"group", FIELD_OPTIONAL, 0, read_group}, /* every class: the strongest of a group wins */
    {"summary", FIELD_OPTIONAL, 1, read_summary},
    {"reacquire", FIELD_OPTIONAL, 1, read_reacquire},
    {"metadata", FIELD_OPTIONAL, 0, read_metadata},
};

#define UNIT_FIELDS (sizeof(unit_fields) / sizeof(unit_fields[0]))
_Static_assert(UNIT_FIELDS <= FIELDS_MAX, "the seen mask holds every field");
/* The shape guard's count per unit holds a unit with every field. */
_Static_assert(SHAPE_VALUES_PER_UNIT >=
                   1 + UNIT_FIELDS + SUMMARY_FIELDS + UNIT_METADATA_MAX_MEMBERS + 1,
               "a unit with every field fits the shape guard's count");

static const char *const class_names[] = {"protected", "derivable", "redundant"};

/* ---- Units ---- */

/* Reads one unit by the table, then checks it by the domain's rules. */
static int read_unit(const json_t *v, const field_ref *at, unit_ctx *c, compactd_error *err)
{
    memset(c->u, 0, sizeof(*c->u));
    memset(c->x, 0, sizeof(*c->x));
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object, not %s", json_type_name(v));

    json_t *cls = json_object_get(v, "class");
    field_ref class_ref = {at, "class", 0, NULL};
    int k = 0;
    if (!cls)
        return field_invalid_at(err, &class_ref, "is required");
    if (field_read_enum(cls, &class_ref, class_names, UNIT_CLASSES, &k, err) != 0)
        return -1;
    c->u->cls = (unit_class)k;

    if (field_read_object(v, at, unit_fields, UNIT_FIELDS, c, derivable_only, err) != 0)
        return -1;
    const char *field, *problem = compaction_unit_problem(c->u, c->x, &field);
    if (problem) {
        field_ref ref = {at, field, 0, NULL};
        return field_invalid_at(err, &ref, "%s", problem);
    }
    return 0;
}

void json_units_free(compaction_request *r)
{
    for (size_t i = 0; r->detail && i < r->n; i++)
        free((char *)r->detail[i].metadata);
    compaction_request_free(r);
}

/* Reads the units array into dst's units (its other fields are left as
 * they are); keys must be unique within it. On error dst has no units. */
static int read_units(const json_t *v, const field_ref *at, const decode_limits *lim,
                      int protected_only, compaction_request *dst, compactd_error *err)
{
    bytemap seen = {0};
    compaction_request got;

    if (!json_is_array(v))
        return field_invalid_at(err, at, "must be an array, not %s", json_type_name(v));
    size_t count = json_array_size(v);
    if (count > lim->max_units)
        return field_invalid_at(err, at, "has %zu units; the limit is %zu", count, lim->max_units);

    if (compaction_request_init(&got, count) != 0 || bytemap_init(&seen, count) != 0) {
        error_set(err, ERR_INTERNAL, "out of memory decoding %zu units", count);
        goto fail;
    }
    for (size_t i = 0; i < count; i++) {
        field_ref elem = {at, NULL, i, NULL};
        unit_ctx c = {lim, &got.units[i], &got.detail[i]};
        if (read_unit(json_array_get(v, i), &elem, &c, err) != 0)
            goto fail;
        if (protected_only && c.u->cls != UNIT_PROTECTED) {
            field_ref cls = {&elem, "class", 0, NULL};
            field_invalid_at(err, &cls, "must be \"protected\": only protected units are audited");
            goto fail;
        }
        size_t *dup = bytemap_put_new(&seen, c.u->key, c.u->key_len, i);
        if (dup) {
            field_ref key = {&elem, "key", 0, NULL}, first = {at, NULL, *dup, NULL};
            char first_path[ERROR_PATH_MAX];
            field_path(&first, first_path, sizeof(first_path));
            field_invalid_at(err, &key, "duplicates the key of %s; keys must be unique",
                             first_path);
            goto fail;
        }
    }
    dst->units = got.units;
    dst->detail = got.detail;
    dst->sha256 = got.sha256;
    dst->n = got.n;
    bytemap_free(&seen);
    return 0;
fail:
    bytemap_free(&seen);
    json_units_free(&got);
    return -1;
}

int json_decode_units(const void *array, const char *member, const decode_limits *lim,
                      int protected_only, compaction_request *out, compactd_error *err)
{
    field_ref at = {NULL, member, 0, NULL};
    return read_units(array, &at, lim, protected_only, out, err);
}
