/* The shape guard and the parse of request bodies.
 *
 * jansson builds a tree of 50 to 150 bytes per value, so a 32 MiB body of
 * "[[],[],..." would cost gigabytes before any field is looked at. The shape
 * scan walks the raw bytes first and refuses what no request can be: nesting
 * deeper than the route's grammar, an array longer than the unit limit, more
 * values than that many units can hold. It only counts; grammar is jansson's
 * job, so it stays simple and skips what it does not understand. It also
 * prices the tree (below), which the answer account must hold before the
 * tree is built. The same walk, stopped at a byte offset, names the JSON
 * path of a parse error. */
#include "json_shape.h"

#include "answer_account.h"
#include "json_fields.h"
#include "json_price.h"
#include "json_region.h"
#include "json_span.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    char kind; /* '{' or '[' */
    size_t index;
    int has_elem;    /* an array's element index has begun */
    const char *key; /* raw, still escaped, without its quotes */
    size_t key_len;
    int has_key;
    size_t items; /* elements or members begun */
} shape_level;

typedef struct {
    shape_level level[SHAPE_DEPTH_MCP];
    int depth;
    size_t values;
    json_price price;
    const char *problem; /* why the scan stopped early, or NULL */
} shape;

/* ---- The tree's price (json_price.h) ---- */

static void price_container(shape *sh, const shape_level *l)
{
    json_price_container(&sh->price, l->kind == '{', l->items);
}

/* Scans body[0..stop). Returns 0 when it got there, -1 when the shape is
 * refused (sh->problem says why; sh describes where). */
static int shape_scan(const char *s, size_t stop, size_t max_array, int max_depth,
                      size_t max_values, shape *sh)
{
    int in_scalar = 0;
    memset(sh, 0, sizeof(*sh));
    for (size_t i = 0; i < stop; i++) {
        char c = s[i];
        shape_level *top = sh->depth ? &sh->level[sh->depth - 1] : NULL;
        int starts_value = 0;
        if (c == '"') {
            size_t j = json_span_string_end(s, i + 1, stop);
            if (top && top->kind == '{' && !top->has_key) {
                if (j < stop) { /* a complete member name */
                    top->key = s + i + 1;
                    top->key_len = j - i - 1;
                    top->has_key = 1;
                    top->items++;
                    json_price_member(&sh->price, top->key_len);
                }
            } else {
                starts_value = 1;
                json_price_string(&sh->price, j - i - 1);
            }
            i = j;
            in_scalar = 0;
        } else if (c == '{' || c == '[') {
            starts_value = 1;
            in_scalar = 0;
        } else if (c == '}' || c == ']') {
            if (sh->depth > 0)
                price_container(sh, &sh->level[--sh->depth]);
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
            if (c != 't' && c != 'f' && c != 'n')
                json_price_number(&sh->price);
        }
        if (!starts_value)
            continue;
        if (top && top->kind == '[') {
            top->has_elem = 1;
            top->items++;
        }
        if (top && top->kind == '[' && top->index >= max_array) {
            sh->problem = "array";
            return -1;
        }
        if (++sh->values > max_values) {
            sh->problem = "values";
            return -1;
        }
        if (c == '{' || c == '[') {
            if (sh->depth == max_depth) {
                sh->problem = "depth";
                return -1;
            }
            shape_level *l = &sh->level[sh->depth++];
            memset(l, 0, sizeof(*l));
            l->kind = c;
        }
    }
    /* What is still open is priced as it stands. */
    for (int d = 0; d < sh->depth; d++)
        price_container(sh, &sh->level[d]);
    json_price_finish(&sh->price);
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
                field_member_path(out, size, parent, json_string_value(name),
                                  json_string_length(name));
            else
                field_member_path(out, size, parent, l->key, l->key_len);
            json_decref(name);
        }
    }
}

/* ---- The guard ---- */

void json_budget_init(json_budget *b, const decode_limits *lim)
{
    b->values_left = SHAPE_VALUES_TOP + SHAPE_VALUES_PER_UNIT * lim->max_units;
    b->tree_bytes = 0;
}

/* The refusal for a scan that stopped early: where, and why. */
static int refuse(const shape *sh, const decode_limits *lim, int max_depth, const char *base,
                  compactd_error *err)
{
    char path[ERROR_PATH_MAX];
    int array = strcmp(sh->problem, "array") == 0, depth = strcmp(sh->problem, "depth") == 0;
    if (base)
        snprintf(path, sizeof(path), "%s", base);
    else
        shape_path(sh, array ? sh->depth - 1 : sh->depth, path, sizeof(path));
    if (depth)
        return field_invalid(err, path,
                             "%s objects and arrays deeper than any request does (at most %d "
                             "levels)",
                             base ? "holds JSON text nesting" : "nests", max_depth);
    if (array)
        return field_invalid(err, path,
                             "%s more than %zu elements; the limit is %zu units "
                             "(COMPACTD_MAX_UNITS)",
                             base ? "holds JSON text with an array of" : "has", lim->max_units,
                             lim->max_units);
    return field_invalid(err, path, "%s more JSON values than %zu units could (COMPACTD_MAX_UNITS)",
                         base ? "holds JSON text that gives the request" : "the request holds",
                         lim->max_units);
}

