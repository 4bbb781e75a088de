/* The transport to one Redis: every session's keys on the one connection
 * of the handle (store_node_transport), commits run once with a deadline,
 * a lost reply asked after on a connection of its own, and log entries
 * sent without waiting kept in order: settled before another handle reads
 * or commits to their session, and joined on their connection by the
 * session's next entry. */
#include "conn.h"
#include "layout.h"
#include "mono_clock.h"
#include "operations.h"
#include "staged.h"
#include "store_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A handle's state. Its own thread uses c under lock; another thread takes
 * the lock too, to read the replies c owes (node_settle()) or to send a
 * session's entry behind the earlier ones c carries (node_event_defer()). */
typedef struct node {
    store_conn c;
    pthread_mutex_t lock;
    uint64_t deferred_total;       /* entries sent without waiting, ever; under lock */
    atomic_uint_fast64_t sent;     /* deferred_total as the last user left it */
    atomic_uint_fast64_t answered; /* of those, answered (or lost with their connection) */
    uint64_t id;                   /* unique in the process */
} node;

static atomic_uint_fast64_t last_id;

/* Where a session's next entry sent without waiting goes: on the
 * connection of the handle that sent its earlier ones while Redis has not
 * answered them all (Redis runs one connection's commands in order, not
 * one connection's before another's), else on the sender's own. By a hash
 * of the session and its Redis: two sessions that share a slot at most
 * share a connection for a while. Reads, deletes and commits of the
 * session wait for that handle's answers. A slot's owner is alive while
 * the slot's lock is held (a closing handle lets go of its slots first).
 * Lock order: a slot, then a handle. */
enum { ORDER_SLOTS = 1024 };
typedef struct {
    pthread_mutex_t lock;
    node *owner; /* the last handle the slot's entries went on, or NULL */
} order_slot;
static order_slot order[ORDER_SLOTS];
static pthread_once_t order_once = PTHREAD_ONCE_INIT;

static void order_init(void)
{
    for (size_t i = 0; i < ORDER_SLOTS; i++)
        pthread_mutex_init(&order[i].lock, NULL);
}

/* The session's slot on c's Redis (FNV-1a of its namespace, its port and
 * database). */
static order_slot *order_slot_of(const char *ns, const store_conn *c)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)ns; *p; p++)
        h = (h ^ *p) * 16777619u;
    h = (h ^ (uint32_t)c->addr.port) * 16777619u;
    h = (h ^ (uint32_t)c->db) * 16777619u;
    return &order[h % ORDER_SLOTS];
}

static void *node_open(const store_config *cfg)
{
    node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    conn_init(&n->c, &cfg->nodes[0], cfg);
    pthread_mutex_init(&n->lock, NULL);
    pthread_once(&order_once, order_init);
    n->id = atomic_fetch_add(&last_id, 1) + 1;
    return n;
}

/* Publishes, under n's lock, what the settling of other handles reads. */
static void publish_counts(node *n)
{
    atomic_store(&n->answered, n->deferred_total - n->c.deferred);
    atomic_store(&n->sent, n->deferred_total);
}

/* Waits, under n's lock, until Redis has answered every entry n sent
 * without waiting (until deadline; a connection that fails has lost
 * them). */
static void settle_own(node *n, int64_t deadline)
{
    pthread_mutex_lock(&n->lock);
    while (conn_settle(&n->c) > 0 && mono_clock_us() < deadline)
        nanosleep(&(struct timespec){0, 100000}, NULL);
    publish_counts(n);
    pthread_mutex_unlock(&n->lock);
}

