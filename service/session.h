/* A session's stored state in the domain's words, and the one road from
 * the service to the store: read a spill back (by a pointer's digest, or
 * the newest), list the spills, tell which spills still resolve, write a
 * planned compaction's spills with its decision-log entry, send or append
 * an entry alone, read the log, delete the session, and ask whether the
 * store answers. Only session.c includes store.h (tests/layout's
 * include_check.py and link_check.py refuse it anywhere else above the
 * store), so what the store can do reaches the service, and the API layer
 * above it, through here alone.
 *
 * Every function uses the calling thread's connection, set up on first use
 * from the settings given to session_store_init(); before that (as in a
 * test that has no store) every call fails with StoreUnavailable. ns names
 * the session's namespace, "tenant:session". */
#ifndef COMPACTD_SESSION_H
#define COMPACTD_SESSION_H

#include "compaction.h"
#include "error.h"
#include "plan.h"
#include "sha256.h"
#include "store_types.h"

#include <stddef.h>
#include <stdint.h>

/* How to reach the store. */
typedef struct {
    /* redis://host:port/db, unix:///path/to.sock or
     * redis+cluster://host:port,host:port/, each with [[user]:password@]
     * after the scheme when Redis asks for a password; rediss:// and
     * rediss+cluster:// over TLS */
    char url[512];
    int connect_timeout_ms;
    int command_timeout_ms;
    int min_replicas; /* replicas that must hold a commit before it is answered */
    /* Over TLS (empty: unset): the CAs trusted (a PEM file, a hashed
     * folder; neither: the system's), the client's certificate and key for
     * a Redis that asks for one, the name Redis's certificate must carry
     * instead of each node's address. */
    char tls_ca_file[1024];
    char tls_ca_dir[1024];
    char tls_cert_file[1024];
    char tls_key_file[1024];
    char tls_server_name[256];
    int stage_ttl_ms; /* how long a large commit's unpublished pieces live */
    /* A debug setting for fault tests: the stage of a large commit at which
     * the process stops itself ("" off; store.h's store_config.stop_at). */
    char stop_at[32];
} session_store_settings;

/* Checks s without connecting (the TLS files are read). Returns 0, or -1
 * with a message in err. */
int session_store_check(const session_store_settings *s, char *err, size_t errlen);

/* Sets up per-thread connections with s (copied). Call once, before any
 * thread uses the store. Returns 0, or -1 with a message in err. */
int session_store_init(const session_store_settings *s, char *err, size_t errlen);

/* s's URL with its password written as "***": what logs may show. */
void session_store_url_shown(const session_store_settings *s, char *out, size_t len);

/* Whether the store s names answers, on a connection of its own that is
 * closed after: 0, or -1 with StoreUnavailable saying why. */
int session_store_probe(const session_store_settings *s, compactd_error *err);

/* Returns 0 when the store answers, or -1 with StoreUnavailable. */
int session_ready(compactd_error *err);

/* Whether the last store operation of any thread succeeded (store.h's
 * store_healthy()): 1, or 0 with its message in why. */
int session_store_healthy(char *why, size_t len);

/* Counters summed over every connection of the process (store_types.h). */

void session_store_get_stats(store_stats *out);

/* ---- Spills ---- */

/* A spill as read back is a store_record (store_types.h): every string owned
 * by the record and freed by store_record_clear(). */

/* What a read of a spill found. */
typedef enum { SPILL_NONE = 0, SPILL_FOUND = 1, SPILL_AMBIGUOUS = 2 } spill_found;

/* The full digests an ambiguous prefix matched, ascending: sha256 is a new
 * array of n that the caller frees with free(). */
typedef struct {
    char (*sha256)[SHA256_HEX_LEN + 1];
    size_t n;
} spill_candidates;

