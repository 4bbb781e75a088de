/* Token counting: every cost compactd computes itself (a unit's text sent
 * without tokens, a summary without tokens, a pointer) is counted here, by
 * the encoding a request names. An encoding is a row of the table in
 * tokenizer.c behind one count function. Pure: no I/O after start-up. */
#ifndef COMPACTD_TOKENIZER_H
#define COMPACTD_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer; /* immutable, process-wide */

/* The encoding named name (len bytes, compared by length: an embedded NUL
 * names nothing), or NULL when there is none. Borrowed: valid for the life
 * of the process. */
const tokenizer *tokenizer_find(const char *name, size_t len);

/* The encoding named by COMPACTD_TOKENIZER, "bytes" when it is unset; NULL
 * when it names an unknown encoding (start-up refuses that). Borrowed, as
 * above. */
const tokenizer *tokenizer_default(void);

/* The encoding's name, as tokenizer_find() takes it. Borrowed. */
const char *tokenizer_name(const tokenizer *t);

/* Tokens of text as ordinary text (special-token text is ordinary).
 * >= 0, or -1 when out of memory. */
int64_t tokenizer_count(const tokenizer *t, const char *text, size_t len);

#endif
