/* Token counting: every cost compactd computes itself (a unit's text sent
 * without tokens, a summary without tokens, a pointer) is counted here, by
 * the encoding a request names. An encoding is a row of the table in
 * tokenizer.c behind one count function. "bytes" counts a text's UTF-8
 * bytes: an upper bound on its tokens under any byte-level BPE tokenizer.
 * "o200k_base" and "cl100k_base" count exactly as OpenAI's tiktoken does
 * (encode_ordinary: special-token text such as <|endoftext|> is ordinary
 * text): each encoding's published pre-tokenizer regular expression through
 * PCRE2, then byte-pair merges by rank. Pure: no I/O after start-up, when
 * tokenizer_load() reads the rank files. */
#ifndef COMPACTD_TOKENIZER_H
#define COMPACTD_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer; /* immutable, process-wide */

/* The encoding named name (len bytes, compared by length: an embedded NUL
 * names nothing), or NULL when there is none, or its ranks are not loaded.
 * Borrowed: valid for the life of the process. */
const tokenizer *tokenizer_find(const char *name, size_t len);

/* The encoding of requests that name none: "bytes" until
 * tokenizer_set_default() (start-up, from COMPACTD_TOKENIZER) names another.
 * Borrowed, as above. Set it before any thread counts. */
const tokenizer *tokenizer_default(void);
void tokenizer_set_default(const tokenizer *t);

/* The i-th usable encoding (0 is "bytes"), NULL past the last: lets error
 * messages and documentation list every name. Borrowed, as above. */
const tokenizer *tokenizer_at(size_t i);

/* Writes the name of every encoding in the table, loaded or not, as
 * "bytes, o200k_base, cl100k_base", into out (cut to fit size): for help
 * texts and start-up messages, so that no list of names is kept by hand. */
void tokenizer_names(char *out, size_t size);

/* The encoding's name, as tokenizer_find() takes it. Borrowed. */
const char *tokenizer_name(const tokenizer *t);

/* Tokens of text[0..len) as ordinary text (special-token text is ordinary).
 * Bytes that are not UTF-8 count one token each and split the text there.
 * >= 0 (>= 1 when len > 0, <= len), or -1 when out of memory. Safe to call
 * from any number of threads at once. */
int64_t tokenizer_count(const tokenizer *t, const char *text, size_t len);

/* For tests: the end of the pre-tokenizer's piece that starts at off (<
 * len) of the ASCII text[0..len) under BPE encoding t, as its pattern
 * matches it through PCRE2 (by_hand 0) or as pretok_ascii.c finds it
 * (by_hand 1); 0 when PCRE2 is out of memory or its match does not start
 * at off. The two must agree. */
size_t tokenizer_piece_end(const tokenizer *t, const char *text, size_t len, size_t off,
                           int by_hand);

/* 1 when t counts a text by its length alone ("bytes"): texts of one
 * length then cost the same whatever their bytes. */
int tokenizer_counts_length(const tokenizer *t);

/* 1 when t's count of a text is the sum of the counts of its parts cut
 * (a) after an ASCII punctuation mark that a space follows, and (b) before
 * and after a run of ASCII digits that a punctuation mark, or a letter and
 * one space, precede and anything but a digit (of any script) follows:
 * "bytes" (any cut
 * adds up), and o200k_base and
 * cl100k_base, whose patterns end a piece at both (tokenizer.c says why).
 * What lets a loss marker be priced from counts of its parts. */
int tokenizer_counts_by_parts(const tokenizer *t);

/* Loads every BPE encoding's rank file from the folder ranks_dir, checking
 * each file's SHA-256 first, and compiles each pre-tokenizer. A file that
 * is not there leaves its encoding out (below); "bytes" needs none. Call
 * once, at start-up, before any thread counts. Returns 0; or -1 with a
 * message that names the file and what is wrong with it (damaged, another
 * version, unreadable) in err[0..errlen), leaving every encoding that did
 * not load unfindable. */
int tokenizer_load(const char *ranks_dir, char *err, size_t errlen);

/* The path of encoding name's rank file when tokenizer_load() did not find
 * it, else NULL (loaded, or no such encoding). Borrowed. */
const char *tokenizer_missing_file(const char *name, size_t len);

/* Writes "o200k_base (<path>), ..." of every encoding left out into out
 * (cut to fit size). Returns how many were left out. */
size_t tokenizer_missing_list(char *out, size_t size);

/* Releases what tokenizer_load() loaded (for leak checkers at exit). */
void tokenizer_unload(void);

#endif
