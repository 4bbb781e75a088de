/* JSON string escaping, written once for every writer of JSON text: the
 * response writer and the carriers the chat renderer prices and writes. */
#ifndef COMPACTD_JSON_ESCAPE_H
#define COMPACTD_JSON_ESCAPE_H

#include <stddef.h>

/* The most bytes json_escape() writes for len bytes: each may become \u00XX. */
static inline size_t json_escape_room(size_t len)
{
    return len * 6;
}

/* Writes s[0..len) into out as the inside of a JSON string (no quotes):
 * '"', '\\' and control bytes escaped (\n, \r, \t, \b, \f or \u00XX), every
 * other byte as it is. out has room for json_escape_room(len) bytes;
 * returns the number written. */
size_t json_escape(const char *s, size_t len, char *out);

/* The number of bytes json_escape() writes for s[0..len): exact, for a
 * writer that must not hold the worst case's room (an answer counted
 * against the memory budget). */
size_t json_escape_len(const char *s, size_t len);

#endif