static void node_close(void *impl)
{
    node *n = impl;
    if (!n)
        return;
    /* Once n is gone, a session's next entry goes on another connection:
     * what n still owes is answered first. No entry is sent on n after
     * its slots are let go. One command timeout in all. */
    int64_t deadline = mono_clock_us() + (int64_t)n->c.command_timeout_ms * 1000;
    for (size_t i = 0; i < ORDER_SLOTS; i++) {
        pthread_mutex_lock(&order[i].lock);
        if (order[i].owner == n) {
            settle_own(n, deadline);
            order[i].owner = NULL;
        }
        pthread_mutex_unlock(&order[i].lock);
    }
    conn_close(&n->c);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

static store_conn *conn_of(store *s)
{
    return &((node *)s->impl)->c;
}

static void node_lock(store *s)
{
    pthread_mutex_lock(&((node *)s->impl)->lock);
}

static void node_unlock(store *s)
{
    node *n = s->impl;
    publish_counts(n);
    pthread_mutex_unlock(&n->lock);
}

/* Copies the connection's error (already counted) into the handle. */
static int conn_failed(store *s)
{
    store_conn *c = conn_of(s);
    store_fail_quiet(s, c->err ? c->err : STORE_ERR_IO, "%s", c->errstr);
    return -1;
}

static redisReply *node_command(store *s, int argc, const char **argv, const size_t *lens)
{
    node_lock(s);
    redisReply *r = conn_command(conn_of(s), argc, argv, lens);
    if (!r)
        conn_failed(s);
    node_unlock(s);
    return r;
}

static int node_ping(store *s)
{
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    redisReply *r = op_expect(s, node_command(s, 1, argv, lens), REDIS_REPLY_STATUS, 0, "PING");
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* ---- Writes ---- */

/* How long after a commit is sent Redis may still start it: the command
 * timeout less a margin for running it and for the reply's way back, so
 * that a commit Redis runs is one compactd waits for. */
static int64_t commit_window_us(const store_conn *c)
{
    int64_t ms = c->command_timeout_ms, margin = ms / 4 < 500 ? ms / 4 : 500;
    return (ms - margin) * 1000;
}

/* Waits until min_replicas replicas hold what c wrote, for at most the
 * commit window. Returns 0, or -1 with the handle's error set. */
static int wait_replicas(store *s, store_conn *c, int min_replicas)
{
    char n[16], ms[24];
    snprintf(n, sizeof(n), "%d", min_replicas);
    snprintf(ms, sizeof(ms), "%lld", (long long)(commit_window_us(c) / 1000));
    const char *argv[] = {"WAIT", n, ms};
    size_t lens[] = {4, strlen(n), strlen(ms)};
    redisReply *r = conn_command(c, 3, argv, lens);
    if (!r)
        return conn_failed(s);
    long long acked = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    if (acked >= min_replicas)
        return 0;
    store_count_wait_shortfall();
    store_fail(s, STORE_ERR_REPLICAS,
               "commit not replicated: written on Redis, but %lld of %d replicas acknowledged it "
               "within the timeout",
               acked, min_replicas);
    return -1;
}

/* How long the question of ask_outcome() may wait for its answer: a
 * Redis still running the commit answers it right after. The smaller of
 * the two timeouts (so that a stalled Redis costs a small commit little
 * more than its timeout), and one command timeout more for each 4 MiB the
 * commit sent, since Redis's time to run it grows with its size; at most
 * eight more. */
static int probe_budget_ms(const store_conn *c, size_t sent_bytes)
{
    int base = c->connect_timeout_ms < c->command_timeout_ms ? c->connect_timeout_ms
                                                             : c->command_timeout_ms;
    size_t extra = sent_bytes / (4u << 20);
    return base + c->command_timeout_ms * (int)(extra < 8 ? extra : 8);
}

/* After a commit's reply was lost: asks Redis, on a connection of its own
 * (the commit's may be stuck behind it), whether the commit (cargv, as
 * node_commit() laid it out) landed. By the time this asks, the commit's
 * deadline has passed in Redis's clock, so a commit not run yet never
 * will be: the answer is final. Returns the probe's reply (SCRIPT_LANDED
 * or SCRIPT_NOT_LANDED), or NULL when no answer came. */
static redisReply *ask_outcome(const store_conn *c, int cargc, const char **cargv,
                               const size_t *clens, int64_t sent_redis_us)
{
    enum { FIXED = 8, COMMIT_FIXED = 3 + LAYOUT_COMMIT_KEYS + LAYOUT_COMMIT_FIXED_ARGS };
    const char *nonce = cargv[LAYOUT_ARGV_NAME];
    size_t n = (size_t)(cargc - COMMIT_FIXED) / LAYOUT_COMMIT_ARGS_PER_SPILL, sent_bytes = 0;
    char since[24];
    for (int i = 0; i < cargc; i++)
        sent_bytes += clens[i];
    /* Log entries since a second before the commit was sent. */
    snprintf(since, sizeof(since), "%lld", (long long)(sent_redis_us / 1000 - 1000));
    size_t argc = FIXED + (nonce[0] ? 0 : n);
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *lens = malloc(argc * sizeof(*lens));
    if (!argv || !lens) {
        free(argv);
        free(lens);
        return NULL;
    }
    /* KEYS text, events and marker: the commit's argv[3], [5] and [7]. */
    const char *fixed[FIXED] = {
        "EVAL", layout_probe_script, "3", cargv[3], cargv[5], cargv[7], since, nonce};
    for (size_t i = 0; i < FIXED; i++) {
        argv[i] = fixed[i];
        lens[i] = strlen(fixed[i]);
    }
    for (size_t i = 0; i + FIXED < argc; i++) {
        argv[FIXED + i] = cargv[COMMIT_FIXED + LAYOUT_COMMIT_ARGS_PER_SPILL * i];
        lens[FIXED + i] = clens[COMMIT_FIXED + LAYOUT_COMMIT_ARGS_PER_SPILL * i];
    }
    store_conn probe;
    int budget_ms = probe_budget_ms(c, sent_bytes);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    time_t until = now.tv_sec + budget_ms / 1000 + 1;
    conn_init_like(&probe, c, budget_ms);
    redisReply *r;
    /* A script running past busy-reply-threshold (5 s by default) makes
     * Redis answer BUSY: the commit is still running; ask again. */
    while (!(r = conn_command(&probe, (int)argc, argv, lens)) && probe.err == STORE_ERR_PROTOCOL &&
           strstr(probe.errstr, "BUSY") && clock_gettime(CLOCK_MONOTONIC, &now) == 0 &&
           now.tv_sec < until)
        nanosleep(&(struct timespec){0, 50 * 1000000}, NULL);
    conn_close(&probe);
    free(argv);
    free(lens);
    if (r && r->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

/* Sent, and no reply: find out rather than guess. */
redisReply *store_commit_after_lost_reply(store *s, const store_conn *like, int argc,
                                          const char **argv, const size_t *lens,
                                          int64_t sent_redis_us, const char *why)
{
    redisReply *r = ask_outcome(like, argc, argv, lens, sent_redis_us);
    if (!r) {
        store_fail_quiet(s, STORE_ERR_UNKNOWN,
                         "commit: outcome unknown, Redis stopped answering after it was "
                         "sent (%s); a retry is safe",
                         why);
        return NULL;
    }
    if (r->integer != SCRIPT_LANDED) {
        freeReplyObject(r);
        store_fail_quiet(s, STORE_ERR_IO, "commit: not written (%s)", why);
        return NULL;
    }
    if (s->min_replicas > 0) {
        /* Landed, but WAIT on another connection would count none of it:
         * how many replicas hold it is not known. */
        freeReplyObject(r);
        store_count_wait_shortfall();
        store_fail(s, STORE_ERR_REPLICAS,
                   "commit not replicated: written on Redis after a lost reply, replicas "
                   "unknown");
        return NULL;
    }
    return r;
}

static redisReply *script_locked(store *s, const char *script, int argc, const char **argv,
                                 size_t *lens, int deadline_arg, int flags)
{
    store_conn *c = conn_of(s);
    char deadline[24];
    /* A deadline needs the clock, which loading measures; other scripts go
     * as EVAL until then, sparing a read its round trip. */
    if (deadline_arg >= 0 && conn_script_prepare(c, script) != 0) {
        conn_failed(s);
        return NULL;
    }
    /* The deadline last, right before sending. */
    int64_t sent = conn_redis_time_us(c);
    if (deadline_arg >= 0) {
        argv[deadline_arg] = deadline;
        lens[deadline_arg] = (size_t)snprintf(deadline, sizeof(deadline), "%lld",
                                              (long long)(sent + commit_window_us(c)));
    }
    redisReply *r = conn_script(c, script, argc, argv, lens);
    if (!r && (flags & STORE_SCRIPT_ONCE) && c->err == STORE_ERR_IO && c->sent)
        return store_commit_after_lost_reply(s, c, argc, argv, lens, sent, c->errstr);
    if (!r) {
        /* Refused by Redis, or never sent whole (a command cut short is
         * discarded with the connection): nothing written. */
        conn_failed(s);
    } else if (deadline_arg >= 0 && r->type == REDIS_REPLY_INTEGER &&
               r->integer == SCRIPT_TOO_LATE) {
        /* Too late: start over with a fresh connection (and clock). */
        conn_close(c);
    } else if ((flags & STORE_SCRIPT_WAIT) && s->min_replicas > 0 &&
               r->type == REDIS_REPLY_INTEGER &&
               (r->integer == SCRIPT_WRITTEN || r->integer == SCRIPT_ALREADY_WRITTEN) &&
               wait_replicas(s, c, s->min_replicas) != 0) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

static redisReply *node_script(store *s, const char *script, int argc, const char **argv,
                               size_t *lens, int deadline_arg, int flags)
{
    node_lock(s);
    redisReply *r = script_locked(s, script, argc, argv, lens, deadline_arg, flags);
    node_unlock(s);
    return r;
}

static int same_redis(const store_conn *a, const store_conn *b)
{
    return a->db == b->db && a->addr.port == b->addr.port &&
           strcmp(a->addr.host, b->addr.host) == 0 &&
           strcmp(a->addr.unix_path, b->addr.unix_path) == 0;
}

/* The handle that carries ns's entries Redis has not answered yet, other
 * than self, or NULL; under ns's slot lock. A handle of another Redis (a
 * process may hold two stores, whose sessions may share a slot) carries
 * none of this one's. */
static node *carrier(const order_slot *o, const node *self)
{
    node *m = o->owner;
    return m && m != self && atomic_load(&m->answered) < atomic_load(&m->sent) &&
                   same_redis(&m->c, &self->c)
               ? m
               : NULL;
}

static int node_event_defer(store *s, const char *ns, const char *event, size_t event_len)
{
    node *self = s->impl;
    layout_keys k;
    if (op_keys(s, ns, &k) != 0)
        return -1;
    const char *argv[] = {"XADD", k.events, "*", "entry", event};
    size_t lens[] = {4, strlen(k.events), 1, 5, event_len};
    order_slot *o = order_slot_of(ns, &self->c);
    pthread_mutex_lock(&o->lock);
    node *to = carrier(o, self);
    if (!to)
        to = self;
    pthread_mutex_lock(&to->lock);
    int rc = conn_defer(&to->c, 5, argv, lens);
    if (rc == 0)
        to->deferred_total++;
    else
        store_fail_quiet(s, to->c.err ? to->c.err : STORE_ERR_IO, "%s", to->c.errstr);
    publish_counts(to);
    pthread_mutex_unlock(&to->lock);
    if (rc == 0)
        o->owner = to;
    pthread_mutex_unlock(&o->lock);
    return rc == 0 ? 0 : -1;
}

/* ---- Settling entries sent without waiting ---- */

/* Redis serves its connections in turns, and only reads part of a
 * connection's backlog in each: a read sent on this connection after an
 * entry was sent on another one (a client's answer in between) may be
 * served first, most of all when Redis stalled with the entry unread or
 * the other connection not accepted yet. Once Redis has answered an
 * entry it holds it: wait for the answers to the session's entries sent
 * before now, for a command timeout. Entries sent since are not waited
 * for: their requests ran beside this one, and a handle that keeps
 * sending cannot hold it up. The carrier stays the slot's owner until it
 * owes none of them, or it is gone (and settled them as it went). */
static int node_settle(store *s, const char *ns)
{
    node *self = s->impl;
    order_slot *o = order_slot_of(ns, &self->c);
    int64_t deadline = mono_clock_us() + (int64_t)self->c.command_timeout_ms * 1000;
    pthread_mutex_lock(&o->lock);
    node *m = carrier(o, self);
    uint64_t id = m ? m->id : 0, sent = m ? atomic_load(&m->sent) : 0;
    int rc = 0;
    while (m && o->owner == m && m->id == id && atomic_load(&m->answered) < sent) {
        if (pthread_mutex_trylock(&m->lock) == 0) {
            /* A connection that fails here has lost what it owed: counted
             * in the errors, and nothing is left to wait for. */
            conn_settle(&m->c);
            publish_counts(m);
            pthread_mutex_unlock(&m->lock);
            if (atomic_load(&m->answered) >= sent)
                break;
        }
        if (mono_clock_us() >= deadline) {
            store_fail(s, STORE_ERR_IO,
                       "log entries sent earlier on another connection: Redis did not answer "
                       "them within the timeout");
            rc = -1;
            break;
        }
        pthread_mutex_unlock(&o->lock);
        nanosleep(&(struct timespec){0, 100000}, NULL);
        pthread_mutex_lock(&o->lock);
    }
    pthread_mutex_unlock(&o->lock);
    return rc;
}

const store_transport store_node_transport = {
    .name = "redis",
    .open = node_open,
    .close = node_close,
    .ping = node_ping,
    .event_defer = node_event_defer,
    .settle = node_settle,
    .command = node_command,
    .script = node_script,
};
