/* The Redis spill store: verbatim copies of externalized units, keyed by
 * session and content digest, and each session's decision log. The only
 * module that speaks to Redis.
 *
 * A store handle owns one Redis connection and is not thread-safe: each
 * worker thread uses its own (see store_for_thread()). Like hiredis's
 * redisContext, a handle keeps its last error in err/errstr; after an error
 * the connection is dropped and the next call reconnects. */
#ifndef COMPACTD_STORE_H
#define COMPACTD_STORE_H

#include "store_types.h"

#include <stddef.h>
#include <stdint.h>

#define STORE_HOST_MAX 256
#define STORE_PATH_MAX 108
#define STORE_NODES_MAX 16
#define STORE_AUTH_MAX 256 /* a user name or password, decoded, NUL included */
#define STORE_FILE_MAX 1024

/* Where one Redis node listens. */
typedef struct {
    char host[STORE_HOST_MAX]; /* empty when unix_path is set */
    int port;
    char unix_path[STORE_PATH_MAX];
} store_node_addr;

/* TLS to Redis (tls.c, over OpenSSL): every connection to every node when
 * on. Redis's certificate is always verified, against the CAs of ca_file
 * and ca_dir (both empty: the system's), and must name the node (its
 * address, as the URL or the cluster gives it) or server_name when set. The
 * files are read once per process, at the first check or connection. */
typedef struct {
    int on;                           /* the URL asks for it: rediss://, rediss+cluster:// */
    char ca_file[STORE_FILE_MAX];     /* PEM certificates of the CAs trusted */
    char ca_dir[STORE_FILE_MAX];      /* a folder of them, hashed (openssl rehash) */
    char cert_file[STORE_FILE_MAX];   /* the client's certificate (PEM, chain), for mutual TLS */
    char key_file[STORE_FILE_MAX];    /* its private key (PEM, not encrypted) */
    char server_name[STORE_HOST_MAX]; /* the name checked and sent (SNI); empty: the node's */
} store_tls_config;

/* Which implementation of the store's operations serves a configuration
 * (store_impl.h): one per kind of deployment. */
typedef enum {
    STORE_SINGLE = 0, /* one Redis: nodes[0] */
    STORE_CLUSTER,    /* a Redis Cluster: its seed nodes in nodes[] (cluster_store.c) */
} store_kind;

typedef struct {
    store_kind kind;
    store_node_addr nodes[STORE_NODES_MAX];
    size_t n_nodes; /* at least 1 */
    int db;
    int connect_timeout_ms;
    int command_timeout_ms;
    /* > 0: a commit is acknowledged only once this many replicas hold it
     * (WAIT), else it fails with STORE_ERR_REPLICAS. */
    int min_replicas;
    /* Sent as AUTH [user] password on every connection to every node when
     * password is not empty; user empty: Redis's default user. */
    char user[STORE_AUTH_MAX];
    char password[STORE_AUTH_MAX];
    store_tls_config tls;
    /* How long a large commit's staged pieces live unless published, in
     * ms; 0: LAYOUT_STAGE_TTL_MS (layout.h). */
    int stage_ttl_ms;
    /* A debug setting, for fault tests: "" (off), or the stage of a large
     * commit ("staged:<piece>", "published", "merged:<piece>") at which
     * the process stops itself (SIGSTOP), the first time one reaches it. */
    char stop_at[32];
} store_config;

/* Whether stop_at is "", "published", or "staged:<n>" or "merged:<n>" for
 * a decimal n below 1,000,000 written without a sign or leading zero. */
int store_stop_at_valid(const char *stop_at);

/* Parses redis://[[user]:password@]host:port/db,
 * unix://[[user]:password@]/path/to.sock or
 * redis+cluster://[[user]:password@]host:port,host:port/ into cfg (kind,
 * nodes, db and credentials, percent-decoded; rediss:// and
 * rediss+cluster:// the same over TLS, which sets tls.on; timeouts,
 * min_replicas and the TLS files untouched). Returns 0, or -1 with a
 * message in err, which never shows the password. */
int store_config_parse_url(const char *url, store_config *cfg, char *err, size_t errlen);

/* Checks cfg's TLS settings without connecting: files or a server name
 * only with TLS on, a client certificate only with its key (and the other
 * way round), and the files read (and kept for the process's
 * connections). Returns 0, or -1 with a message in err naming what is
 * wrong. */
int store_tls_check(const store_config *cfg, char *err, size_t errlen);

/* url with its password, if any, written as "***": for logs. out holds
 * len bytes (cut to fit). */
void store_url_redacted(const char *url, char *out, size_t len);

/* Error codes: store_err(). STORE_ERR_REPLICAS: a commit ran on the
 * master, but fewer replicas than min_replicas acknowledged it in time.
 * STORE_ERR_UNKNOWN: a commit was sent and Redis could not be asked
 * whether it ran. STORE_ERR_CONFLICT: a commit's scope (its name's first
 * 8 digits) is on a recent log entry with other content; nothing written.
 * (See store_commit().) */
