/* The store's transports, one table of functions per kind of deployment
 * (like SQLite's sqlite3_vfs): the operations of store.h are written once
 * (operations.h) over the handle's table, so serving a Redis Cluster is a
 * second transport, not a second copy of the operations. Internal to
 * store/.
 *
 * Every entry receives the handle and reports failure through store_fail()
 * or store_fail_quiet(). The transport's own state is s->impl, made by
 * open() and released by close(). */
#ifndef COMPACTD_STORE_IMPL_H
#define COMPACTD_STORE_IMPL_H

#include "store.h"

#include <stdint.h>

struct redisReply; /* hiredis's */
struct store_conn; /* conn.h's */

/* store_transport.script()'s flags. */
enum { STORE_SCRIPT_ONCE = 1, STORE_SCRIPT_WAIT = 2 };

/* How the operations (operations.h, written once) reach Redis, one table
 * per kind of deployment: one Redis over one connection (node.c), or a
 * Redis Cluster over its routing (cluster_store.c). */
typedef struct store_transport {
    const char *name;
    /* Returns the implementation's state for cfg (borrowed until close), or
     * NULL when out of memory. Connects lazily. */
    void *(*open)(const store_config *cfg);
    void (*close)(void *impl);

    /* store_ping(): every node that serves the sessions answers. */
    int (*ping)(store *s);
    /* store_event_defer(): the entry sent without waiting for its reply. */
    int (*event_defer)(store *s, const char *ns, const char *event, size_t event_len);
    int event_defer_waits; /* 1 when event_defer() awaits Redis's answer */
    /* Before a read, delete or commit of session ns: returns once Redis has
     * run every entry of ns the process's other handles sent it by
     * event_defer() without waiting, or -1 with the handle's error set when
     * it has not answered them within the command timeout. NULL when
     * event_defer() waits. */
    int (*settle)(store *s, const char *ns);
    /* command() runs one command about one session (argv[1] is one of its
     * keys) and returns the reply, or NULL after setting the handle's error
     * (an error reply is STORE_ERR_PROTOCOL). script() runs script (one of
     * layout.h's, argv[3] its first key) with argv[0..1] left for EVALSHA
     * and the digest, and, when deadline_arg >= 0, argv[deadline_arg] for
     * the last moment Redis may start it (filled in here, in the clock of
     * the node that runs it); same result as command(). With
     * STORE_SCRIPT_ONCE it is never sent twice, and after a lost reply the
     * node is asked whether it ran (store_commit_after_lost_reply(): argv
     * laid out as layout_commit_script's); without, it may be sent again.
     * With STORE_SCRIPT_WAIT, a reply of 1 is awaited on min_replicas
     * replicas: NULL with STORE_ERR_REPLICAS when too few acknowledged. */
    struct redisReply *(*command)(store *s, int argc, const char **argv, const size_t *lens);
    struct redisReply *(*script)(store *s, const char *script, int argc, const char **argv,
                                 size_t *lens, int deadline_arg, int flags);
} store_transport;

struct store {
    const store_transport *t;
    void *impl;
    int min_replicas; /* store_config's */
    int stage_ttl_ms; /* store_config's, its default filled in */
    char stop_at[32]; /* store_config's */
    int err;
    char errstr[256];
};

/* One Redis (node.c). */
extern const store_transport store_node_transport;

/* A Redis Cluster (cluster_store.c). */
const store_transport *store_cluster_transport(void);

/* After the reply to a commit (argv, as node.c lays it out) was lost once
 * it was sent to the node that like talks to, at sent_redis_us in that
 * node's clock: asks that node, on a connection of its own, whether the
 * commit landed (node.c). Returns its reply (integer 1) when it did and no
 * replicas are asked for; else NULL with the handle's error set: not
 * written (STORE_ERR_IO), written but replicas unknown
 * (STORE_ERR_REPLICAS), or no answer (STORE_ERR_UNKNOWN). why is what the
 * lost reply's connection said. */
struct redisReply *store_commit_after_lost_reply(store *s, const struct store_conn *like, int argc,
                                                 const char **argv, const size_t *lens,
                                                 int64_t sent_redis_us, const char *why);

/* Counts a commit fewer replicas acknowledged than min_replicas. */
void store_count_wait_shortfall(void);

/* Sets the handle's error and counts it in store_stats.errors. */
void store_fail(store *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Sets the handle's error without counting it: for errors that are already
 * counted (the connection's) or are the caller's mistake. */
void store_fail_quiet(store *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
