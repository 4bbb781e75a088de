/* What the API layer may do with a session's stored state, without knowing
 * how or where it is stored: read a spill back, list the spills, read the
 * decision log, append to it, delete the session, and ask whether the store
 * answers. The only way above service/ to the store (store.h stays private
 * to service/).
 *
 * Every function uses the calling thread's connection, set up on first use
 * from the settings given to session_store_init(); before that (as in a
 * test that has no store) every call fails with StoreUnavailable. ns names
 * the session's namespace, "tenant:session". */
#ifndef COMPACTD_SESSION_H
#define COMPACTD_SESSION_H

#include "error.h"
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

/* Reads one spill: the version named by sha256 (64 lower-case hex), or with
 * sha256 NULL the newest. Returns 1 when found (the caller then clears
 * *out), 0 when not, -1 with StoreUnavailable. */
int session_spill_get(const char *ns, const char *key, size_t key_len, const char *sha256,
                      store_record *out, compactd_error *err);

/* A pointer shows the first SPILL_PREFIX_MIN hex digits of its digest. */
#define SPILL_PREFIX_MIN 16

/* The full digests an ambiguous prefix matched, ascending: sha256 is a new
 * array of n that the caller frees with free(). */
typedef struct {
    char (*sha256)[65];
    size_t n;
} spill_candidates;

/* Reads the version of key whose sha256 starts with prefix: SPILL_PREFIX_MIN
 * to 64 lower-case hex digits (anything else is InvalidRequest). Returns 1
 * when exactly one matches (the caller then clears *out), 0 when none does,
 * 2 when several do (their digests in *amb, to be freed), or -1 with
 * InvalidRequest or StoreUnavailable. */
int session_spill_get_prefix(const char *ns, const char *key, size_t key_len, const char *prefix,
                             store_record *out, spill_candidates *amb, compactd_error *err);

/* Lists the session's spills without their texts, oldest first. Returns 0
 * with a new array in *out (free it with store_records_free()), or -1 with
 * StoreUnavailable. */
int session_spill_list(const char *ns, store_record **out, size_t *n, compactd_error *err);

/* Removes everything stored for the session. Returns 0, or -1 with
 * StoreUnavailable. */
int session_delete(const char *ns, compactd_error *err);

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

#endif
