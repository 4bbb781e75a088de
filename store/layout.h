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

/* Fills a record (text NULL) from a meta field and value (of three or four
 * words); returns 0, or -1 when either is malformed or memory runs out
 * (then out is cleared). */
int layout_record_from_meta(const char *field, size_t flen, const char *meta, size_t mlen,
                            store_record *out);

/* A meta value's place in the spill order: its fourth word "<a>-<b>"
 * (then the unit's metadata, if any, which never starts with a digit).
 * Returns 1 with *a and *b set, or 0 for a record written before compactd
 * kept the order (such records sort before every other). */
int layout_meta_order(const char *meta, size_t mlen, unsigned long long *a, unsigned long long *b);

/* Oldest first by created_at, ties by key then digest: the listing order,
 * and the order among records written before the spill order was kept. */
int layout_record_cmp(const void *a, const void *b);

/* Returns a new NUL-terminated copy of len bytes, or NULL. */
char *layout_dup(const char *p, size_t len);

/* One compaction's writes as one script, which Redis runs atomically like
 * MULTI/EXEC, with one thing EXEC cannot do: refuse to run late. When a
 * command times out, compactd stops waiting, but the bytes are already in
 * Redis's socket buffer; a Redis that was stalled (SIGSTOP, a long fork, a
 * paused VM) would run them when it wakes and store spills nobody was told
 * about. So the script first checks Redis's clock against a deadline that
 * ends before compactd stops waiting, and writes nothing past it.
 *
 * Each spill's text is written only if new (the first copy stays); its
 * metadata value keeps the first spill's class, tokens, created_at and
 * unit metadata, and takes the commit's place in the spill order as a
 * fourth word, before the unit metadata (see
 * layout_meta_order()): the id of the commit's log entry, which Redis
 * keeps increasing in each stream even when its clock steps back, or for
 * a commit without a log entry, Redis's clock in the same form. The log entry
 * carries the commit's nonce, so that a commit whose reply was lost can be
 * looked for (layout_probe_script).
 * KEYS: text, meta, events. ARGV: deadline (us, Redis time), event (may be
 * empty), nonce, then field, text, meta for each spill. Returns 1 when it
 * wrote, 0 when it was too late. */
extern const char layout_commit_script[];

enum { LAYOUT_COMMIT_KEYS = 3, LAYOUT_COMMIT_FIXED_ARGS = 3, LAYOUT_COMMIT_ARGS_PER_SPILL = 3 };

/* Whether a commit landed, asked after its reply was lost. Read-only.
 * With a nonce: whether a log entry since the stream id ARGV[1] carries it
 * (the entry and the spills are one atomic script). Without (a commit
 * with no log entry): whether every field in ARGV[3..] exists, which is
 * what its answer promises (content addressing: the first copy stays).
 * KEYS: text, events. ARGV: since, nonce (may be empty), fields. Returns
 * 1 or 0. */
extern const char layout_probe_script[];

#endif
