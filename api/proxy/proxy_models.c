/* The context window of each known model, for a proxied request that sends
 * no X-Compactd-Budget: the built-in table below, then COMPACTD_MODELS (a
 * JSON object of name to window) over it. A model is found by the longest
 * name in the table that its own starts with ("gpt-4o" finds
 * "gpt-4o-2024-08-06"). */
#include "proxy_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    int64_t window;
} model_row;

/* The providers' published context windows, in tokens. */
static const struct {
    const char *name;
    int64_t window;
} builtin[] = {
    {"gpt-3.5-turbo", 16385}, {"gpt-4", 8192},     {"gpt-4-turbo", 128000}, {"gpt-4o", 128000},
    {"gpt-4.1", 1047576},     {"gpt-5", 400000},   {"o1", 200000},          {"o1-mini", 128000},
    {"o3", 200000},           {"o3-mini", 200000}, {"o4-mini", 200000},     {"claude-", 200000},
};

static model_row *rows; /* the file's, read once at start-up; searched first */
static size_t n_rows;

int64_t proxy_model_window(const char *model)
{
    size_t best_len = 0;
    int64_t best = -1;
    for (size_t i = 0; i < n_rows; i++) {
        size_t n = strlen(rows[i].name);
        if (n >= best_len && strncmp(model, rows[i].name, n) == 0) {
            best_len = n;
            best = rows[i].window;
        }
    }
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        size_t n = strlen(builtin[i].name);
        /* A row of the file wins over a built-in one of the same length. */
        if (n > best_len && strncmp(model, builtin[i].name, n) == 0) {
            best_len = n;
            best = builtin[i].window;
        }
    }
    return best;
}

int proxy_models_load(const char *path, char *err, size_t errlen)
{
    if (!path[0])
        return 0;
    json_error_t jerr;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(doc)) {
        snprintf(err, errlen,
                 "COMPACTD_MODELS: '%s' is not a JSON object of model names to "
                 "context windows (%s)",
                 path, doc ? "not an object" : jerr.text);
        json_decref(doc);
        return -1;
    }
    rows = calloc(json_object_size(doc) + 1, sizeof(*rows));
    const char *name;
    json_t *v;
    int rc = rows ? 0 : -1;
    json_object_foreach(doc, name, v)
    {
        if (rc != 0)
            break;
        if (!json_is_integer(v) || json_integer_value(v) < 1 || !name[0]) {
            snprintf(err, errlen, "COMPACTD_MODELS: '%s' must map to a window of at least 1 token",
                     name);
            rc = -1;
            break;
        }
        rows[n_rows].name = strdup(name);
        rows[n_rows].window = json_integer_value(v);
        if (!rows[n_rows++].name)
            rc = -1;
    }
    json_decref(doc);
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "out of memory");
    return rc;
}
