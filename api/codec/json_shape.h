/* The shape guard: every request body, and every JSON text nested in one
 * that compactd parses (a tool call's arguments), is scanned before jansson
 * builds a tree of it, against one set of limits derived from
 * COMPACTD_MAX_UNITS: how many values a request may hold (its body and its
 * nested texts together), how long an array may be, and how deep the
 * route's grammar nests. Then the parse itself, with its errors named by
 * JSON path. */
#ifndef COMPACTD_JSON_SHAPE_H
#define COMPACTD_JSON_SHAPE_H

#include "error.h"
#include "json_decode.h"
#include "json_region.h"

#include <jansson.h>
#include <stddef.h>

/* How deep each route's grammar nests: a units request
 * {"units": [{"summary": {...}}]}; a chat history, whose tool inputs are
 * JSON of the caller's choosing (nested well past what units need, and
 * still bounded); an MCP message, whose params.arguments is such a request
 * (one level more in a batch). */
#define SHAPE_DEPTH_UNITS 4
#define SHAPE_DEPTH_CHAT 32
#define SHAPE_DEPTH_MCP (SHAPE_DEPTH_CHAT + 4)

/* The values one request may hold: a unit object, every member it may have,
 * the members of its summary and of its metadata, and one to spare, per unit
 * of COMPACTD_MAX_UNITS (json_units.c checks its tables fit), plus a few for
 * the request itself. A chat message or an MCP message is held to the same
 * count. jansson's tree costs 50 to 150 bytes per value. */
#define SHAPE_VALUES_PER_UNIT 21
#define SHAPE_VALUES_TOP 16

/* What is left of one request's value count: every scan of it (the body,
 * then each nested text) takes from the same count. */
typedef struct {
    size_t values_left;
} json_budget;

/* The whole count for a request under lim. */
void json_budget_init(json_budget *b, const decode_limits *lim);

/* Scans s[0..len) without building anything: nesting deeper than max_depth,
 * an array of more than lim->max_units elements and more values than b has
 * left are refused (an InvalidRequest naming the JSON path where the scan
 * stopped, prefixed with base when base is not NULL, e.g. the path of the
 * string the text came from). On success the values seen are taken from b.
 * Grammar is jansson's job: the scan only counts. 0, or -1 with err set. */
int json_shape_check(const char *s, size_t len, const decode_limits *lim, int max_depth,
                     const char *base, json_budget *b, compactd_error *err);

/* Checks the shape of a request body as json_shape_check() does, then
 * parses it (duplicate members refused, NUL allowed in strings but not in
 * member names) into an object, in a region of its own (json_region.h).
 * Returns a new reference, which the caller releases with
 * json_region_release(), or NULL with an InvalidRequest naming the JSON
 * path of the problem (an Internal error when memory ran out). */
json_t *json_parse_request(const char *body, size_t len, const decode_limits *lim, int max_depth,
                           json_budget *b, compactd_error *err);

#endif
