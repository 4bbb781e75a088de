/* A byte-pair rank table in tiktoken's .tiktoken format (one line per token:
 * its bytes in base64, a space, its rank), and lookups of byte strings in it.
 * Pure but for ranks_load_file(), which reads one file. */
#ifndef COMPACTD_RANKS_H
#define COMPACTD_RANKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ranks ranks;

/* ranks_lookup() answers this for bytes that are not a token. */
#define RANKS_NONE INT32_MAX

/* Parses data[0..len): every line "<base64> <rank>\n", ranks 0, 1, 2, ... in
 * order (a .tiktoken file lists its tokens by rank), no token twice, the last
 * line ended by a newline. When expected_n is not 0 the table must hold
 * exactly that many tokens. data is read only during the call.
 *
 * Returns a new table, released with ranks_free(); or NULL with a message
 * naming the line at fault (or "out of memory") in err[0..errlen). */
ranks *ranks_parse(const char *data, size_t len, size_t expected_n, char *err, size_t errlen);

/* Reads the file at path, checks that its SHA-256 is want_sha256 (64
 * lower-case hex digits) before parsing a byte of it, then parses it as
 * ranks_parse() does. NULL with a message naming path on any failure. */
ranks *ranks_load_file(const char *path, const char *want_sha256, size_t expected_n, char *err,
                       size_t errlen);

void ranks_free(ranks *r);

/* The rank of the token whose bytes are b[0..len), or RANKS_NONE. Safe to
 * call from any number of threads at once. */
int32_t ranks_lookup(const ranks *r, const unsigned char *b, size_t len);

/* The number of tokens in the table. */
size_t ranks_size(const ranks *r);

#endif
