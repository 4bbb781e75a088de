/* Byte-pair merging by rank, as tiktoken does it: a piece starts as its
 * bytes; the adjacent pair whose concatenation has the lowest rank (the
 * leftmost of equals) merges, again and again, until no adjacent pair is a
 * token. Only the number of parts that remain is computed. Pure: no I/O. */
#ifndef COMPACTD_BPE_H
#define COMPACTD_BPE_H

#include "ranks.h"

#include <stddef.h>
#include <stdint.h>

/* Pieces up to this many bytes merge by rescanning a small array (fastest
 * for the short pieces most text is made of); longer ones through a heap,
 * and those longer than BPE_HEAP_MAX through rank buckets (a fixed cost of
 * a few microseconds, then the fastest). */
#define BPE_SHORT_MAX 48
#define BPE_HEAP_MAX 2048

/* The number of tokens piece[0..len) merges into under r: at least 1 when
 * len > 0, at most len. Time O(len log len) whatever the bytes. Returns -1
 * when out of memory (pieces longer than BPE_SHORT_MAX allocate about 20
 * bytes per byte, and past BPE_HEAP_MAX 12 bytes per rank of r as well). */
int64_t bpe_count(const ranks *r, const unsigned char *piece, size_t len);

/* The three strategies bpe_count() chooses between, for the tests to
 * compare on any length: the rescan is tiktoken's own loop, O(len^2) in
 * time and limited to BPE_SHORT_MAX bytes; the heap (pairs keyed by rank
 * and offset over a linked list of parts) and the buckets (one per rank,
 * swept in offset order) have no length limit. */
int64_t bpe_count_rescan(const ranks *r, const unsigned char *piece, size_t len);
int64_t bpe_count_heap(const ranks *r, const unsigned char *piece, size_t len);
int64_t bpe_count_buckets(const ranks *r, const unsigned char *piece, size_t len);

/* With on set, the buckets strategy adds the first pairs right to left, so
 * that each bucket must be sorted before its sweep: a safeguard no text has
 * been seen to need, which the tests reach this way. The counts do not
 * change. Process-wide; call it before any counting starts (compactd never
 * does). */
void bpe_fill_backwards(int on);

#endif
