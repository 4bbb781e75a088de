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
    /* A large commit's staging (see store/scripts/publish.lua): the commit
     * being merged, if any; the prefix of its pieces' keys. */
    char pending[300], stage[300];
    /* The names of the session's last commit and of the last commit under
     * each Idempotency-Key (see store/scripts/retry.lua). */
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
 * A commit small enough to run in a moment is one script (commit.lua). A
 * larger one is staged: its spills go in pieces of at most
 * LAYOUT_PIECE_SPILLS spills and LAYOUT_PIECE_BYTES bytes (a larger spill
 * makes a piece of its own) into staging hashes that nothing reads and
 * that expire unless published (stage.lua); one short script publishes
 * them all at once (publish.lua), and the pieces are then merged one short
 * script at a time (merge.lua). A published commit is the session's "pending"
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

/* ---- Scripts ----
 *
 * The scripts that write and read a session, one file each in
 * store/scripts/ (the file says what its KEYS and ARGV are and what it
 * does), embedded at build time. Each reply is one of the codes below,
 * named once here and in a comment where a script returns it
 * (tests/layout/script_codes.py holds the two together). */
typedef enum {
    /* commit.lua and publish.lua (nothing is written unless they answer
     * SCRIPT_WRITTEN), and read.lua's SCRIPT_PENDING: */
    SCRIPT_WRITTEN = 1,
    SCRIPT_ALREADY_WRITTEN = 2, /* a retry of the commit written last under its name */
    SCRIPT_TOO_LATE = 0,        /* Redis ran it past its deadline */
    SCRIPT_PENDING = -1,        /* another commit is being merged: merge it, then ask again */
    SCRIPT_PIECE_GONE = -2,     /* publish.lua: a piece expired, or was lost in a failover */
    SCRIPT_TEXT_MISSING = -3,   /* commit.lua: a spill sent without its text has none stored */
    SCRIPT_KEY_REUSED = -4,     /* its scope names a commit with other content */
    /* stage.lua, merge.lua and probe.lua: */
    SCRIPT_STAGED = 1,
    SCRIPT_MERGED = 1,
    SCRIPT_NOT_MERGED = 0, /* merged already, or another commit is pending */
    SCRIPT_LANDED = 1,     /* the commit whose reply was lost is written */
    SCRIPT_NOT_LANDED = 0, /* it is not, and never will be */
} layout_script_code;

/* One compaction's writes, run atomically, refused past a deadline
 * (store/scripts/commit.lua). */
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

/* A large commit's piece staged (store/scripts/stage.lua), the pieces
 * published at once (publish.lua) and merged one at a time (merge.lua). */
extern const char layout_stage_script[];
extern const char layout_publish_script[];
extern const char layout_merge_script[];

/* A session removed, its pending commit's pieces with it
 * (store/scripts/drop.lua). */
extern const char layout_drop_script[];

/* A read that never sees a commit half merged (store/scripts/read.lua). */
extern const char layout_read_script[];

enum { LAYOUT_READ_ARGS_MAX = 4000 };

/* Whether a commit whose reply was lost landed (store/scripts/probe.lua). */
extern const char layout_probe_script[];

#endif
