/* Byte-pair merge counting: tiktoken's rescanning loop for short pieces, a
 * heap of adjacent pairs for longer ones and rank buckets swept in offset
 * order for the longest, so that a megabyte with no pre-tokenizer split (one
 * repeated character, a run of digits in another script, base64) costs
 * O(n log n) instead of tiktoken's O(n^2). */
#include "bpe.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- Long pieces: rank buckets ---- */

/* One bucket per rank that has pairs: the offsets of the parts whose pair
 * with their successor had that rank when it was formed. An entry is stale
 * once its part is gone or its pair has changed (a part's pair only ever
 * grows, so it never has the same rank twice); stale entries are skipped
 * when their bucket is swept, never looked for.
 *
 * The lowest rank with a bucket is found in a bitmap over the ranks, and
 * its bucket is swept in increasing offset, leftmost first, as tiktoken
 * merges equal ranks. A merge of the pair at `at` into token T makes pairs
 * that strictly contain this T, so none of T's rank: a bucket receives
 * nothing while it is swept. A new pair may rank lower than T, though; then
 * the sweep pauses after that merge while the lower buckets are swept
 * first, the global minimum as ever. Those buckets were empty when the
 * pause began, so each pair merged during the pause contains this T, and so
 * does each pair made by such a merge: still none of T's rank, and the
 * paused bucket's remainder is still in order when its sweep resumes.
 * Between sweeps entries come in offset order in every text and table
 * tried (the merges that make a pair of a given token are all of one rank,
 * which are made left to right), but nothing here relies on it: a bucket
 * that took an entry left of the one before is sorted when its sweep
 * starts.
 *
 * Sweeps run through memory in increasing offset and know the entries
 * ahead, so they prefetch the parts the entries a little further on will
 * touch: on a megabyte the parts are out of the L2 cache, and a heap's next
 * minimum is not known ahead. */

/* A part, named by the offset where it starts: where the next part starts
 * (len for the last), where the previous one does, and the rank of its
 * pair with the next part (RANKS_NONE: not a token, or the part is gone). */
typedef struct {
    uint32_t next, prev;
    int32_t rank;
} bk_part;

/* Entries are kept in chunks of 16 words from one pool: CHUNK_ITEMS
 * offsets, then how many of them are filled, then the index of the next
 * chunk of the bucket (0: none; chunk 0 is never used): 64 bytes. */
#define CHUNK_ITEMS 14
#define CHUNK_COUNT 14
#define CHUNK_NEXT 15
#define CHUNK_WORDS 16

/* A rank's bucket. */
typedef struct {
    uint32_t head, tail; /* its chunks, 0 when it is empty */
    uint8_t pos;         /* entries of the head chunk already swept */
    uint8_t unsorted;    /* an entry was added left of the one before */
    uint8_t open;        /* its sweep has begun (perhaps paused) */
} bk_bucket;

/* Bitmap levels: 64^6 covers every int32 rank. */
#define BK_LEVELS 6

typedef struct {
    bk_part *part;
    uint32_t *pool;
    size_t chunks, cap;
    uint32_t free_chunks;      /* a list through CHUNK_NEXT */
    bk_bucket *bucket;         /* by rank */
    uint64_t *bits[BK_LEVELS]; /* bits[0]: one per rank with a non-empty bucket; each level above:
                                  one per non-zero word below */
    int levels;
    uint32_t *scratch;
    size_t scratch_cap;
} bk_state;

static uint32_t *chunk_at(const bk_state *s, uint32_t c)
{
    return s->pool + (size_t)c * CHUNK_WORDS;
}

static uint32_t chunk_new(bk_state *s)
{
    uint32_t c = s->free_chunks;
    if (c) {
        s->free_chunks = chunk_at(s, c)[CHUNK_NEXT];
    } else {
        if (s->chunks == s->cap) {
            uint32_t *p = realloc(s->pool, 2 * s->cap * CHUNK_WORDS * sizeof *p);
            if (!p)
                return 0;
            s->pool = p;
            s->cap *= 2;
        }
        c = (uint32_t)s->chunks++;
    }
    uint32_t *ch = chunk_at(s, c);
    ch[CHUNK_COUNT] = 0;
    ch[CHUNK_NEXT] = 0;
    return c;
}

static void chunk_free(bk_state *s, uint32_t c)
{
    chunk_at(s, c)[CHUNK_NEXT] = s->free_chunks;
    s->free_chunks = c;
}

static void bits_set(bk_state *s, uint32_t rank)
{
    size_t i = rank;
    for (int l = 0; l < s->levels; l++, i /= 64) {
        uint64_t w = s->bits[l][i / 64];
        s->bits[l][i / 64] = w | (uint64_t)1 << (i % 64);
        if (w)
            return;
    }
}

static void bits_clear(bk_state *s, uint32_t rank)
{
    size_t i = rank;
    for (int l = 0; l < s->levels; l++, i /= 64)
        if ((s->bits[l][i / 64] &= ~((uint64_t)1 << (i % 64))) != 0)
            return;
}

