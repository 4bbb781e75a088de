/* The decoders' common parts: JSON paths, the one reader per kind of value
 * and the table-driven reader of an object's members. */
#include "json_fields.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Errors ---- */

int field_invalid(compactd_error *err, const char *path, const char *fmt, ...)
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

#define PATH_NAME_MAX 64

/* The name is cut at a character boundary after PATH_NAME_MAX bytes. */
void field_member_path(char *out, size_t size, const char *parent, const char *name,
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
        size_t n = json_utf8_char_len(p, name_len - i);
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

void field_path(const field_ref *r, char *out, size_t size)
{
    char parent[ERROR_PATH_MAX];
    if (r->path) {
        snprintf(out, size, "%s", r->path);
        return;
    }
    if (r->parent)
        field_path(r->parent, parent, sizeof(parent));
    else
        strcpy(parent, "$");
    if (r->name)
        field_member_path(out, size, parent, r->name, strlen(r->name));
    else
        snprintf(out, size, "%s[%zu]", parent, r->index);
}

int field_invalid_at(compactd_error *err, const field_ref *at, const char *fmt, ...)
{
    char path[ERROR_PATH_MAX], message[sizeof(err->message)];
    va_list ap;
    if (!err)
        return -1;
    field_path(at, path, sizeof(path));
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return field_invalid(err, path, "%s", message);
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

int field_read_int(const json_t *v, const field_ref *at, long long lo, long long hi, int64_t *out,
                   compactd_error *err)
{
    if (!json_is_integer(v))
        return field_invalid_at(err, at, "must be an integer from %lld to %lld, not %s", lo, hi,
                                json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return field_invalid_at(err, at, "must be an integer from %lld to %lld, got %lld", lo, hi,
                                (long long)i);
    *out = (int64_t)i;
    return 0;
}

int field_read_string(const json_t *v, const field_ref *at, size_t min, size_t max,
                      const char *setting, const char **out, size_t *len, compactd_error *err)
{
    if (!json_is_string(v))
        return field_invalid_at(err, at, "must be a string, not %s", json_type_name(v));
    size_t n = json_string_length(v);
    if (setting && n > max)
        return field_invalid_at(err, at, "is %zu bytes long; the limit is %zu (%s)", n, max,
                                setting);
    if (n < min || n > max)
        return field_invalid_at(err, at, "must be %zu to %zu bytes long, got %zu", min, max, n);
    *out = json_string_value(v);
    *len = n;
    return 0;
}

int field_read_bool(const json_t *v, const field_ref *at, int *out, compactd_error *err)
{
    if (!json_is_boolean(v))
        return field_invalid_at(err, at, "must be a boolean, not %s", json_type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* ---- Enumerations ---- */

int field_read_enum(const json_t *v, const field_ref *at, const char *const *names, int n, int *out,
                    compactd_error *err)
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
    return field_invalid_at(err, at, "must be %s%s", n > 2 ? "one of " : "", list);
}

const tokenizer *field_default_tokenizer(const chat_format *format)
{
    return format ? chat_format_tokenizer(format) : tokenizer_default();
}

int field_read_tokenizer(const json_t *v, const field_ref *at, const tokenizer **out,
                         compactd_error *err)
{
    if (json_is_string(v) &&
        (*out = tokenizer_find(json_string_value(v), json_string_length(v))) != NULL)
        return 0;
    const char *missing = json_is_string(v)
                              ? tokenizer_missing_file(json_string_value(v), json_string_length(v))
                              : NULL;
    if (missing)
        return field_invalid_at(err, at,
                                "%s is not available: its rank file %s was not found when "
                                "compactd started (scripts/run fetches it; see COMPACTD_RANKS_DIR)",
                                json_string_value(v), missing);
    char names[128] = "";
    const tokenizer *t;
    for (size_t i = 0; (t = tokenizer_at(i)) != NULL; i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s\"%s\"", i ? ", " : "",
                 tokenizer_name(t));
    return field_invalid_at(err, at, "must be one of %s", names);
}

/* ---- Tables of fields ---- */

int field_read_object(const json_t *v, const field_ref *at, const field_spec *spec, size_t n,
                      void *ctx, field_admit_fn admit, compactd_error *err)
{
    return field_read_object_open(v, at, spec, n, ctx, admit, NULL, err);
}

int field_read_object_open(const json_t *v, const field_ref *at, const field_spec *spec, size_t n,
                           void *ctx, field_admit_fn admit, field_other_fn other,
                           compactd_error *err)
{
    const char *name;
    json_t *m;
    unsigned seen = 0;

    json_object_foreach((json_t *)v, name, m)
    {
        field_ref sub = {at, name, 0, NULL};
        size_t f = 0;
        while (f < n && strcmp(spec[f].name, name) != 0)
            f++;
        if (f == n && other) {
            if (other(ctx, name, m, &sub, err) != 0)
                return -1;
            continue;
        }
        if (f == n)
            return field_invalid_at(err, &sub, "unknown field");
        seen |= 1u << f;
        if (!spec[f].read)
            continue; /* read before or after the others */
        if ((spec[f].restricted && admit(ctx, &spec[f], &sub, err) != 0) ||
            spec[f].read(m, &sub, ctx, err) != 0)
            return -1;
    }
    for (size_t f = 0; f < n; f++) {
        if (spec[f].required == FIELD_OPTIONAL || (seen & (1u << f)))
            continue;
        if (spec[f].required == FIELD_REQUIRED)
            return field_invalid_at(err, at, "\"%s\" is required", spec[f].name);
        field_ref sub = {at, spec[f].name, 0, NULL};
        return field_invalid_at(err, &sub, "is required");
    }
    return 0;
}

const char *json_name(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && strlen(s) == json_string_length(v) ? s : NULL;
}
