/* jansson's allocation functions: request bodies' trees in regions, the
 * rest malloc()ed. See json_region.h. */
#include "json_region.h"

#include "answer_account.h"
#include "json_read.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer each value's header word, and every byte of a
 * block not yet handed out, is poisoned: an access past a value's end
 * still stops the test that made it. */
#if defined(__SANITIZE_ADDRESS__)
#define REGION_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REGION_ASAN 1
#endif
#endif
#ifdef REGION_ASAN
#include <sanitizer/asan_interface.h>
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define NO_ASAN
#endif

/* Every pointer jansson gets from here has one word before it: the region
 * it was cut from, or NULL when it was malloc()ed (then 16 bytes lie
 * before it, so that it keeps malloc()'s alignment). A region value is
 * aligned to 8, which is all jansson's values need. */
#define WORD sizeof(void *)
#define PLAIN_HEAD 16
/* jansson's tree of a request body takes 1.5 to 4 times its bytes (more
 * for bodies of many small values), plus what the parse left behind (its
 * token buffer as it grew): the first block holds four times the body, and
 * each further one the body's size again, so that what is never used stays
 * under one block. */
#define FIRST_BLOCK_MIN (16u << 10)
#define NEXT_BLOCK_MIN (64u << 10)

typedef struct region_block {
    struct region_block *next;
    size_t size; /* of the whole block */
} region_block;

typedef struct json_region {
    region_block *blocks;
    char *at, *end;   /* what is left of the newest block */
    size_t next_size; /* of the next block */
    size_t bytes;
    size_t used;                   /* bytes cut from the blocks */
    size_t held;                   /* of held_from, given back on release */
    const answer_account *held_from;
} json_region;

/* The region the thread's json_region_loadb() is filling, if any. */
static _Thread_local json_region *filling;

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* ---- Blocks ---- */

/* Adds a block that holds at least need bytes. 0, or -1. */
static int region_grow(json_region *r, size_t need)
{
    size_t size = r->next_size;
    if (need > SIZE_MAX - sizeof(region_block) - 8)
        return -1;
    if (size < need + sizeof(region_block))
        size = round8(need + sizeof(region_block));
    region_block *b = malloc(size);
    if (!b)
        return -1;
    b->next = r->blocks;
    b->size = size;
    r->blocks = b;
    r->at = (char *)(b + 1);
    r->end = (char *)b + size;
    r->bytes += size;
    ASAN_POISON_MEMORY_REGION(r->at, (size_t)(r->end - r->at));
    return 0;
}

static void *region_take(json_region *r, size_t n)
{
    if (n > SIZE_MAX / 2)
        return NULL;
    size_t need = WORD + round8(n);
    if ((size_t)(r->end - r->at) < need && region_grow(r, need) != 0)
        return NULL;
    char *p = r->at + WORD;
    r->at += need;
    r->used += need;
    ASAN_UNPOISON_MEMORY_REGION(p - WORD, WORD);
    *(json_region **)(void *)(p - WORD) = r;
    ASAN_POISON_MEMORY_REGION(p - WORD, WORD);
    ASAN_UNPOISON_MEMORY_REGION(p, n);
    return p;
}

static void region_free(json_region *r)
{
    region_block *b = r->blocks;
    while (b) {
        region_block *next = b->next;
        ASAN_UNPOISON_MEMORY_REGION(b, b->size);
        free(b);
        b = next;
    }
}

/* A region lives in its first block. */
static json_region *region_new(size_t body_len)
{
    if (body_len > SIZE_MAX / 8)
        return NULL;
    size_t first = 4 * body_len + 4096;
    json_region tmp = {.next_size = round8(first < FIRST_BLOCK_MIN ? FIRST_BLOCK_MIN : first)};
    if (region_grow(&tmp, sizeof(json_region)) != 0)
        return NULL;
    tmp.next_size = round8(body_len < NEXT_BLOCK_MIN ? NEXT_BLOCK_MIN : body_len);
    json_region *r = (json_region *)tmp.at;
    ASAN_UNPOISON_MEMORY_REGION(r, sizeof(*r));
    *r = tmp;
    r->at += round8(sizeof(json_region));
    return r;
}