enum {
    STORE_OK = 0,
    STORE_ERR_IO,
    STORE_ERR_PROTOCOL,
    STORE_ERR_OOM,
    STORE_ERR_INVALID,
    STORE_ERR_REPLICAS,
    STORE_ERR_UNKNOWN,
    STORE_ERR_CONFLICT
};

typedef struct store store;

void store_get_stats(store_stats *out);

/* Returns a handle that connects lazily with cfg (copied), or NULL when out
 * of memory. Release with store_free(). */
store *store_new(const store_config *cfg);
void store_free(store *s);

/* Borrowed: valid until the next call on s. */
int store_err(const store *s);
const char *store_errstr(const store *s);

/* Returns the calling thread's handle, created on first use with cfg and
 * freed when the thread exits; NULL when out of memory. store_thread_init()
 * must have been called once before any thread starts. */
int store_thread_init(const store_config *cfg);
store *store_for_thread(void);

/* Whether the last operation of any handle that reached Redis (or tried
 * to) succeeded: 1, or 0 with that failure's message in why. Failures of
 * the caller's making (STORE_ERR_INVALID) and of memory here do not
 * count. For readiness, which must not lag the requests' own answers. */
int store_healthy(char *why, size_t len);

/* Returns 0 when Redis answers PING (on a cluster: when every slot is
 * served by a master whose cluster_state is ok), else -1. */
int store_ping(store *s);

/* ---- Spills ---- */

/* One spill to write. All strings borrowed; sha256 is 64 lower-case hex. */
typedef struct {
    const char *key;
    size_t key_len;
    const char *cls;
    int64_t tokens;
    const char *sha256;
    const char *text;
    size_t text_len;
    const char *metadata; /* a JSON object's text without NUL, or NULL */
    size_t metadata_len;
} store_spill;

/* Writes every spill of one compaction and, when event is not NULL, one
 * decision-log entry, all or nothing: a small commit in one round trip
 * that Redis runs atomically (a script, which Redis also refuses to start
 * once compactd would no longer wait for it); a larger one staged in
 * pieces of at most 128 spills and 512 KiB and published by one short
 * script (layout.h), so that no script holds Redis for longer than a piece
 * takes, and no read sees part of a commit. A spill whose (key, sha256)
 * already exists keeps its first copy. ns names the session's namespace
 * ("tenant:session"). Entries the process's other handles sent earlier
 * by store_event_defer() come before the entry in the session's log.
 *
 * Returns 0 when everything is written. Returns -1 when nothing is: Redis
 * could not be reached, refused the script, was sent it but did not run
 * it in time (and never will), or did not answer those earlier entries
 * within the command timeout. On one Redis, when the reply does not come
 * in time (a large commit that Redis is still running, a Redis that stalls
 * or dies after the commit was sent), the store asks Redis on a new
 * connection whether the commit landed (waiting min(connect timeout,
 * command timeout), and one command timeout more per 4 MiB sent) and
 * answers with what happened: 0 if it did. Two failures may leave writes
 * behind: STORE_ERR_UNKNOWN, when that question goes unanswered too (the
 * commit may have been written; a retry is safe: spills are
 * content-addressed), and STORE_ERR_REPLICAS, when the write is on the
 * master and on fewer replicas than min_replicas (a failover may then lose
 * it; a retry writes nothing new but the log entry). On a cluster the
 * commit runs on the master of ns's slot, retried within the command
 * timeout while the cluster redirects or refuses it; after a lost reply
 * that master is asked, as one Redis is (a master that died or stepped
 * down meanwhile cannot answer: STORE_ERR_UNKNOWN). */
int store_commit(store *s, const char *ns, const store_spill *spills, size_t n,
                 const char *created_at, const char *event, size_t event_len);

/* store_commit() with the commit's name given: commit_key, as wide as a
 * digest's short form (POINTER_SHA_HEX lower-case hex digits, sha256.h),
 * derived by the caller from what the commit writes (or NULL for a random
 * one), names the commit in its log entry. A commit whose
 * name is that of the session's last commit with an event, with every text
 * it names stored, writes nothing and answers 0, as the first one did; the
 * same commit after another one is a commit again (a key spilled as A,
 * then B, then A again reads as A). With keyed, the name's first 8 digits
 * name its scope (an Idempotency-Key), held across the session's later
 * commits: a commit whose name is the scope's last writes nothing either,
 * and one whose scope holds another name fails with STORE_ERR_CONFLICT and
 * writes nothing. So a request retried (after a lost answer, or a 503 that
 * says the write may have happened) leaves one log entry, as its spills
 * already were one copy each, even after other commits. Only commits with
 * an event are recognized. */
