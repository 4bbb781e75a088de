/* The Redis Cluster connection layer: per-master connections, routing by
 * slot, redirections and bounded retries, and WAIT for replicas. */
#include "cluster.h"

#include "conn.h"
#include "mono_clock.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct cluster {
    store_config cfg;
    cluster_slot_map map;
    int map_stale;     /* fetch the map before the next attempt */
    store_conn *conns; /* one per node met, masters and seeds */
    size_t n_conns;
    int err;
    char errstr[320];
    /* Where the last command went and that master's clock when it was sent:
     * for cluster_lost_node(). */
    store_node_addr last_node;
    int64_t last_sent_redis_us;
};

static atomic_uint_fast64_t stat_moved, stat_ask, stat_retries, stat_refreshes, stat_shortfalls;

void cluster_get_stats(cluster_stats *out)
{
    out->moved = atomic_load(&stat_moved);
    out->ask = atomic_load(&stat_ask);
    out->retries = atomic_load(&stat_retries);
    out->refreshes = atomic_load(&stat_refreshes);
    out->wait_shortfalls = atomic_load(&stat_shortfalls);
}

/* ---- Handles ---- */

cluster *cluster_new(const store_config *cfg)
{
    cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = *cfg;
    cluster_slot_map_init(&c->map);
    c->map_stale = 1;
    return c;
}

void cluster_free(cluster *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_conns; i++)
        conn_close(&c->conns[i]);
    free(c->conns);
    cluster_slot_map_clear(&c->map);
    free(c);
}

int cluster_err(const cluster *c)
{
    return c->err;
}

const char *cluster_errstr(const cluster *c)
{
    return c->errstr;
}

static void set_error(cluster *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(cluster *c, int code, const char *fmt, ...)
{
    va_list ap;
    c->err = code;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
}

/* ---- Clocks ---- */

static void sleep_us(int64_t us)
{
    struct timespec t = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* ---- Connections ---- */

/* The connection to addr, added (unconnected) when new; NULL when out of
 * memory. Pointers into c->conns last until the next call. */
static store_conn *conn_for(cluster *c, const cluster_addr *addr)
{
    for (size_t i = 0; i < c->n_conns; i++)
        if (c->conns[i].addr.port == addr->port && strcmp(c->conns[i].addr.host, addr->host) == 0)
            return &c->conns[i];
    store_conn *grown = realloc(c->conns, (c->n_conns + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    c->conns = grown;
    store_node_addr node;
    memset(&node, 0, sizeof(node));
    snprintf(node.host, sizeof(node.host), "%s", addr->host);
    node.port = addr->port;
    store_conn *n = &c->conns[c->n_conns++];
    conn_init(n, &node, &c->cfg);
    return n;
}

/* Connects n if it is not, within the connect timeout and what is left
 * until end. Returns 0, or -1 with the reason in c's error. Nothing of a
 * command has been sent when this fails. */
static int conn_ready(cluster *c, store_conn *n, int64_t end)
{
    int64_t left_ms = (end - mono_clock_us()) / 1000;
    n->connect_timeout_ms = (int)(left_ms < c->cfg.connect_timeout_ms ? (left_ms > 1 ? left_ms : 1)
                                                                      : c->cfg.connect_timeout_ms);
    if (conn_ensure(n) == 0)
        return 0;
    set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, n->errstr);
    return -1;
}

/* A command of the layer's own (CLUSTER SLOTS, CLUSTER INFO) on n. */
static redisReply *own_command(cluster *c, store_conn *n, const char *what)
{
    const char *argv[] = {"CLUSTER", what};
    size_t lens[] = {7, strlen(what)};
    redisReply *r = conn_command(n, 2, argv, lens);
    if (!r)
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, n->errstr);
    return r;
}

/* ---- Slot map ---- */

static int fetch_map_from(cluster *c, store_conn *n, int64_t end)
{
    if (conn_ready(c, n, end) != 0)
        return -1;
    redisReply *r = own_command(c, n, "SLOTS");
    if (!r)
        return -1;
    char err[128];
    cluster_slot_map fresh;
    cluster_slot_map_init(&fresh);
    int rc = cluster_slot_map_parse(r, n->addr.host, &fresh, err, sizeof(err));
    freeReplyObject(r);
    if (rc != 0) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, err);
        return -1;
    }
    cluster_slot_map_clear(&c->map);
    c->map = fresh;
    c->map_stale = 0;
    return 0;
}

