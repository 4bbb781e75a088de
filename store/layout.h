/* The store's data layout in Redis: key names, hash fields, the metadata
 * record and the scripts that write them. Pure: no I/O, no connection, so
 * every implementation of store_ops (one Redis, a cluster) shares one
 * layout. Internal to store/. */
#ifndef COMPACTD_STORE_LAYOUT_H
#define COMPACTD_STORE_LAYOUT_H

#include "store.h"

#include <stddef.h>

/* Every key of a session shares the hash tag {ns}; ns holds no braces, so
 * the tag is exactly the namespace and no unit key can reach into it (and,
 * on a cluster, every key of a session lives in one slot). */
typedef struct {
    char text[300], meta[300], events[300];
} layout_keys;

/* Fills k for the session ns ("tenant:session"). Returns 0, or -1 when ns
 * is too long for the key buffers. */
int layout_keys_make(const char *ns, layout_keys *k);

/* A spill's field in the text and meta hashes: the fixed-width digest
 * first, so any key bytes may follow without ambiguity. Returns a new
 * buffer (not NUL-terminated, *len long) the caller frees, or NULL. */
char *layout_field(const char *sha256, const char *key, size_t key_len, size_t *len);

/* A spill's metadata value: "<class> <tokens> <created_at>", then " " and the
 * unit's metadata (a JSON object) when it has any. Returns a new
 * string the caller frees, or NULL. */
char *layout_meta(const store_spill *sp, const char *created_at);

/* Fills a record (text NULL) from a meta field and value; returns 0, or -1
 * when either is malformed or memory runs out (then out is cleared). */
int layout_record_from_meta(const char *field, size_t flen, const char *meta, size_t mlen,
                            store_record *out);

/* Oldest first by created_at, ties by key then digest: the listing order. */
int layout_record_cmp(const void *a, const void *b);

/* Returns a new NUL-terminated copy of len bytes, or NULL. */
char *layout_dup(const char *p, size_t len);

/* One compaction's writes as one script, which Redis runs atomically like
 * MULTI/EXEC, with one thing EXEC cannot do: refuse to run late. When a
 * command times out, compactd answers 503, but the bytes are already in
 * Redis's socket buffer; a Redis that was stalled (SIGSTOP, a long fork, a
 * paused VM) would run them when it wakes and store spills nobody was told
 * about. So the script first checks Redis's clock against a deadline that
 * ends before compactd stops waiting, and writes nothing past it.
 * KEYS: text, meta, events. ARGV: deadline (us, Redis time), event (may be
 * empty), then field, text, meta for each spill. Returns 1 when it wrote,
 * 0 when it was too late. */
extern const char layout_commit_script[];

enum { LAYOUT_COMMIT_KEYS = 3, LAYOUT_COMMIT_FIXED_ARGS = 2, LAYOUT_COMMIT_ARGS_PER_SPILL = 3 };

#endif
