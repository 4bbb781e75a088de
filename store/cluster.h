/* A Redis Cluster connection layer for the store: one connection per master,
 * each command sent to the master that serves its key's slot, redirections
 * followed and refusals retried within the command timeout.
 *
 * Debian's hiredis 0.14 has no cluster support; this is the part of a
 * cluster client compactd needs. Like a store handle, a cluster handle is
 * not thread-safe (one per worker thread) and keeps its last error in
 * err/errstr. It holds nothing another process needs: the slot map is a
 * cache of what the cluster says, refreshed on MOVED. */
#ifndef COMPACTD_CLUSTER_H
#define COMPACTD_CLUSTER_H

#include "cluster_slots.h"
#include "store.h"

#include <hiredis/hiredis.h>

struct store_conn; /* conn.h's */

#include <stddef.h>
#include <stdint.h>

enum {
    CLUSTER_OK = 0,
    CLUSTER_ERR_IO, /* no master answered in time, or the reply was lost */
    CLUSTER_ERR_OOM,
    CLUSTER_ERR_REPLICAS, /* the command ran, but fewer replicas than asked hold it */
    CLUSTER_ERR_LOST,     /* sent whole, no reply in time, not sent again: it may have run */
};

/* Counters summed over every handle of the process. */
typedef struct {
    uint64_t moved;           /* MOVED redirections followed */
    uint64_t ask;             /* ASK redirections followed */
    uint64_t retries;         /* attempts after TRYAGAIN, CLUSTERDOWN or an unreachable master */
    uint64_t refreshes;       /* slot maps fetched */
    uint64_t wait_shortfalls; /* commands fewer replicas acknowledged than asked */
} cluster_stats;

void cluster_get_stats(cluster_stats *out);

typedef struct cluster cluster;

/* Returns a handle that connects lazily with cfg (copied): its nodes are
 * the seeds, asked for the slot map until one answers; its command timeout
 * is the whole budget of one command, retries included. NULL when out of
 * memory. Release with cluster_free(). */
cluster *cluster_new(const store_config *cfg);
void cluster_free(cluster *c);

/* Borrowed: valid until the next call on c. */
int cluster_err(const cluster *c);
const char *cluster_errstr(const cluster *c);

/* One command. argv and lens are borrowed and not modified. */
typedef struct {
    int argc;
    const char **argv;
    const size_t *lens;
    /* When set, the command is argv[0..1] = EVALSHA <digest> of this script,
     * loaded on each master before its first use (whatever argv[0..1] hold is
     * replaced). One script per handle. */
    const char *script;
    /* >= 0: the index of an argument replaced, on each attempt, by the last
     * moment (microseconds of the target master's clock) the command may
     * start and still answer within the command timeout. */
    int deadline_arg;
    /* > 0: after the command, WAIT until this many replicas hold it, for at
     * most what is left of the command timeout. */
    int min_replicas;
    /* Whether the command may be sent again when its reply was lost (it may
     * then have run twice). */
    int resend;
} cluster_command;

/* Redirections one command follows at most. */
#define CLUSTER_REDIRECTS_MAX 16

/* Runs cmd on the master serving the slot of key. Follows MOVED (and
 * refreshes the slot map, closing connections to nodes it no longer
 * names) and ASK (ASKING first, for that attempt only), the first at once,
 * later ones after a backoff, at most CLUSTER_REDIRECTS_MAX;
 * retries TRYAGAIN, CLUSTERDOWN and unreachable masters with a short
 * backoff until the command timeout is spent. Returns the reply, which the
 * caller frees with freeReplyObject(): the command's own answer, or an
 * error reply that is not the cluster's (a wrong type, a script error).
 * Returns NULL with err set when it could not be run in time
 * (CLUSTER_ERR_IO), was sent but its reply was lost and cmd->resend is 0
 * (CLUSTER_ERR_LOST: it may have run), ran but fewer than min_replicas
 * replicas acknowledged it (CLUSTER_ERR_REPLICAS: the write is on the
 * master), or memory ran out. */
redisReply *cluster_run(cluster *c, const char *key, size_t key_len, const cluster_command *cmd);

/* After CLUSTER_ERR_LOST: prepares out (unconnected) for the master the
 * command was sent to, with the cluster's timeouts, and sets *sent_redis_us
 * to that master's clock when it was sent, so that the caller can ask the
 * master what became of it. */
void cluster_lost_node(const cluster *c, struct store_conn *out, int64_t *sent_redis_us);

/* Fetches the slot map afresh and asks each master for CLUSTER INFO.
 * Returns 0 when all 16384 slots are served by masters that answer with
 * cluster_state:ok, else -1 with the reason in errstr. */
int cluster_check(cluster *c);

#endif
