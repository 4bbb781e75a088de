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

/* A heap entry: a pair's rank above the byte offset where its left part
 * starts, so that the smallest key is the lowest rank, leftmost first. An
 * entry is stale once its part is gone or the part's pair rank changed. */
static uint64_t key_of(int32_t rank, size_t at)
{
    return (uint64_t)(uint32_t)rank << 32 | (uint32_t)at;
}

typedef struct {
    uint64_t *keys;
    size_t n;
} pair_heap;

static void heap_push(pair_heap *h, uint64_t key)
{
    size_t i = h->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (h->keys[up] <= key)
            break;
        h->keys[i] = h->keys[up];
        i = up;
    }
    h->keys[i] = key;
}

static uint64_t heap_pop(pair_heap *h)
{
    uint64_t top = h->keys[0], last = h->keys[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->keys[c + 1] < h->keys[c])
            c++;
        if (last <= h->keys[c])
            break;
        h->keys[i] = h->keys[c];
        i = c;
    }
    if (h->n)
        h->keys[i] = last;
    return top;
}

int64_t bpe_count_heap(const ranks *r, const unsigned char *piece, size_t len)
{
    if (len <= 1)
        return (int64_t)len;
    if (len >= UINT32_MAX)
        return -1;
    /* Parts are named by the offset where they start. next[i] is where the
     * part after part i starts (len for the last); prev[i] likewise, and
     * pair[i] the rank of part i merged with its successor. A merged-away
     * part gets prev == UINT32_MAX. Each merge pushes at most two entries, so
     * the heap never holds more than 3 * len. */
    uint32_t *next = malloc(len * sizeof *next);
    uint32_t *prev = malloc(len * sizeof *prev);
    int32_t *pair = malloc(len * sizeof *pair);
    pair_heap h = {malloc(3 * len * sizeof *h.keys), 0};
    int64_t count = -1;
    if (!next || !prev || !pair || !h.keys)
        goto out;
    for (size_t i = 0; i < len; i++) {
        next[i] = (uint32_t)(i + 1);
        prev[i] = i ? (uint32_t)(i - 1) : 0;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        pair[i] = ranks_lookup(r, piece + i, 2);
        if (pair[i] != RANKS_NONE)
            heap_push(&h, key_of(pair[i], i));
    }
    pair[len - 1] = RANKS_NONE;
    count = (int64_t)len;
    while (h.n) {
        uint64_t key = heap_pop(&h);
        size_t at = (uint32_t)key;
        int32_t rank = (int32_t)(key >> 32);
        if (prev[at] == UINT32_MAX || pair[at] != rank)
            continue;
        size_t gone = next[at];
        size_t after = next[gone];
        next[at] = (uint32_t)after;
        if (after < len)
            prev[after] = (uint32_t)at;
        prev[gone] = UINT32_MAX;
        count--;
        pair[at] = after < len ? ranks_lookup(r, piece + at, next[after] - at) : RANKS_NONE;
        if (pair[at] != RANKS_NONE)
            heap_push(&h, key_of(pair[at], at));
        if (at > 0) {
            size_t before = prev[at];
            pair[before] = ranks_lookup(r, piece + before, after - before);
            if (pair[before] != RANKS_NONE)
                heap_push(&h, key_of(pair[before], before));
        }
    }
out:
    free(next);
    free(prev);
    free(pair);
    free(h.keys);
    return count;
}

int64_t bpe_count(const ranks *r, const unsigned char *piece, size_t len)
{
    return len <= BPE_SHORT_MAX ? bpe_count_rescan(r, piece, len) : bpe_count_heap(r, piece, len);
}
