/* The store's data layout in Redis: key names, hash fields, the metadata
 * record and the scripts that write them. Pure: no I/O, no connection, so
 * every transport (one Redis, a cluster) shares one
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
    /* A large commit's staging (see layout_publish_script): the commit
     * being merged, if any; the prefix of its pieces' keys. */
    char pending[300], stage[300];
    /* The names of the session's last commit and of the last commit under
     * each Idempotency-Key (see LAYOUT_LUA_RETRY). */
    char commits[300];
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

/* ---- Commits ----
 *
 * A commit small enough to run in a moment is one script
 * (layout_commit_script). A larger one is staged: its spills go in pieces
 * of at most LAYOUT_PIECE_SPILLS spills and LAYOUT_PIECE_BYTES bytes (a
 * larger spill makes a piece of its own) into staging hashes that nothing
 * reads and that expire unless published (layout_stage_script); one short
 * script publishes them all at once (layout_publish_script), and the
 * pieces are then merged one short script at a time
 * (layout_merge_script). A published commit is the session's "pending"
 * commit until its last piece is merged: every read and every later commit
 * of the session first merges it (anyone may: each merge is idempotent),
 * so no reader ever sees part of a commit, and commits stay in the order
 * they were published. No script runs longer than one piece takes. */
enum { LAYOUT_PIECE_SPILLS = 128, LAYOUT_PIECE_BYTES = 512 << 10 };

/* How long staged pieces live unless published, unless the store's
 * configuration says otherwise: long enough for any commit to publish (the
 * store's command timeouts are seconds), short enough that an abandoned
 * one is soon gone. A published commit's marker lives as long. */
#define LAYOUT_STAGE_TTL_MS 600000

/* The key of a staged commit's piece i, under k->stage: "<stage><nonce>:<i>".
 * Returns its length, or -1 when out does not hold it. */
int layout_stage_key(const layout_keys *k, const char *nonce, size_t i, char *out, size_t len);

/* A published commit's marker, "<stage><nonce>": exists for
 * LAYOUT_STAGE_TTL_MS after it was published, so that a commit whose
 * reply was lost can be asked about even once it is merged. */
int layout_marker_key(const layout_keys *k, const char *nonce, char *out, size_t len);

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
 * KEYS: text, meta, events, pending, marker, commits. ARGV: deadline (us,
 * Redis time), event (may be empty), nonce (the commit's name), scope (its
 * name's first 8 digits when they name an Idempotency-Key, else empty),
 * then field, text, meta for each spill; a meta prefixed with '=' sends the spill without its text
 * (an empty text argument), which must be stored already. Returns 1 when it wrote, 0 when it was
 * too late, -1 when another commit of the session is still being merged (merge it, then send this
 * again), -3 when a spill sent without its text is not stored (send the texts), 2 when it is a
 * retry of a commit already written, -4 when its scope names a commit with
 * other content (an Idempotency-Key reused for another body). Nothing is
 * written unless it returns 1. */
extern const char layout_commit_script[];

enum { LAYOUT_COMMIT_KEYS = 6, LAYOUT_COMMIT_FIXED_ARGS = 4, LAYOUT_COMMIT_ARGS_PER_SPILL = 3 };
/* Where the commit script's arguments sit in a full EVALSHA argv (command,
 * digest, key count, KEYS, ARGV). */
enum {
    LAYOUT_ARGV_DEADLINE = 3 + LAYOUT_COMMIT_KEYS,
    LAYOUT_ARGV_EVENT,
    LAYOUT_ARGV_NAME,
    LAYOUT_ARGV_SCOPE,
    LAYOUT_ARGV_SPILLS
};

/* Stages one piece of a large commit: KEYS: the piece's key. ARGV: its
 * expiry in ms (store_config's stage_ttl_ms, by default
 * LAYOUT_STAGE_TTL_MS), then for each spill "t<field>", text, "m<field>",
 * meta. Sets the piece to expire then. Safe to send again. Returns 1. */
extern const char layout_stage_script[];

/* Publishes a staged commit: the same KEYS and first four ARGV as
 * layout_commit_script, then ARGV: the pieces' key prefix ("<stage><nonce>:"),
 * their count, the marker's key. Checks the deadline as the commit script
 * does; refuses (-1) while another commit is pending and (-2) when a piece
 * is missing (expired, or lost with a failed master): nothing is written
 * then. A retry of a commit logged already returns 2 when every text its
 * pieces hold is stored, and is published again when one vanished. Otherwise appends the log entry,
 * keeps the pieces and records the commit as pending ("<nonce> <order> <pieces> <left>"): from then
 * on it has happened. Returns 1, or 0 when too late. */
extern const char layout_publish_script[];

/* Removes a session: KEYS: text, meta, events, pending, commits. ARGV: the stage
 * prefix (k->stage). Removes the pending commit's pieces with the keys, at
 * once, so a commit racing it either lands whole after it or not at all
 * and leaves none of its pieces without an expiry. Returns the count of
 * keys of the five that were removed. */
extern const char layout_drop_script[];

/* Merges piece ARGV[2] (its key) of the pending commit ARGV[1] (nonce) as
 * layout_commit_script writes a spill, then removes the piece; the last
 * one removes the pending record. KEYS: text, meta, pending. Does nothing
 * when that piece was merged already or another commit is pending.
 * Returns 1 when it merged, 0 when not. */
extern const char layout_merge_script[];

/* A read that must not see a commit half merged: KEYS: pending, then the
 * key read; ARGV: the command, then its arguments after the key. Returns
 * the integer -1 while a commit is pending (no read returns an integer),
 * else the command's reply. At most LAYOUT_READ_ARGS_MAX ARGV (Lua's
 * unpack). */
extern const char layout_read_script[];

enum { LAYOUT_READ_ARGS_MAX = 4000 };

/* Whether a commit landed, asked after its reply was lost. Read-only.
 * With a nonce: whether a log entry since the stream id ARGV[1] carries it
 * (the entry and the spills are one atomic script). Without (a commit
 * with no log entry): whether every field in ARGV[3..] exists, which is
 * what its answer promises (content addressing: the first copy stays).
 * A staged commit always has a nonce, and its marker answers first (its
 * log entry, if any, says the same).
 * KEYS: text, events, marker. ARGV: since, nonce (may be empty), fields.
 * Returns 1 or 0. */
extern const char layout_probe_script[];

#endif