/* Whether addr is a master of the map or a seed: the nodes worth a
 * connection. */
static int node_known(const cluster *c, const store_node_addr *addr)
{
    for (size_t i = 0; i < c->map.n_masters; i++)
        if (c->map.masters[i].port == addr->port && strcmp(c->map.masters[i].host, addr->host) == 0)
            return 1;
    for (size_t i = 0; i < c->cfg.n_nodes; i++)
        if (c->cfg.nodes[i].port == addr->port && strcmp(c->cfg.nodes[i].host, addr->host) == 0)
            return 1;
    return 0;
}

/* Closes the connections to nodes the fresh map no longer names: a node
 * that redirects to ever new addresses must not grow the table for good.
 * Invalidates pointers into c->conns. */
static void prune_conns(cluster *c)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->n_conns; i++) {
        if (node_known(c, &c->conns[i].addr))
            c->conns[kept++] = c->conns[i];
        else
            conn_close(&c->conns[i]);
    }
    c->n_conns = kept;
}

/* Fetches the slot map: first from prefer (the node that just claimed a
 * slot, when not NULL), then the masters known, then the seeds. Returns 0,
 * or -1 when none answered. */
static int refresh_map(cluster *c, const cluster_addr *prefer, int64_t end)
{
    store_conn *n;
    if (prefer && (n = conn_for(c, prefer)) && fetch_map_from(c, n, end) == 0) {
        prune_conns(c);
        return 0;
    }
    /* The map is replaced as soon as one node answers: copy the masters. */
    size_t known = c->map.n_masters;
    cluster_addr *masters = known ? malloc(known * sizeof(*masters)) : NULL;
    if (masters)
        memcpy(masters, c->map.masters, known * sizeof(*masters));
    else
        known = 0;
    int rc = -1;
    for (size_t i = 0; rc != 0 && i < known + c->cfg.n_nodes && mono_clock_us() < end; i++) {
        cluster_addr seed;
        if (i >= known) {
            snprintf(seed.host, sizeof(seed.host), "%s", c->cfg.nodes[i - known].host);
            seed.port = c->cfg.nodes[i - known].port;
        }
        if ((n = conn_for(c, i < known ? &masters[i] : &seed)))
            rc = fetch_map_from(c, n, end);
    }
    free(masters);
    if (rc == 0)
        prune_conns(c);
    return rc;
}

/* ---- Commands ---- */

/* The margin kept between the last moment a command may start and the end
 * of the command's budget, for running it and for the reply's way back. */
static int64_t margin_us(const cluster *c)
{
    int64_t ms = c->cfg.command_timeout_ms;
    return (ms / 4 < 500 ? ms / 4 : 500) * 1000;
}

/* The digest of script on n, loading it first if n has not; NULL with the
 * error set when it cannot be loaded. */
static const char *script_sha(cluster *c, store_conn *n, const char *script)
{
    if (conn_script_prepare(n, script) != 0) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, n->errstr);
        return NULL;
    }
    for (size_t i = 0; i < CONN_SCRIPTS_MAX; i++)
        if (n->scripts[i].text == script)
            return n->scripts[i].sha;
    return NULL;
}

/* Forgets script's digest on n, so that it is loaded again. */
static void script_forget(store_conn *n, const char *script)
{
    for (size_t i = 0; i < CONN_SCRIPTS_MAX; i++)
        if (n->scripts[i].text == script)
            n->scripts[i].sha[0] = '\0';
}

typedef enum { SENT_NOTHING, SENT_LOST, SENT_OK } send_result;

/* Sends [ASKING] cmd [WAIT] on n as one write and reads the replies: the
 * command's in *reply, the number of replicas WAIT counted in *acked.
 * SENT_LOST when the connection failed after the command may have left. */
