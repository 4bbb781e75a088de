/* A reader of well-formed JSON that builds the tree json_loadb() builds.
 *
 * jansson's own lexer takes every byte through a chain of function calls
 * (stream, UTF-8 check, token buffer) and copies each string twice: about
 * 100 MB/s here, most of what a compaction costs. This reader checks runs
 * of plain string bytes eight at a time and gives jansson each string in
 * one copy; the values, objects and arrays are jansson's, made through its
 * public functions, so everything after the parse is as before.
 *
 * It reads only what is well formed and gives up (NULL) on anything else:
 * a syntax error, malformed UTF-8, an integer out of json_int_t's range, a
 * real that overflows, a duplicate key under JSON_REJECT_DUPLICATES, NUL
 * in a key (or anywhere without JSON_ALLOW_NUL), nesting deeper than it
 * recurses, a flag it does not know, no memory. The caller then parses with
 * json_loadb(), which reports the error in jansson's words. So every text
 * it accepts, json_loadb() accepts with the same flags, into an equal tree
 * with its members in the same order (json_read_cases and fuzz_json_read
 * hold it to that). */
#ifndef COMPACTD_JSON_READ_H
#define COMPACTD_JSON_READ_H

#include <jansson.h>
#include <stddef.h>

/* The flags json_read() knows; with any other it gives up. */
#define JSON_READ_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

/* The object or array that buf[0..len) holds, with JSON_REJECT_DUPLICATES
 * and JSON_ALLOW_NUL as json_loadb() reads them; NULL when it gives up
 * (see above). The values come from jansson's allocation functions. */
json_t *json_read(const char *buf, size_t len, size_t flags);

#endif