int store_commit_keyed(store *s, const char *ns, const store_spill *spills, size_t n,
                       const char *created_at, const char *event, size_t event_len,
                       const char *commit_key, int keyed);

/* Reads one spill. With sha256 NULL, the version of key spilled last, by
 * the order in which Redis ran the commits (a key spilled as A, then B,
 * then A again reads as A), never by clock. A version's tokens, class and
 * created_at are those of its first spill: a later spill of the same
 * (key, sha256) writes nothing but makes it the last. (Sessions written
 * before compactd kept that order read as the version first spilled
 * newest, by created_at, until their key is spilled again.) Returns 1
 * when found (then the caller clears out), 0 when not, -1 on error. */
int store_spill_get(store *s, const char *ns, const char *key, size_t key_len, const char *sha256,
                    store_record *out);

/* What a read by digest prefix found. */
enum { STORE_NOT_FOUND = 0, STORE_FOUND = 1, STORE_AMBIGUOUS = 2 };

/* Reads the spill of key whose sha256 starts with prefix: prefix_len
 * lower-case hex digits, not NUL-terminated, as sha256_prefix_valid()
 * (sha256.h) checks them: a pointer's short form names a spill. Returns
 *   STORE_FOUND      exactly one version of key matches: *out holds it and
 *                    the caller clears it with store_record_clear();
 *   STORE_NOT_FOUND  no version of key matches;
 *   STORE_AMBIGUOUS  two or more match: *candidates is a new array of their
 *                    full digests in ascending order, *n_candidates long,
 *                    that the caller frees with free(); *out is untouched;
 *   -1               on error, with nothing to free: STORE_ERR_INVALID for
 *                    a prefix of the wrong length or alphabet, else the
 *                    store's error.
 * candidates and n_candidates may be NULL when the caller needs no list;
 * when not NULL they are set to NULL and 0 unless the answer is ambiguous.
 * Versions of other keys never match, whatever their digest. One HSCAN pass
 * over the session's metadata (pages of 1,000 fields), then the read of
 * the one match: O(spills in the session) work in Redis, but only the
 * matches travel back. */
int store_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                           const char *prefix, size_t prefix_len, store_record *out,
                           char (**candidates)[65], size_t *n_candidates);

/* Lists a session's spills without their texts, oldest first (ties by key).
 * Returns 0 with a new array in *out that the caller frees with
 * store_records_free(), or -1 on error. */
int store_spill_list(store *s, const char *ns, store_record **out, size_t *n);

/* Tells whether the exact (key, sha256) spill exists: 1, 0, or -1 on error. */
int store_spill_exists(store *s, const char *ns, const char *key, size_t key_len,
                       const char *sha256);

/* One spill named by key and digest (64 lower-case hex). Borrowed. */
typedef struct {
    const char *key;
    size_t key_len;
    const char *sha256;
} store_spill_ref;

/* Tells for each of the n spills of refs whether it exists: found[i] is set
 * to 1 or 0 (found has n elements, owned by the caller). All n in one
 * pipelined round trip, under one command timeout. Returns 0, or -1 on
 * error (found then undefined). n may be 0. */
int store_spill_exists_many(store *s, const char *ns, const store_spill_ref *refs, size_t n,
                            unsigned char *found);

/* Removes every key of the session, with UNLINK: Redis frees a large
 * session's memory in the background instead of blocking every client
 * while it does. Returns 0, or -1 on error. */
int store_session_delete(store *s, const char *ns);

/* ---- Decision log ---- */

/* Appends one entry on its own. Returns 0, or -1 on error. */
int store_event_append(store *s, const char *ns, const char *event, size_t event_len);

/* Sends one entry without waiting for Redis's answer, which is read before
 * the handle's next command: for entries nothing waits on, so that a
 * compaction without spills costs no round trip. It follows the session's
 * entries sent earlier on the process's other handles: while Redis has not
 * answered those, it is sent behind them, on their connection. Returns 0
 * when the entry was sent, -1 on error. An entry sent can still fail
 * unseen (then counted in store_stats.errors). */
int store_event_defer(store *s, const char *ns, const char *event, size_t event_len);

/* 1 when s's store_event_defer() awaits Redis's answer after all (a
 * cluster, where a reply may be a redirection), 0 when it never waits. */
int store_event_defer_waits(const store *s);

/* Reads up to limit entries after the stream id after (NULL: from the
 * start), oldest first, in XRANGEs of a few entries: it stops early once
 * the entries read (their ids and data) pass max_bytes and at least two
 * were read, so that the last one read tells whether more follow. Returns
 * 0 with a new array the caller frees with store_events_free(), or -1 on
 * error (an invalid id is STORE_ERR_PROTOCOL). */
int store_event_range(store *s, const char *ns, const char *after, size_t limit, size_t max_bytes,
                      store_event **out, size_t *n);

#endif
