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
 * for the short pieces most text is made of); longer ones through a heap. */
#define BPE_SHORT_MAX 48

/* The number of tokens piece[0..len) merges into under r: at least 1 when
 * len > 0, at most len. Time O(len log len) whatever the bytes, by a heap of
 * adjacent pairs over a linked list of parts. Returns -1 when out of memory
 * (pieces longer than BPE_SHORT_MAX allocate 20 bytes per byte). */
int64_t bpe_count(const ranks *r, const unsigned char *piece, size_t len);

/* The two strategies bpe_count() chooses between, for the tests to compare
 * on any length: the rescan is tiktoken's own loop, O(len^2) in time and
 * limited to BPE_SHORT_MAX bytes; the heap has no length limit. */
int64_t bpe_count_rescan(const ranks *r, const unsigned char *piece, size_t len);
int64_t bpe_count_heap(const ranks *r, const unsigned char *piece, size_t len);

#endif