/* Reads the spill of key that digest names: a full digest or its start,
 * as sha256_prefix_valid() (sha256.h) allows (anything else is
 * InvalidRequest), or NULL for the version spilled last. Returns
 * SPILL_FOUND (the caller then clears *out), SPILL_NONE, SPILL_AMBIGUOUS
 * (the digests it matched in *amb, to be freed), or -1 with InvalidRequest
 * or StoreUnavailable. */
int session_spill_read(const char *ns, const char *key, size_t key_len, const char *digest,
                       store_record *out, spill_candidates *amb, compactd_error *err);

/* Lists the session's spills without their texts, oldest first. Returns 0
 * with a new array in *out (free it with store_records_free()), or -1 with
 * StoreUnavailable. */
int session_spill_list(const char *ns, store_record **out, size_t *n, compactd_error *err);

/* Whether the spills of k units are stored, all asked in one round trip:
 * stored[j] (k of them, the caller's) is set to 1 when the spill of
 * units[at[j]] with the digest sha256[at[j]] is, else 0. Returns 0, or -1
 * with StoreUnavailable. */
int session_spills_stored(const char *ns, const plan_unit *units,
                          const char (*sha256)[SHA256_HEX_LEN + 1], const size_t *at, size_t k,
                          unsigned char *stored, compactd_error *err);

/* Removes everything stored for the session. Returns 0, or -1 with
 * StoreUnavailable. */
int session_delete(const char *ns, compactd_error *err);

/* ---- Commits ---- */

/* How session_commit() ended. */
typedef enum {
    SESSION_WRITTEN = 0,        /* all of it is stored (a retry that found it so wrote nothing) */
    SESSION_NOT_WRITTEN = -1,   /* none of it: err says why */
    SESSION_MAYBE_WRITTEN = -2, /* StoreUnavailable, yet it may be stored, or is on too few
                                 * replicas: the same commit again is safe */
} session_written;

/* Writes the spills of the planned compaction c (its externalized units,
 * with req's texts, digests and metadata) and event (NULL: none), all or
 * nothing, and waits for Redis. The commit is named name (as wide as a
 * digest's short form, POINTER_SHA_HEX lower-case hex digits), which the
 * caller derives from what it writes: the session's last commit sent again
 * writes nothing. With keyed, the name's first 8 digits name its scope (an
 * Idempotency-Key), held across the session's later commits: a scope that
 * holds another commit's name is ERR_KEY_REUSED, nothing written. Returns a
 * session_written, err set unless SESSION_WRITTEN (Internal when out of
 * memory). */
int session_commit(const char *ns, const compaction_request *req, const compaction *c,
                   const char *event, size_t event_len, const char *name, int keyed,
                   compactd_error *err);

/* ---- Decision log ---- */

/* An entry is a store_event (store_types.h): its id ("<ms>-<seq>") and the
 * JSON object stored, owned; store_events_free() frees them. */

/* Reads up to limit entries after the id after (NULL: from the start),
 * oldest first, stopping early past max_bytes as store_event_range() does.
 * after must be a well-formed id whose parts fit in 64 bits (the caller
 * checks). Returns 0 with a new array in *out (free it with
 * store_events_free()), or -1 with StoreUnavailable. */
int session_events(const char *ns, const char *after, size_t limit, size_t max_bytes,
                   store_event **out, size_t *n, compactd_error *err);

/* Appends one entry and waits for it. Returns 0, or -1 with
 * StoreUnavailable. */
int session_log_append(const char *ns, const char *event, size_t event_len, compactd_error *err);

/* Sends one entry without waiting for Redis's answer, which is read before
 * the connection's next command: an entry nothing waits on costs no round
 * trip. Returns 0 when it was sent (it can still fail unseen, then counted
 * in store_stats.errors), or -1 with StoreUnavailable. */
int session_log_send(const char *ns, const char *event, size_t event_len, compactd_error *err);

/* 1 when session_log_send() waits on Redis after all (a cluster, where a
 * reply may be a redirection), 0 when it never does (or there is no
 * store). */
int session_log_send_waits(void);

#endif
