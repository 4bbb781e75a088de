/* Byte spans of values inside a JSON text that jansson has already parsed
 * (so the scan trusts its grammar): for passing a part of a request on as
 * it was sent, byte for byte, rather than written out again. The end of a
 * string is found the same way before a parse (json_span_string_end()). */
#ifndef COMPACTD_JSON_SPAN_H
#define COMPACTD_JSON_SPAN_H

#include <stddef.h>

/* The offset of the quote that ends the string whose first byte (just past
 * its opening quote) is at from, or stop when none does before stop: a
 * quote is escaped when an odd run of backslashes precedes it. The only
 * scan of JSON strings in compactd; it needs no parse. */
size_t json_span_string_end(const char *s, size_t from, size_t stop);

/* The offset of the first byte at or after i that is not JSON white space. */
size_t json_span_skip_ws(const char *s, size_t i, size_t len);

/* The offset just past the value (or string) that starts at i. */
size_t json_span_skip_value(const char *s, size_t i, size_t len);

/* Calls fn for each member of the object whose '{' is at obj: name_start is
 * the opening quote of its name, value_start and value_end the value's
 * span. Returns 0, or -1 when s has no object at obj. */
int json_span_members(const char *s, size_t len, size_t obj,
                      void (*fn)(void *cls, size_t name_start, size_t name_end, size_t value_start,
                                 size_t value_end),
                      void *cls);

/* Finds member name (written without escapes) of the object at obj and its
 * value's span. Returns 0, or -1 when there is no such member. */
int json_span_member(const char *s, size_t len, size_t obj, const char *name, size_t *value_start,
                     size_t *value_end);

#endif
