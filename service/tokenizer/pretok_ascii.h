/* The pre-tokenizers of o200k_base and cl100k_base on text that is all
 * ASCII, written out by hand: the same pieces as their patterns give
 * through PCRE2 (tokenizer.c), without the cost of matching Unicode
 * classes, which was most of the time of counting a text never seen. In
 * ASCII a letter is A-Z (upper) or a-z (lower), a digit 0-9, white space
 * \t \n \v \f \r and space; every other byte is punctuation. Pure. */
#ifndef COMPACTD_PRETOK_ASCII_H
#define COMPACTD_PRETOK_ASCII_H

#include <stddef.h>

typedef enum { PRETOK_NONE, PRETOK_O200K, PRETOK_CL100K } pretok_kind;

/* 1 when every byte of s[0..len) is below 0x80. */
int pretok_is_ascii(const unsigned char *s, size_t len);

/* The end of the piece that starts at s[off] (off < len) of the ASCII text
 * s[0..len) under kind's pattern (PRETOK_O200K or PRETOK_CL100K): the end
 * of the pattern's leftmost-first match at off, always > off. */
size_t pretok_ascii_next(pretok_kind kind, const unsigned char *s, size_t len, size_t off);

#endif
