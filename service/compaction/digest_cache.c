/* The spilled texts' digests: a hash table of entries on a list from the
 * most to the least recently used, under one lock. See digest_cache.h. */
#include "digest_cache.h"

#include "bytemap.h"
#include "sha256.h"
#include "use_list.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096
/* Bytes of the text read into its lookup hash from each of its start, middle
 * and end: the hash only spreads the entries, so a few samples do. */
#define SAMPLE 32

typedef struct entry {
    use_node use;        /* first: the use list's node is the entry */
    struct entry *chain; /* the next in its bucket */
    uint64_t hash;
    size_t len;
    size_t bytes;
    char hex[SHA256_HEX_LEN + 1];
    char text[]; /* the text, the proof of a hit */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *buckets[BUCKETS];
static use_list uses;
static size_t max_bytes = DIGEST_CACHE_DEFAULT_BYTES, used_bytes, entries;
static uint64_t hits, misses;

/* The keyed hash of the length and three samples: texts that differ only
 * elsewhere share it, and are then told apart by their bytes. */
static uint64_t lookup_hash(const char *text, size_t len)
{
    unsigned char s[sizeof(uint64_t) + 3 * SAMPLE];
    size_t n = sizeof(uint64_t);
    uint64_t len64 = len;
    memcpy(s, &len64, sizeof(len64));
    if (len <= 3 * SAMPLE) {
        memcpy(s + n, text, len);
        n += len;
    } else {
        memcpy(s + n, text, SAMPLE);
        memcpy(s + n + SAMPLE, text + len / 2 - SAMPLE / 2, SAMPLE);
        memcpy(s + n + 2 * SAMPLE, text + len - SAMPLE, SAMPLE);
        n += 3 * SAMPLE;
    }
    return bytemap_hash(s, n);
}

/* The link that points to the entry of this hash and length, or to the
 * chain's end: one entry at most per hash and length, so that a lookup
 * compares one text at most, however many texts share the samples. */
static entry **find(uint64_t hash, size_t len)
{
    entry **at = &buckets[hash % BUCKETS];
    while (*at && ((*at)->hash != hash || (*at)->len != len))
        at = &(*at)->chain;
    return at;
}

/* Unlinks the entry *at points to and frees it. */
static void drop(entry **at)
{
    entry *e = *at;
    *at = e->chain;
    use_list_remove(&uses, &e->use);
    used_bytes -= e->bytes;
    entries--;
    free(e);
}

static void drop_oldest(void)
{
    const entry *e = (const entry *)uses.oldest;
    drop(find(e->hash, e->len));
}

void digest_cache_configure(size_t bytes)
{
    pthread_mutex_lock(&lock);
    max_bytes = bytes;
    while (uses.oldest && used_bytes > max_bytes)
        drop_oldest();
    pthread_mutex_unlock(&lock);
}

/* Looks text up: 1 with its digest written to hex, 0 when absent, -1 when
 * it is too long to be kept. */
static int lookup(uint64_t hash, const char *text, size_t len, char *hex)
{
    int hit = -1;
    pthread_mutex_lock(&lock);
    if (sizeof(entry) + len <= max_bytes / 16) {
        entry *e = *find(hash, len);
        hit = e && memcmp(e->text, text, len) == 0;
        if (hit) {
            use_list_touch(&uses, &e->use);
            memcpy(hex, e->hex, sizeof(e->hex));
        }
        hits += (uint64_t)hit;
        misses += (uint64_t)!hit;
    }
    pthread_mutex_unlock(&lock);
    return hit;
}

/* Keeps text's digest, in place of the entry of the same hash and length,
 * if it fits the bound: the least recently used ones make room. */
static void keep(uint64_t hash, const char *text, size_t len, const char *hex)
{
    size_t bytes = sizeof(entry) + len;
    entry *e = malloc(bytes);
    if (!e)
        return;
    e->hash = hash;
    e->len = len;
    e->bytes = bytes;
    memcpy(e->hex, hex, sizeof(e->hex));
    memcpy(e->text, text, len);
    pthread_mutex_lock(&lock);
    entry **at = find(hash, len);
    if (*at)
        drop(at);
    if (bytes <= max_bytes / 16) {
        while (uses.oldest && used_bytes + bytes > max_bytes)
            drop_oldest();
        at = find(hash, len);
        e->chain = *at;
        *at = e;
        use_list_first(&uses, &e->use);
        used_bytes += bytes;
        entries++;
        e = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(e);
}

void digest_cache_sha256_hex(const char *text, size_t len, char *hex)
{
    if (len == 0) {
        /* Nothing to keep, and text may be NULL (a unit without one). */
        sha256_hex(text, len, hex);
        return;
    }
    uint64_t hash = lookup_hash(text, len);
    int found = lookup(hash, text, len, hex);
    if (found == 1)
        return;
    sha256_hex(text, len, hex);
    if (found == 0)
        keep(hash, text, len, hex);
}

void digest_cache_stats(digest_cache_stats_t *out)
{
    pthread_mutex_lock(&lock);
    out->entries = entries;
    out->bytes = used_bytes;
    out->hits = hits;
    out->misses = misses;
    pthread_mutex_unlock(&lock);
}
