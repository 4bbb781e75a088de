/* A page of a re-acquired text: where the page that starts at a byte
 * offset ends so that it holds at most a number of tokens, cut only
 * between UTF-8 characters, so that the pages from offset 0, each
 * starting at the last one's end, put back together are the text byte
 * for byte. Pure: tokens are counted by the caller's function. */
#ifndef COMPACTD_TEXT_PAGE_H
#define COMPACTD_TEXT_PAGE_H

#include <stddef.h>
#include <stdint.h>

/* Tokens of text[0..len), or -1 when out of memory. */
typedef int64_t (*text_page_count_fn)(void *ctx, const char *text, size_t len);

/* 1 when offset (<= len) falls between two characters of text: at 0, at
 * len, or at a byte that does not continue a UTF-8 sequence. */
int text_page_boundary(const char *text, size_t len, size_t offset);

/* The end of the page of text[0..len) that starts at offset (<= len, a
 * boundary) and holds at most max_tokens tokens (>= 1): the end of the
 * largest run of whole characters found to fit, found with counts of
 * pages that grow from about max_tokens bytes, then halved (a count is
 * never asked for more than twice the page's bytes past offset, bar the
 * first try). A page that is not empty always holds at least one
 * character, even one that alone passes max_tokens, so that paging always
 * reaches the end. *end = len when the rest fits. Returns 0, or -1 when
 * the count ran out of memory. */
int text_page_end(const char *text, size_t len, size_t offset, int64_t max_tokens,
                  text_page_count_fn count, void *ctx, size_t *end);

#endif