/* The lowest rank with a non-empty bucket, or RANKS_NONE. */
static int32_t bits_min(const bk_state *s)
{
    size_t i = 0;
    for (int l = s->levels; l-- > 0;) {
        uint64_t w = s->bits[l][i];
        if (!w)
            return RANKS_NONE;
        i = i * 64 + (size_t)__builtin_ctzll(w);
    }
    return (int32_t)i;
}

/* Adds the part at `at` to the bucket of `rank`. */
static int bk_push(bk_state *s, int32_t rank, uint32_t at)
{
    bk_bucket *b = &s->bucket[rank];
    /* No bucket takes entries during its sweep (see above). */
    assert(!b->open);
    uint32_t t = b->tail;
    if (!t) {
        if (!(t = chunk_new(s)))
            return -1;
        b->head = b->tail = t;
        b->pos = 0;
        b->unsorted = 0;
        bits_set(s, (uint32_t)rank);
    } else {
        uint32_t *ch = chunk_at(s, t);
        b->unsorted |= at < ch[ch[CHUNK_COUNT] - 1];
        if (ch[CHUNK_COUNT] == CHUNK_ITEMS) {
            uint32_t c = chunk_new(s);
            if (!c)
                return -1;
            chunk_at(s, t)[CHUNK_NEXT] = c;
            b->tail = t = c;
        }
    }
    uint32_t *ch = chunk_at(s, t);
    ch[ch[CHUNK_COUNT]++] = at;
    return 0;
}

static int offset_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Set by bpe_fill_backwards(): the first pairs go into the buckets right to
 * left, so that every bucket of them takes bk_sort() below. */
static int fill_backwards;

void bpe_fill_backwards(int on)
{
    fill_backwards = on;
}

/* Puts bucket b's entries in increasing order of offset (see above: a
 * safeguard, which bpe_fill_backwards() lets the tests reach). */

static int bk_sort(bk_state *s, bk_bucket *b)
{
    size_t n = 0;
    for (uint32_t c = b->head; c; c = chunk_at(s, c)[CHUNK_NEXT])
        n += chunk_at(s, c)[CHUNK_COUNT];
    if (n > s->scratch_cap) {
        size_t cap = n > 2 * s->scratch_cap ? n : 2 * s->scratch_cap;
        uint32_t *p = realloc(s->scratch, cap * sizeof *p);
        if (!p)
            return -1;
        s->scratch = p;
        s->scratch_cap = cap;
    }
    n = 0;
    for (uint32_t c = b->head; c; c = chunk_at(s, c)[CHUNK_NEXT]) {
        const uint32_t *ch = chunk_at(s, c);
        memcpy(s->scratch + n, ch, ch[CHUNK_COUNT] * sizeof *ch);
        n += ch[CHUNK_COUNT];
    }
    qsort(s->scratch, n, sizeof *s->scratch, offset_cmp);
    n = 0;
    for (uint32_t c = b->head; c; c = chunk_at(s, c)[CHUNK_NEXT]) {
        uint32_t *ch = chunk_at(s, c);
        memcpy(ch, s->scratch + n, ch[CHUNK_COUNT] * sizeof *ch);
        n += ch[CHUNK_COUNT];
    }
    b->unsorted = 0;
    return 0;
}

/* How many entries ahead of the one being merged a sweep asks for the
 * cache lines of, one entry's lines at a time. Asking for a whole chunk's
 * at once (56 lines) was much slower when memory is slow, most likely
 * because the core's queue of misses overflows and prefetches are dropped:
 * on a megabyte of random letters, with another core walking 64 MB at
 * random, 70-90 ns/byte against 35-45. */
#define LOOKAHEAD 16

/* Asks for the lines the merge of the entry at `at` reads: its part, the
 * lines either side (its neighbours' parts are close by) and its bytes. */
static void prefetch_entry(const bk_state *s, const unsigned char *piece, uint32_t at)
{
    uintptr_t p = (uintptr_t)&s->part[at]; /* a prefetch of no memory is harmless */
    __builtin_prefetch((const void *)(p - 64));
    __builtin_prefetch((const void *)p);
    __builtin_prefetch((const void *)(p + 64));
    __builtin_prefetch(piece + at);
}

/* Asks for the lines of the entry at place *k of chunk c (and, at a
 * chunk's first entry, for the chunk after it); moves *k on and returns
 * the chunk of the next place, 0 past the bucket's last entry. */
static uint32_t prefetch_step(const bk_state *s, const unsigned char *piece, uint32_t c,
                              uint32_t *k)
{
    const uint32_t *ch = chunk_at(s, c);
    if (*k == 0)
        __builtin_prefetch(chunk_at(s, ch[CHUNK_NEXT]));
    prefetch_entry(s, piece, ch[*k]);
    if (++*k < ch[CHUNK_COUNT])
        return c;
    *k = 0;
    return ch[CHUNK_NEXT];
}

