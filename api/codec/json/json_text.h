/* Text that goes out inside a JSON answer, made safe. */
#ifndef COMPACTD_JSON_TEXT_H
#define COMPACTD_JSON_TEXT_H

#include <stddef.h>

/* The length of the valid UTF-8 character at p (at most n bytes, n > 0),
 * or 0 when none starts there. */
size_t json_utf8_char_len(const unsigned char *p, size_t n);

/* Replaces, in place, every byte of the NUL-terminated s that is not part of
 * a valid UTF-8 character, and every control character, with '?'. For
 * messages that quote request bytes (a path, a cut-off key, jansson's
 * "near '...'") and go out as JSON text. */
void json_sanitize_text(char *s);

#endif