static send_result send_once(cluster *c, store_conn *n, const cluster_command *cmd, int asking,
                             int64_t end, const char **argv, size_t *lens, char *deadline,
                             redisReply **reply, long long *acked)
{
    *reply = NULL;
    c->last_node = n->addr;
    c->last_sent_redis_us = n->clock_ok ? conn_redis_time_us(n) : 0;
    if (cmd->deadline_arg >= 0) {
        int64_t last_start = end - margin_us(c) - mono_clock_us() + conn_redis_time_us(n);
        lens[cmd->deadline_arg] = (size_t)snprintf(deadline, 24, "%lld", (long long)last_start);
    }
    int64_t wait_ms = (end - margin_us(c) - mono_clock_us()) / 1000;
    if (wait_ms < 1)
        wait_ms = 1; /* WAIT 0 would block for good */
    char replicas[16], wait_s[24];
    const char *asking_argv[] = {"ASKING"}, *wait_argv[] = {"WAIT", replicas, wait_s};
    size_t asking_lens[] = {6},
           wait_lens[] = {4, (size_t)snprintf(replicas, sizeof(replicas), "%d", cmd->min_replicas),
                          (size_t)snprintf(wait_s, sizeof(wait_s), "%lld", (long long)wait_ms)};
    if ((asking && conn_append(n, 1, asking_argv, asking_lens) != 0) ||
        conn_append(n, cmd->argc, argv, lens) != 0 ||
        (cmd->min_replicas > 0 && conn_append(n, 3, wait_argv, wait_lens) != 0)) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, n->errstr);
        conn_close(n);
        return SENT_NOTHING;
    }
    int expected = 1 + asking + (cmd->min_replicas > 0);
    redisReply *r[3] = {NULL, NULL, NULL};
    if (conn_read_by(n, r, (size_t)expected, end) != 0) {
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %s", n->addr.host, n->addr.port, n->errstr);
        return n->sent ? SENT_LOST : SENT_NOTHING;
    }
    if (asking)
        freeReplyObject(r[0]);
    *reply = r[asking];
    *acked = -1;
    if (cmd->min_replicas > 0) {
        redisReply *w = r[expected - 1];
        /* A command refused (MOVED, ...) was never written: WAIT counts
         * nothing of it. */
        *acked = w->type == REDIS_REPLY_INTEGER ? w->integer : 0;
        freeReplyObject(w);
    }
    return SENT_OK;
}

/* Sleeps before the next attempt, doubling from 10 ms to 200 ms, never past
 * end. Returns 0, or -1 when no time is left. */
static int backoff(int64_t *delay_us, int64_t end)
{
    int64_t left = end - mono_clock_us() - 1000;
    if (left <= 0)
        return -1;
    sleep_us(*delay_us < left ? *delay_us : left);
    *delay_us = *delay_us * 2 < 200000 ? *delay_us * 2 : 200000;
    atomic_fetch_add(&stat_retries, 1);
    return 0;
}

/* Counts one redirection of a command: the first is followed at once (a
 * slot that just moved), later ones after a backoff, and past
 * CLUSTER_REDIRECTS_MAX the command fails (a node that redirects in
 * circles, or to ever new addresses). Returns 0 to follow it, -1 not. */
static int redirected(cluster *c, int *redirects, int64_t *delay, int64_t end)
{
    if (++*redirects > CLUSTER_REDIRECTS_MAX) {
        char why[sizeof(c->errstr)];
        snprintf(why, sizeof(why), "%s", c->errstr);
        set_error(c, CLUSTER_ERR_IO, "more than %d redirections (last: %s)", CLUSTER_REDIRECTS_MAX,
                  why);
        return -1;
    }
    return *redirects > 1 ? backoff(delay, end) : 0;
}

/* Where one cluster_run() stands between its attempts. */
typedef struct {
    int64_t end, delay;
    int slot, asking, redirects;
    cluster_addr ask_to, moved_to;
    const cluster_addr *prefer;
} route_state;

/* What an error reply makes cluster_run() do next. */
typedef enum { NEXT_RETRY, NEXT_ANSWER, NEXT_STOP, NEXT_TIMED_OUT } next_step;

/* Follows an error reply r from node n: a redirection, a cluster that is
 * down or busy, a flushed script cache. Frees r unless it is the answer
 * (NEXT_ANSWER: an error of the command itself). */