/* Takes the tree's price from the answer account, or refuses it as an
 * answer too large is refused (413, or 503 with Retry-After when the
 * server's budget is what is short: answer_refuse() tells the front). */
static int hold_tree(size_t bytes, compactd_error *err)
{
    answer_refusal why = answer_take(bytes);
    if (why == ANSWER_OK)
        return 0;
    answer_refuse(why);
    if (why == ANSWER_OVERLOADED)
        return error_set(err, ERR_OVERLOADED,
                         "the request's parse tree (%zu bytes) does not fit in what the server "
                         "may hold now (COMPACTD_MAX_INFLIGHT_BYTES); retry shortly",
                         bytes);
    return error_set(err, ERR_TOO_LARGE,
                     "the request's parse tree would take %zu bytes, more than one client may "
                     "hold (COMPACTD_MAX_CLIENT_INFLIGHT_BYTES)",
                     bytes);
}

/* The scan and its hold; *held is what was taken. */
static int shape_hold(const char *s, size_t len, const decode_limits *lim, int max_depth,
                      const char *base, json_budget *b, size_t *held, compactd_error *err)
{
    shape sh;
    *held = 0;
    if (max_depth > SHAPE_DEPTH_MCP)
        max_depth = SHAPE_DEPTH_MCP;
    if (shape_scan(s ? s : "", s ? len : 0, lim->max_units, max_depth, b->values_left, &sh) != 0)
        return refuse(&sh, lim, max_depth, base, err);
    /* The strings' own bytes stand for the body's, which the body budget
     * already holds (the body goes once its tree is read): the nodes are
     * what a small body can make large. */
    size_t nodes = json_price_nodes(&sh.price);
    if (hold_tree(nodes, err) != 0)
        return -1;
    b->values_left -= sh.values;
    b->tree_bytes += nodes;
    *held = nodes;
    return 0;
}

int json_shape_check(const char *s, size_t len, const decode_limits *lim, int max_depth,
                     const char *base, json_budget *b, compactd_error *err)
{
    size_t held;
    return shape_hold(s, len, lim, max_depth, base, b, &held, err);
}

size_t json_tree_price(const char *s, size_t len)
{
    shape sh;
    shape_scan(s, len, (size_t)-1, SHAPE_DEPTH_MCP, (size_t)-1, &sh);
    return sh.price.tree_bytes;
}

json_t *json_parse_request(const char *body, size_t len, const decode_limits *lim, int max_depth,
                           json_budget *b, compactd_error *err)
{
    json_error_t jerr;
    shape sh;
    char path[ERROR_PATH_MAX];
    size_t held;

    if (!body)
        body = "";
    if (shape_hold(body, len, lim, max_depth, NULL, b, &held, err) != 0)
        return NULL;

    /* NUL is a control character like any other: texts round-trip byte for
     * byte, so it is allowed in strings (never in keys, see above). */
    json_t *doc = json_region_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (doc) {
        json_region_hold(doc, held); /* given back with the tree */
    } else {
        answer_give(held);
        size_t at = (size_t)jerr.position < len ? (size_t)jerr.position : len;
        shape_scan(body, at, (size_t)-1, SHAPE_DEPTH_MCP, (size_t)-1, &sh);
        shape_path(&sh, sh.depth, path, sizeof(path));
        switch (json_error_code(&jerr)) {
        case json_error_duplicate_key:
            field_invalid(err, path, "appears twice in its object; each member may appear once");
            break;
        case json_error_invalid_utf8:
            field_invalid(err, path, "is not valid UTF-8 (line %d, column %d)", jerr.line,
                          jerr.column);
            break;
        case json_error_numeric_overflow:
            field_invalid(err, path,
                          "is a number too large for any field (integers from %lld to %lld)",
                          -TOKENS_MAX - 1, TOKENS_MAX);
            break;
        case json_error_end_of_input_expected:
            field_invalid(err, "$", "unexpected bytes after the JSON document (line %d, column %d)",
                          jerr.line, jerr.column);
            break;
        case json_error_out_of_memory:
            error_set(err, ERR_INTERNAL, "out of memory while parsing the request body");
            break;
        case json_error_null_byte_in_key:
            field_invalid(err, path, "a member name must not contain \\u0000");
            break;
        default:
            json_sanitize_text(jerr.text);
            field_invalid(err, path, "malformed JSON at line %d, column %d: %s", jerr.line,
                          jerr.column, jerr.text);
        }
        return NULL;
    }
    if (!json_is_object(doc)) {
        field_invalid(err, "$", "the request body must be a JSON object, not %s",
                      json_type_name(doc));
        json_region_release(doc);
        return NULL;
    }
    return doc;
}
