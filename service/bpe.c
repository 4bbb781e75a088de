/* Byte-pair merge counting: tiktoken's rescanning loop for short pieces and
 * a heap of adjacent pairs for long ones, so that a megabyte with no
 * pre-tokenizer split (one repeated character, a run of digits in another
 * script, base64) costs O(n log n) instead of tiktoken's O(n^2). */
#include "bpe.h"

#include <assert.h>
#include <stdlib.h>

/* ---- Short pieces: tiktoken's loop ---- */

int64_t bpe_count_rescan(const ranks *r, const unsigned char *piece, size_t len)
{
    assert(len <= BPE_SHORT_MAX);
    if (len <= 1)
        return (int64_t)len;
    /* start[i] is where part i begins; rank[i] the rank of parts i and i+1
     * merged. start[n] == len closes the last part. */
    uint32_t start[BPE_SHORT_MAX + 1];
    int32_t rank[BPE_SHORT_MAX];
    size_t n = len;
    for (size_t i = 0; i <= len; i++)
        start[i] = (uint32_t)i;
    for (size_t i = 0; i + 1 < n; i++)
        rank[i] = ranks_lookup(r, piece + i, 2);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best])
                best = i;
        if (rank[best] == RANKS_NONE)
            break;
        /* Part best+1 joins part best. */
        for (size_t i = best + 1; i < n; i++)
            start[i] = start[i + 1];
        for (size_t i = best + 1; i + 1 < n - 1; i++)
            rank[i] = rank[i + 1];
        n--;
        if (best + 1 < n)
            rank[best] = ranks_lookup(r, piece + start[best], start[best + 2] - start[best]);
        if (best > 0)
            rank[best - 1] =
                ranks_lookup(r, piece + start[best - 1], start[best + 1] - start[best - 1]);
    }
    return (int64_t)n;
}

/* ---- Long pieces: a heap of adjacent pairs ---- */

/* A heap key: a pair's rank above the byte offset where its left part
 * starts, so that the smallest key is the lowest rank, leftmost first. */
static uint64_t key_of(int32_t rank, size_t at)
{
    return (uint64_t)(uint32_t)rank << 32 | (uint32_t)at;
}

#define NOWHERE UINT32_MAX
/* An 8-ary heap: a third of a binary heap's levels, and a node's children
 * share a cache line or two. */
#define ARITY 8

/* An indexed min-heap of the pairs that are tokens, at most one entry per
 * part: where[at] is the slot of part at's pair, or NOWHERE. */
typedef struct {
    uint64_t *keys;
    uint32_t *where;
    size_t n;
} pair_heap;

static void heap_place(pair_heap *h, size_t i, uint64_t key)
{
    h->keys[i] = key;
    h->where[(uint32_t)key] = (uint32_t)i;
}

static void sift_up(pair_heap *h, size_t i, uint64_t key)
{
    while (i > 0) {
        size_t up = (i - 1) / ARITY;
        if (h->keys[up] <= key)
            break;
        heap_place(h, i, h->keys[up]);
        i = up;
    }
    heap_place(h, i, key);
}

static void sift_down(pair_heap *h, size_t i, uint64_t key)
{
    for (;;) {
        size_t first = ARITY * i + 1, best = i;
        uint64_t least = key;
        for (size_t c = first; c < first + ARITY && c < h->n; c++)
            if (h->keys[c] < least) {
                least = h->keys[c];
                best = c;
            }
        if (best == i)
            break;
        heap_place(h, i, least);
        i = best;
    }
    heap_place(h, i, key);
}

/* Gives part at's pair the rank `rank` (RANKS_NONE: not a token, so out of
 * the heap). */
static void heap_set(pair_heap *h, size_t at, int32_t rank)
{
    uint32_t i = h->where[at];
    if (i == NOWHERE) {
        if (rank != RANKS_NONE)
            sift_up(h, h->n++, key_of(rank, at));
        return;
    }
    h->where[at] = NOWHERE;
    uint64_t key = rank != RANKS_NONE ? key_of(rank, at) : h->keys[--h->n];
    if (rank == RANKS_NONE && i == h->n)
        return; /* the last slot went */
    if (i > 0 && key < h->keys[(i - 1) / ARITY])
        sift_up(h, i, key);
    else
        sift_down(h, i, key);
}

int64_t bpe_count_heap(const ranks *r, const unsigned char *piece, size_t len)
{
    if (len <= 1)
        return (int64_t)len;
    if (len >= NOWHERE)
        return -1;
    /* Parts are named by the offset where they start. next[i] is where the
     * part after part i starts (len for the last), prev[i] where the one
     * before it does. The heap holds each part's pair with its successor
     * when that pair is a token: 20 bytes per byte in all. */
    uint32_t *next = malloc(len * sizeof *next);
    uint32_t *prev = malloc(len * sizeof *prev);
    pair_heap h = {malloc(len * sizeof *h.keys), malloc(len * sizeof *h.where), 0};
    int64_t count = -1;
    if (!next || !prev || !h.keys || !h.where)
        goto out;
    for (size_t i = 0; i < len; i++) {
        next[i] = (uint32_t)(i + 1);
        prev[i] = i ? (uint32_t)(i - 1) : 0;
        h.where[i] = NOWHERE;
    }
    /* Pairs in offset order are already a heap when their ranks are equal;
     * in general heapify bottom-up, O(len). */
    for (size_t i = 0; i + 1 < len; i++) {
        int32_t rank = ranks_lookup(r, piece + i, 2);
        if (rank != RANKS_NONE)
            heap_place(&h, h.n++, key_of(rank, i));
    }
    for (size_t i = h.n; i-- > 0;)
        sift_down(&h, i, h.keys[i]);
    count = (int64_t)len;
    while (h.n) {
        size_t at = (uint32_t)h.keys[0];
        size_t gone = next[at];
        size_t after = next[gone];
        /* Part gone joins part at: its own pair leaves the heap. */
        heap_set(&h, gone, RANKS_NONE);
        next[at] = (uint32_t)after;
        if (after < len)
            prev[after] = (uint32_t)at;
        count--;
        heap_set(&h, at, after < len ? ranks_lookup(r, piece + at, next[after] - at) : RANKS_NONE);
        if (at > 0) {
            size_t before = prev[at];
            heap_set(&h, before, ranks_lookup(r, piece + before, after - before));
        }
    }
out:
    free(next);
    free(prev);
    free(h.keys);
    free(h.where);
    return count;
}

int64_t bpe_count(const ranks *r, const unsigned char *piece, size_t len)
{
    return len <= BPE_SHORT_MAX ? bpe_count_rescan(r, piece, len) : bpe_count_heap(r, piece, len);
}