static next_step on_error_reply(cluster *c, const cluster_command *cmd, store_conn *n,
                                redisReply *r, route_state *st)
{
    int to_slot;
    cluster_addr to;
    switch (cluster_reply_classify(r->str, r->len, &to_slot, &to)) {
    case CLUSTER_REPLY_MOVED:
        atomic_fetch_add(&stat_moved, 1);
        st->moved_to = to;
        st->prefer = &st->moved_to;
        /* Believed at once: should no node answer for the map, the next
         * attempt still goes where the slot now lives. */
        if (to_slot == st->slot)
            cluster_slot_map_assign(&c->map, st->slot, &to);
        c->map_stale = 1;
        set_error(c, CLUSTER_ERR_IO, "%.*s", (int)r->len, r->str);
        freeReplyObject(r);
        return redirected(c, &st->redirects, &st->delay, st->end) != 0 ? NEXT_STOP : NEXT_RETRY;
    case CLUSTER_REPLY_ASK:
        atomic_fetch_add(&stat_ask, 1);
        st->ask_to = to;
        st->asking = 1;
        set_error(c, CLUSTER_ERR_IO, "%.*s", (int)r->len, r->str);
        freeReplyObject(r);
        return redirected(c, &st->redirects, &st->delay, st->end) != 0 ? NEXT_STOP : NEXT_RETRY;
    case CLUSTER_REPLY_CLUSTERDOWN:
        c->map_stale = 1;
        /* fall through */
    case CLUSTER_REPLY_TRYAGAIN:
        set_error(c, CLUSTER_ERR_IO, "%s:%d: %.*s", n->addr.host, n->addr.port, (int)r->len,
                  r->str);
        freeReplyObject(r);
        return backoff(&st->delay, st->end) != 0 ? NEXT_TIMED_OUT : NEXT_RETRY;
    case CLUSTER_REPLY_NOSCRIPT:
        if (!cmd->script)
            return NEXT_ANSWER;
        /* The master's script cache was flushed: load it again. */
        script_forget(n, cmd->script);
        set_error(c, CLUSTER_ERR_IO, "%.*s", (int)r->len, r->str);
        freeReplyObject(r);
        atomic_fetch_add(&stat_retries, 1);
        return NEXT_RETRY;
    case CLUSTER_REPLY_OTHER:
        break;
    }
    return NEXT_ANSWER;
}

/* The connection the next attempt goes to, or NULL with c's error set:
 * out of memory (CLUSTER_ERR_OOM), or a slot no master serves. */
static store_conn *attempt_conn(cluster *c, route_state *st)
{
    if (!st->asking && c->map.owner[st->slot] < 0) {
        set_error(c, CLUSTER_ERR_IO, "slot %d is not served", st->slot);
        c->map_stale = 1;
        return NULL;
    }
    store_conn *n = conn_for(c, st->asking ? &st->ask_to : &c->map.masters[c->map.owner[st->slot]]);
    if (!n)
        set_error(c, CLUSTER_ERR_OOM, "out of memory");
    return n;
}

/* A copy of cmd's arguments that each attempt may rewrite (EVALSHA, the
 * deadline), or -1 when out of memory. */
static int copy_args(const cluster_command *cmd, const char ***argv, size_t **lens)
{
    *argv = malloc((size_t)cmd->argc * sizeof(**argv));
    *lens = malloc((size_t)cmd->argc * sizeof(**lens));
    if (!*argv || !*lens) {
        free(*argv);
        free(*lens);
        return -1;
    }
    memcpy(*argv, cmd->argv, (size_t)cmd->argc * sizeof(**argv));
    memcpy(*lens, cmd->lens, (size_t)cmd->argc * sizeof(**lens));
    return 0;
}

