/* The price of jansson's tree of a JSON text, reckoned value by value from
 * the raw bytes: what the shape guard (json_shape.c) takes from the answer
 * account before a tree is built, and what a decoder that builds no tree
 * (api/codec/requests/json_direct.c) holds in its stead, so that a request
 * is refused or admitted by the same figure whichever way it is read.
 *
 * What jansson 2.14 allocates for each value, as a region cuts it (a word
 * before each allocation, rounded to 8): json_region_cases holds the price
 * to the region's real use. Raw lengths are priced, which escapes only
 * shorten. An empty object costs 216 bytes, so 23 MiB of "{}," would be
 * 1.7 GB of tree; true, false and null are jansson's shared values. */
#ifndef COMPACTD_JSON_PRICE_H
#define COMPACTD_JSON_PRICE_H

#include <stddef.h>
#include <stdint.h>

#define TREE_STRING 32   /* json_string_t */
#define TREE_NUMBER 24   /* json_integer_t, json_real_t */
#define TREE_OBJECT 72   /* json_object_t, its hashtable inside */
#define TREE_PAIR 56     /* a member's hashtable pair, before its name */
#define TREE_BUCKET 16   /* a hashtable bucket */
#define TREE_ARRAY 40    /* json_array_t */
#define TREE_TABLE_MIN 8 /* the first buckets and array slots */

typedef struct {
    size_t tree_bytes; /* what jansson's tree of the text takes */
    size_t text_bytes; /* of tree_bytes, the strings' own bytes */
    size_t longest;    /* the longest string, raw */
} json_price;

static inline size_t json_price_cut(size_t n)
{
    return sizeof(void *) + ((n + 7) & ~(size_t)7);
}

/* Sizes only add: a sum past SIZE_MAX stays there and is refused. */
static inline void json_price_add(json_price *p, size_t n)
{
    p->tree_bytes = p->tree_bytes > SIZE_MAX - n ? SIZE_MAX : p->tree_bytes + n;
}

/* A string value of len raw bytes (between its quotes). */
static inline void json_price_string(json_price *p, size_t len)
{
    json_price_add(p, json_price_cut(TREE_STRING) + json_price_cut(len + 1));
    p->text_bytes += len;
    if (len > p->longest)
        p->longest = len;
}

/* A member's pair, its name len raw bytes. */
static inline void json_price_member(json_price *p, size_t len)
{
    json_price_add(p, json_price_cut(TREE_PAIR + len + 1));
}

static inline void json_price_number(json_price *p)
{
    json_price_add(p, json_price_cut(TREE_NUMBER));
}

/* A container of items elements or members: its struct and every table it
 * grew through (a region keeps the ones it outgrew). Its members' pairs
 * are priced as their names are read. */
static inline void json_price_container(json_price *p, int object, size_t items)
{
    size_t slot = object ? TREE_BUCKET : sizeof(void *);
    json_price_add(p, json_price_cut(object ? TREE_OBJECT : TREE_ARRAY));
    for (size_t cap = TREE_TABLE_MIN;; cap *= 2) {
        json_price_add(p, json_price_cut(cap * slot));
        if (cap >= items || cap > SIZE_MAX / 4)
            break;
    }
}

/* Once the text is read: the reader's buffer of a string with escapes
 * doubles up to twice the longest. */
static inline void json_price_finish(json_price *p)
{
    json_price_add(p, 2 * p->longest);
    p->text_bytes += 2 * p->longest;
}

/* The nodes of a finished price: the tree without the strings' own bytes,
 * which the body's bytes stand for (the body budget holds them). */
static inline size_t json_price_nodes(const json_price *p)
{
    return p->tree_bytes - p->text_bytes;
}

#endif
