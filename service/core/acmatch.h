/* Multi-pattern substring search (Aho-Corasick over bytes): which of N
 * patterns occur in a text, found in one pass over the text. Pure: no I/O. */
#ifndef COMPACTD_ACMATCH_H
#define COMPACTD_ACMATCH_H

#include <stddef.h>
#include <stdint.h>

/* One pattern: len bytes at text. Any byte values; text need not be
 * NUL-terminated and may be NULL when len is 0. */
typedef struct {
    const char *text;
    size_t len;
} acmatch_pattern;

typedef struct acmatch acmatch;

/* acmatch_scan_first() reports a pattern that does not occur as this. */
#define ACMATCH_NONE SIZE_MAX

/* Builds a matcher for pats[0..n). The patterns are read only during this
 * call; the matcher keeps no pointer into them or into pats. Pattern i keeps
 * the index i in every result. Patterns may repeat, nest and overlap. An
 * empty pattern occurs in every text, at offset 0, as with memmem().
 *
 * Time and memory are linear in n plus the patterns' total length. There
 * is a state per distinct pattern prefix, so at most one per pattern byte:
 * about 9 bytes for a state on a prefix only one pattern has (most of a
 * long text's bytes), about 17 where patterns share the prefix; plus 12
 * bytes per pattern and a 1 KiB row for each of the ACMATCH_DENSE_STATES
 * shallowest states. While building, the worst case's arrays (about 10
 * bytes per pattern byte) are reserved but only the part used is touched.
 *
 * Returns a new matcher, released with acmatch_free(); or NULL when out of
 * memory, or when n reaches 2^32 - 1 or the total length 2^31 - 1. */
acmatch *acmatch_new(const acmatch_pattern *pats, size_t n);

/* The number of shallow states that get a full 256-entry transition row. */
#define ACMATCH_DENSE_STATES 256

void acmatch_free(acmatch *m);

/* Sets found[i] to 1 when pattern i occurs in text[0..len), else 0, for
 * every i below the matcher's pattern count. One pass over the text: time is
 * linear in len plus the number of patterns found. The matcher is only read,
 * so several threads may scan with one matcher at once. */
void acmatch_scan(const acmatch *m, const char *text, size_t len, unsigned char *found);

/* As acmatch_scan(), but sets first[i] to the offset of the first (leftmost)
 * occurrence of pattern i, or to ACMATCH_NONE. */
void acmatch_scan_first(const acmatch *m, const char *text, size_t len, size_t *first);

/* The number of patterns the matcher was built from. */
size_t acmatch_count(const acmatch *m);

/* The bytes the matcher holds on the heap. */
size_t acmatch_memory(const acmatch *m);

#endif