redisReply *cluster_run(cluster *c, const char *key, size_t key_len, const cluster_command *cmd)
{
    int64_t start = mono_clock_us();
    route_state st = {.end = start + (int64_t)c->cfg.command_timeout_ms * 1000,
                      .delay = 10000,
                      .slot = cluster_key_slot(key, key_len)};
    int attempts = 0;
    char deadline[24], last[sizeof(c->errstr)] = "no attempt";
    const char **argv;
    size_t *lens;

    c->err = 0;
    c->errstr[0] = '\0';
    if (copy_args(cmd, &argv, &lens) != 0) {
        set_error(c, CLUSTER_ERR_OOM, "out of memory");
        return NULL;
    }
    if (cmd->deadline_arg >= 0)
        argv[cmd->deadline_arg] = deadline;

    redisReply *out = NULL;
    for (;; attempts++) {
        if (attempts > 0 && c->err) {
            snprintf(last, sizeof(last), "%s", c->errstr);
            c->err = 0;
        }
        /* A command with a deadline sent past it would be refused unrun. */
        if (mono_clock_us() >= st.end - (cmd->deadline_arg >= 0 ? margin_us(c) : 1000))
            break;
        if (c->map_stale) {
            /* Counted here, not in cluster_check(): the metric is for maps
             * that routing needed, not for readiness probes. */
            atomic_fetch_add(&stat_refreshes, 1);
            if (refresh_map(c, st.prefer, st.end) != 0 && c->map.n_masters == 0) {
                if (backoff(&st.delay, st.end) != 0)
                    break;
                continue;
            }
        }
        st.prefer = NULL;
        const char *sha = NULL;
        store_conn *n = attempt_conn(c, &st);
        if (!n) {
            if (c->err == CLUSTER_ERR_OOM)
                goto done;
            if (backoff(&st.delay, st.end) != 0)
                break;
            continue;
        }
        if (conn_ready(c, n, st.end) != 0 ||
            (cmd->script && !(sha = script_sha(c, n, cmd->script)))) {
            conn_close(n);
            c->map_stale = 1;
            st.asking = 0;
            if (backoff(&st.delay, st.end) != 0)
                break;
            continue;
        }
        if (cmd->script) {
            argv[0] = "EVALSHA";
            lens[0] = 7;
            argv[1] = sha;
            lens[1] = 40;
        }
        redisReply *r;
        long long acked;
        send_result sent =
            send_once(c, n, cmd, st.asking, st.end, argv, lens, deadline, &r, &acked);
        st.asking = 0;
        if (sent != SENT_OK) {
            c->map_stale = 1;
            if (c->err == CLUSTER_ERR_OOM)
                goto done;
            if (sent == SENT_LOST && !cmd->resend) {
                /* errstr is both the message's source and its destination. */
                char why[sizeof(c->errstr)];
                snprintf(why, sizeof(why), "%s", c->errstr);
                set_error(c, CLUSTER_ERR_LOST, "%s (the command may have run; not sent again)",
                          why);
                goto done;
            }
            if (backoff(&st.delay, st.end) != 0)
                break;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            next_step next = on_error_reply(c, cmd, n, r, &st);
            if (next == NEXT_RETRY)
                continue;
            if (next == NEXT_STOP)
                goto stop;
            if (next == NEXT_TIMED_OUT)
                goto timed_out;
        }
        if (cmd->min_replicas > 0 && r->type != REDIS_REPLY_ERROR && acked < cmd->min_replicas) {
            atomic_fetch_add(&stat_shortfalls, 1);
            set_error(c, CLUSTER_ERR_REPLICAS,
                      "written on master %s:%d, but %lld of %d replicas acknowledged it within "
                      "the timeout",
                      n->addr.host, n->addr.port, acked, cmd->min_replicas);
            freeReplyObject(r);
            goto done;
        }
        out = r;
        goto done;
    }
stop:
    if (st.redirects > CLUSTER_REDIRECTS_MAX)
        goto done;
timed_out:
    if (c->err)
        snprintf(last, sizeof(last), "%s", c->errstr);
    set_error(c, CLUSTER_ERR_IO, "no answer within %d ms (%d attempts; last: %s)",
              c->cfg.command_timeout_ms, attempts + 1, last);
done:
    free(argv);
    free(lens);
    return out;
}

void cluster_lost_node(const cluster *c, store_conn *out, int64_t *sent_redis_us)
{
    conn_init(out, &c->last_node, &c->cfg);
    *sent_redis_us = c->last_sent_redis_us;
}

/* ---- Readiness ---- */

int cluster_check(cluster *c)
{
    int64_t end = mono_clock_us() + (int64_t)c->cfg.command_timeout_ms * 1000;
    c->err = 0;
    c->errstr[0] = '\0';
    if (refresh_map(c, NULL, end) != 0)
        return -1;
    size_t served = cluster_slot_map_served(&c->map);
    if (served != CLUSTER_SLOTS) {
        set_error(c, CLUSTER_ERR_IO, "%zu of %d slots served", served, CLUSTER_SLOTS);
        return -1;
    }
    for (size_t i = 0; i < c->map.n_masters; i++) {
        store_conn *n = conn_for(c, &c->map.masters[i]);
        if (!n) {
            set_error(c, CLUSTER_ERR_OOM, "out of memory");
            return -1;
        }
        if (conn_ready(c, n, end) != 0)
            return -1;
        redisReply *r = own_command(c, n, "INFO");
        if (!r)
            return -1;
        int ok = r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        freeReplyObject(r);
        if (!ok) {
            set_error(c, CLUSTER_ERR_IO, "master %s:%d: cluster_state is not ok", n->addr.host,
                      n->addr.port);
            return -1;
        }
    }
    return 0;
}