static int bk_init(bk_state *s, const ranks *r, size_t len)
{
    size_t words = ranks_size(r);
    do {
        words = (words + 63) / 64;
        if (!(s->bits[s->levels++] = calloc(words ? words : 1, sizeof(uint64_t))))
            return -1;
    } while (words > 1);
    s->part = malloc(len * sizeof *s->part);
    /* Room for the first pairs (len / CHUNK_ITEMS chunks) and a partly
     * filled chunk per bucket; more when needed. Untouched room costs no
     * memory. */
    s->cap = len / 8 + 64;
    s->chunks = 1;
    s->pool = malloc(s->cap * CHUNK_WORDS * sizeof *s->pool);
    s->bucket = calloc(ranks_size(r) ? ranks_size(r) : 1, sizeof *s->bucket);
    return s->part && s->pool && s->bucket ? 0 : -1;
}

static void bk_fini(bk_state *s)
{
    free(s->part);
    free(s->pool);
    free(s->bucket);
    free(s->scratch);
    for (int l = 0; l < BK_LEVELS; l++)
        free(s->bits[l]);
}

/* Merges part gone = part[at].next into part at; returns the number of the
 * new pairs' ranks below `rank` (so that the sweep of `rank` must pause), or
 * -1 when out of memory. */
static int bk_merge(bk_state *s, const ranks *r, const unsigned char *piece, uint32_t len,
                    uint32_t at, int32_t rank)
{
    bk_part *part = s->part;
    uint32_t gone = part[at].next, after = part[gone].next;
    part[gone].rank = RANKS_NONE;
    part[at].next = after;
    int lower = 0;
    int32_t k = RANKS_NONE;
    if (after < len) {
        part[after].prev = at;
        k = ranks_lookup(r, piece + at, part[after].next - at);
    }
    part[at].rank = k;
    if (k != RANKS_NONE) {
        if (bk_push(s, k, at) != 0)
            return -1;
        lower += k < rank;
    }
    if (at > 0) {
        uint32_t before = part[at].prev;
        k = ranks_lookup(r, piece + before, after - before);
        part[before].rank = k;
        if (k != RANKS_NONE) {
            if (bk_push(s, k, before) != 0)
                return -1;
            lower += k < rank;
        }
    }
    return lower;
}

int64_t bpe_count_buckets(const ranks *r, const unsigned char *piece, size_t len)
{
    if (len <= 1)
        return (int64_t)len;
    if (len >= UINT32_MAX)
        return -1;
    bk_state s = {0};
    int64_t count = -1;
    if (bk_init(&s, r, len) != 0)
        goto out;
    const int backwards = fill_backwards;
    for (size_t j = 0; j < len; j++) {
        size_t i = backwards ? len - 1 - j : j;
        s.part[i].next = (uint32_t)(i + 1);
        s.part[i].prev = i ? (uint32_t)(i - 1) : 0;
        s.part[i].rank = i + 1 < len ? ranks_lookup(r, piece + i, 2) : RANKS_NONE;
        if (s.part[i].rank != RANKS_NONE && bk_push(&s, s.part[i].rank, (uint32_t)i) != 0)
            goto out;
    }
    size_t n = len;
    for (int32_t rank; (rank = bits_min(&s)) != RANKS_NONE;) {
        bk_bucket *b = &s.bucket[rank];
        if (!b->open) {
            if (b->unsorted && bk_sort(&s, b) != 0)
                goto out;
            b->open = 1;
        }
        uint32_t c = b->head, pos = b->pos;
        /* A second place, LOOKAHEAD entries on (chunk 0: past the last). */
        uint32_t ahead = c, ahead_k = pos;
        if (ahead_k == chunk_at(&s, c)[CHUNK_COUNT]) {
            ahead = chunk_at(&s, c)[CHUNK_NEXT];
            ahead_k = 0;
        }
        for (int k = 0; k < LOOKAHEAD && ahead; k++)
            ahead = prefetch_step(&s, piece, ahead, &ahead_k);
        int lower = 0;
        while (c && !lower) {
            uint32_t *ch = chunk_at(&s, c);
            if (pos == ch[CHUNK_COUNT]) {
                uint32_t done = c;
                c = ch[CHUNK_NEXT];
                pos = 0;
                chunk_free(&s, done);
                continue;
            }
            if (ahead)
                ahead = prefetch_step(&s, piece, ahead, &ahead_k);
            uint32_t at = ch[pos++];
            if (s.part[at].rank != rank)
                continue; /* stale */
            n--;
            if ((lower = bk_merge(&s, r, piece, (uint32_t)len, at, rank)) < 0)
                goto out;
        }
        b->head = c;
        b->pos = (uint8_t)pos;
        if (!c) {
            b->tail = 0;
            b->open = 0;
            bits_clear(&s, (uint32_t)rank);
        }
    }
    count = (int64_t)n;
out:
    bk_fini(&s);
    return count;
}

int64_t bpe_count(const ranks *r, const unsigned char *piece, size_t len)
{
    if (len <= BPE_SHORT_MAX)
        return bpe_count_rescan(r, piece, len);
    return len <= BPE_HEAP_MAX ? bpe_count_heap(r, piece, len) : bpe_count_buckets(r, piece, len);
}