/* ---- jansson's functions ---- */

/* The word is poisoned under AddressSanitizer: read where it does not look
 * (a plain load, which memcpy() might not be). */
NO_ASAN static json_region *region_of_ptr(const void *p)
{
    return *(json_region *const *)(const void *)((const char *)p - WORD);
}

static void *hook_malloc(size_t n)
{
    if (filling)
        return region_take(filling, n);
    if (n > SIZE_MAX - PLAIN_HEAD)
        return NULL;
    char *base = malloc(PLAIN_HEAD + n);
    if (!base)
        return NULL;
    *(json_region **)(void *)(base + PLAIN_HEAD - WORD) = NULL;
    ASAN_POISON_MEMORY_REGION(base, PLAIN_HEAD);
    return base + PLAIN_HEAD;
}

/* A region's values are freed with it, never one by one. */
static void hook_free(void *p)
{
    if (!p || region_of_ptr(p))
        return;
    char *base = (char *)p - PLAIN_HEAD;
    ASAN_UNPOISON_MEMORY_REGION(base, PLAIN_HEAD);
    free(base);
}

__attribute__((constructor)) static void json_region_install(void)
{
    json_set_alloc_funcs(hook_malloc, hook_free);
}

/* ---- Documents ---- */

/* As jansson reports running out of memory: the code is the text's last
 * byte. */
static void region_out_of_memory(json_error_t *error)
{
    if (!error)
        return;
    memset(error, 0, sizeof(*error));
    snprintf(error->text, sizeof(error->text), "out of memory");
    error->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_out_of_memory;
}

json_t *json_region_loadb(const char *buf, size_t len, size_t flags, json_error_t *error)
{
    json_region *r = region_new(len);
    if (!r) {
        region_out_of_memory(error);
        return NULL;
    }
    filling = r;
    json_t *doc = json_read(buf, len, flags);
    if (!doc) {
        /* What the fast reader gives up on, jansson reads (or words the
         * error of) in a region of its own. */
        region_free(r);
        if (!(r = region_new(len))) {
            filling = NULL;
            region_out_of_memory(error);
            return NULL;
        }
        filling = r;
        doc = json_loadb(buf, len, flags, error);
    }
    filling = NULL;
    if (!doc)
        region_free(r);
    return doc;
}

void json_region_release(json_t *doc)
{
    if (!doc)
        return;
    json_region *r = region_of_ptr(doc);
    /* The region goes with the document: no other reference may remain. */
    assert(!r || doc->refcount == 1);
    json_decref(doc);
    if (!r)
        return;
    /* On another thread, or once the request is done, its account settles
     * what is held instead. */
    if (r->held && answer_current() == r->held_from)
        answer_give(r->held);
    region_free(r);
}

void json_region_hold(json_t *doc, size_t n)
{
    json_region *r = doc ? region_of_ptr(doc) : NULL;
    if (!r) {
        answer_give(n);
        return;
    }
    r->held = n;
    r->held_from = answer_current();
}

size_t json_region_used(const json_t *doc)
{
    json_region *r = doc ? region_of_ptr(doc) : NULL;
    return r ? r->used : 0;
}

void json_text_free(char *text)
{
    hook_free(text);
}

char *json_dumps_plain(const json_t *v, size_t flags)
{
    size_t len = json_dumpb(v, NULL, 0, flags);
    char *out = len ? malloc(len + 1) : NULL;
    if (!out || json_dumpb(v, out, len, flags) != len) {
        free(out);
        return NULL;
    }
    out[len] = '\0';
    return out;
}

size_t json_region_bytes(const json_t *doc)
{
    json_region *r = doc ? region_of_ptr(doc) : NULL;
    return r ? r->bytes : 0;
}
