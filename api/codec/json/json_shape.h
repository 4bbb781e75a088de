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
#include "json_limits.h"
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
 * count. jansson's tree costs 24 to 216 bytes per value and more for
 * large containers (json_tree_price()). */
#define SHAPE_VALUES_PER_UNIT 21
#define SHAPE_VALUES_TOP 16

/* What is left of one request's value count: every scan of it (the body,
 * then each nested text) takes from the same count. */
typedef struct {
    size_t values_left;
    size_t tree_bytes; /* the trees its scans priced and held (answer_account.h) */
} json_budget;

/* The whole count for a request under lim. */
void json_budget_init(json_budget *b, const decode_limits *lim);

/* Scans s[0..len) without building anything: nesting deeper than max_depth,
 * an array of more than lim->max_units elements and more values than b has
 * left are refused (an InvalidRequest naming the JSON path where the scan
 * stopped, prefixed with base when base is not NULL, e.g. the path of the
 * string the text came from). On success the values seen are taken from b.
 * Grammar is jansson's job: the scan only counts.
 *
 * The scan also prices the tree jansson would build of s
 * (json_tree_price()) and takes its nodes (the price without the strings'
 * own bytes, which the body's bytes stand for) from the answer account
 * bound to the thread before anything is built: a tree that would pass what the request
 * may hold is refused with PayloadTooLarge, one that does not fit in what
 * the server holds now with Overloaded (and the refusal recorded with
 * answer_refuse(), so that the front answers 413 or 503 as for an answer
 * too large). What json_shape_check() takes is held until the request
 * ends; json_parse_request() gives its share back with the tree.
 * 0, or -1 with err set. */
int json_shape_check(const char *s, size_t len, const decode_limits *lim, int max_depth,
                     const char *base, json_budget *b, compactd_error *err);

/* Checks the shape of a request body as json_shape_check() does, then
 * parses it (duplicate members refused, NUL allowed in strings but not in
 * member names) into an object, in a region of its own (json_region.h).
 * Returns a new reference, which the caller releases with
 * json_region_release() (which gives the tree's price back), or NULL with
 * an InvalidRequest naming the JSON path of the problem, the refusals of
 * json_shape_check(), or an Internal error when memory ran out. */
json_t *json_parse_request(const char *body, size_t len, const decode_limits *lim, int max_depth,
                           json_budget *b, compactd_error *err);

/* The bytes jansson's tree of the JSON text s[0..len) takes, built in a
 * region (json_region.h), with the reader's buffer: every value's
 * allocation, as jansson 2.14 makes it, and every table a container grew
 * through. A bound, never below what the region hands out. */
size_t json_tree_price(const char *s, size_t len);

#endif
