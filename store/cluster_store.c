/* The transport to a Redis Cluster: each command of the operations names
 * one session's keys, which share one slot, and goes where cluster.c's
 * routing sends it; with the cluster's own readiness and log append. */
#include "cluster.h"
#include "conn.h"
#include "layout.h"
#include "store_impl.h"

#include <stdio.h>
#include <string.h>

static void *cluster_open(const store_config *cfg)
{
    return cluster_new(cfg);
}

static void cluster_close(void *impl)
{
    cluster_free(impl);
}

static cluster *cluster_of(store *s)
{
    return s->impl;
}

/* Copies the cluster's error into the handle, counted once. */
static void cluster_failed(store *s, const char *what)
{
    cluster *c = cluster_of(s);
    int code = cluster_err(c) == CLUSTER_ERR_REPLICAS ? STORE_ERR_REPLICAS
               : cluster_err(c) == CLUSTER_ERR_OOM    ? STORE_ERR_OOM
                                                      : STORE_ERR_IO;
    store_fail(s, code, "%s%s: %s", what, code == STORE_ERR_REPLICAS ? " not replicated" : "",
               cluster_errstr(c));
}

/* Every command of node.c names a key of the session at argv[1]; reads and
 * DEL may be sent again after a lost reply. */
static redisReply *cluster_transport_command(store *s, int argc, const char **argv,
                                             const size_t *lens)
{
    cluster_command cmd = {argc, argv, lens, NULL, -1, 0, 1};
    redisReply *r = cluster_run(cluster_of(s), argv[1], lens[1], &cmd);
    if (!r) {
        cluster_failed(s, argv[0]);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        store_fail(s, STORE_ERR_PROTOCOL, "%s: %.*s", argv[0], (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* A script routed by its first key (KEYS[1], argv[3]). One sent once is
 * not sent again after a lost reply (a commit's log entry would be
 * appended twice): the master it went to is asked whether it ran, as on
 * one Redis. */
static redisReply *cluster_script(store *s, const char *script, int argc, const char **argv,
                                  size_t *lens, int deadline_arg, int flags)
{
    cluster_command cmd = {argc,
                           argv,
                           lens,
                           script,
                           deadline_arg,
                           (flags & STORE_SCRIPT_WAIT) ? s->min_replicas : 0,
                           !(flags & STORE_SCRIPT_ONCE)};
    redisReply *r = cluster_run(cluster_of(s), argv[3], lens[3], &cmd);
    if (!r && (flags & STORE_SCRIPT_ONCE) && cluster_err(cluster_of(s)) == CLUSTER_ERR_LOST) {
        store_conn master;
        int64_t sent_redis_us;
        cluster_lost_node(cluster_of(s), &master, &sent_redis_us);
        return store_commit_after_lost_reply(s, &master, argc, argv, lens, sent_redis_us,
                                             cluster_errstr(cluster_of(s)));
    }
    if (!r) {
        cluster_failed(s, "script");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        store_fail(s, STORE_ERR_PROTOCOL, "script: %.*s", (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Ready when every slot is served by a master whose cluster_state is ok,
 * and a command routed like a session's is answered: a node that redirects
 * every command (in a circle, or to ever new addresses) is not a store. */
static int cluster_ping(store *s)
{
    if (cluster_check(cluster_of(s)) != 0) {
        cluster_failed(s, "cluster");
        return -1;
    }
    static const char key[] = "compactd:{compactd-readiness}:probe";
    const char *argv[] = {"EXISTS", key};
    size_t lens[] = {6, sizeof(key) - 1};
    redisReply *r = cluster_transport_command(s, 2, argv, lens);
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    if (!ok)
        store_fail(s, STORE_ERR_PROTOCOL, "EXISTS: unexpected reply");
    return ok ? 0 : -1;
}

/* On a cluster the entry's answer is awaited: a deferred reply could be a
 * redirection that nobody follows. */
static int cluster_event_defer(store *s, const char *ns, const char *event, size_t event_len)
{
    layout_keys k;
    if (layout_keys_make(ns, &k) != 0) {
        store_fail(s, STORE_ERR_PROTOCOL, "namespace too long");
        return -1;
    }
    const char *argv[] = {"XADD", k.events, "*", "entry", event};
    size_t lens[] = {4, strlen(k.events), 1, 5, event_len};
    cluster_command cmd = {5, argv, lens, NULL, -1, 0, 0};
    redisReply *r = cluster_run(cluster_of(s), k.events, lens[1], &cmd);
    if (!r) {
        cluster_failed(s, "XADD");
        return -1;
    }
    int ok = r->type != REDIS_REPLY_ERROR;
    if (!ok)
        store_fail(s, STORE_ERR_PROTOCOL, "XADD: %.*s", (int)r->len, r->str);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* ---- The table ---- */

static const store_transport cluster_transport = {
    .name = "redis-cluster",
    .open = cluster_open,
    .close = cluster_close,
    .ping = cluster_ping,
    .event_defer = cluster_event_defer,
    .event_defer_waits = 1,
    .command = cluster_transport_command,
    .script = cluster_script,
};

const store_transport *store_cluster_transport(void)
{
    return &cluster_transport;
}
