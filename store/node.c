/* The transport to one Redis: every session's keys on the one connection
 * of the handle (store_node_transport), commits run once with a deadline,
 * a lost reply asked after on a connection of its own, and log entries
 * sent without waiting on the connection every handle shares for them
 * (below), in Redis before a read of their session. */
#include "conn.h"
#include "layout.h"
#include "mono_clock.h"
#include "operations.h"
#include "staged.h"
#include "store_impl.h"

#include <hiredis/sds.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Log entries sent without waiting: one connection, shared ----
 *
 * The entries of store_event_defer(), from every handle of the process
 * with one configuration, go on one connection of their own: an entry is
 * queued, and whichever handle finds no write under way writes every entry
 * queued, in one write (flat combining), the others waiting until theirs
 * is written. Each is written, or dropped with its error, before
 * log_batch_send() returns, so a compaction is answered after its entry
 * left, as when each handle sent its own. Entries are numbered as they are
 * written; the number Redis has answered up to is the fence that reads,
 * and the next command of the handle that sent one, wait on
 * (log_batch_wait()). */

typedef struct log_batch log_batch;

/* Entries written by one conn_defer() call at most (the queue holds one
 * entry per thread at most, so a batch is rarely longer). */
#define CHUNK 32

/* An entry queued, on its sender's stack. The writer fills number, err and
 * errstr before it marks it done (under the batch's lock); the sender
 * reads them once it sees done. */
typedef struct waiter {
    struct waiter *next;
    const char *what, *cmd;
    size_t len;
    int done;
    uint64_t number; /* 0: dropped */
    int err;
    char errstr[256];
} waiter;

struct log_batch {
    struct log_batch *next; /* the process's batches, under batches_lock */
    size_t users;           /* handles that acquired it, under batches_lock */
    atomic_size_t share;    /* users, for conn_defer()'s bound */

    pthread_mutex_t lock;   /* the queue and writing */
    pthread_cond_t written; /* a write is over */
    waiter *head, **tail;   /* entries not taken by a writer yet */
    int writing;            /* a writer has the queue's entries */

    pthread_mutex_t conn_lock; /* c and numbered: the writer, or a look at the replies */
    store_conn c;
    uint64_t numbered;             /* entries sent on b, ever */
    atomic_uint_fast64_t sent;     /* numbered, as the last writer left it */
    atomic_uint_fast64_t answered; /* every entry up to this one answered (or lost) */
};

static pthread_mutex_t batches_lock = PTHREAD_MUTEX_INITIALIZER;
static log_batch *batches;

static int same_config(const store_conn *a, const store_conn *b)
{
    return a->db == b->db && a->addr.port == b->addr.port &&
           strcmp(a->addr.host, b->addr.host) == 0 &&
           strcmp(a->addr.unix_path, b->addr.unix_path) == 0 && strcmp(a->user, b->user) == 0 &&
           strcmp(a->password, b->password) == 0 && a->tls_on == b->tls_on &&
           a->tls_ctx == b->tls_ctx && strcmp(a->tls_name, b->tls_name) == 0 &&
           a->connect_timeout_ms == b->connect_timeout_ms;
}

/* The batch for like's Redis (its address, database, credentials, TLS and
 * connect timeout), made on first use and shared by every handle that
 * acquires it until each has released it. NULL when out of memory. */
static log_batch *log_batch_acquire(const store_conn *like)
{
    pthread_mutex_lock(&batches_lock);
    log_batch *b = batches;
    while (b && !same_config(&b->c, like))
        b = b->next;
    if (!b && (b = calloc(1, sizeof(*b))) != NULL) {
        conn_init_like(&b->c, like, like->command_timeout_ms);
        b->c.ever_connected = 0; /* its first connect is not a reconnect */
        pthread_mutex_init(&b->lock, NULL);
        pthread_cond_init(&b->written, NULL);
        pthread_mutex_init(&b->conn_lock, NULL);
        b->tail = &b->head;
        b->next = batches;
        batches = b;
    }
    if (b)
        atomic_store(&b->share, ++b->users);
    pthread_mutex_unlock(&batches_lock);
    return b;
}

static void log_batch_release(log_batch *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&batches_lock);
    int last = --b->users == 0;
    atomic_store(&b->share, b->users);
    if (last)
        for (log_batch **at = &batches; *at; at = &(*at)->next)
            if (*at == b) {
                *at = b->next;
                break;
            }
    pthread_mutex_unlock(&batches_lock);
    if (!last)
        return;
    /* Unread replies are lost with the connection (their entries may or
     * may not have run), as they were with a handle's own. */
    conn_close(&b->c);
    pthread_mutex_destroy(&b->conn_lock);
    pthread_cond_destroy(&b->written);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* What Redis has answered, from the replies due: a connection that failed
 * owes none, its entries lost and counted. Under conn_lock. */
static void note_answered(log_batch *b)
{
    atomic_store(&b->sent, b->numbered);
    atomic_store(&b->answered, b->numbered - b->c.deferred);
}

/* Writes the entries from first on, in order, CHUNK to a conn_defer(). */
static void write_queued(log_batch *b, waiter *first)
{
    pthread_mutex_lock(&b->conn_lock);
    size_t share = atomic_load(&b->share);
    for (waiter *w = first; w;) {
        waiter *ws[CHUNK];
        const char *cmds[CHUNK];
        size_t lens[CHUNK], n = 0;
        unsigned char sent[CHUNK];
        for (; w && n < CHUNK; w = w->next, n++) {
            ws[n] = w;
            cmds[n] = w->cmd;
            lens[n] = w->len;
        }
        conn_defer(&b->c, ws[0]->what, n, cmds, lens, share ? share : 1, sent);
        for (size_t i = 0; i < n; i++) {
            ws[i]->number = sent[i] ? ++b->numbered : 0;
            if (!sent[i]) {
                ws[i]->err = b->c.err ? b->c.err : STORE_ERR_IO;
                snprintf(ws[i]->errstr, sizeof(ws[i]->errstr), "%s", b->c.errstr);
            }
        }
    }
    note_answered(b);
    pthread_mutex_unlock(&b->conn_lock);
}

/* Sends cmd (formatted by redisFormatCommandArgv(), named what in errors)
 * on b's connection, or has another handle's write send it. Returns the
 * entry's number (1 and up; every entry written before it on b has a
 * smaller one), or 0 when it was dropped, with err and errstr set:
 * conn_defer()'s cases. */
static uint64_t log_batch_send(log_batch *b, const char *what, const char *cmd, size_t len,
                               int *err, char *errstr, size_t errstr_size)
{
    waiter me = {.what = what, .cmd = cmd, .len = len};
    pthread_mutex_lock(&b->lock);
    *b->tail = &me;
    b->tail = &me.next;
    while (!me.done) {
        if (b->writing) {
            pthread_cond_wait(&b->written, &b->lock);
            continue;
        }
        /* No write under way: this thread writes every entry queued. */
        b->writing = 1;
        waiter *first = b->head;
        b->head = NULL;
        b->tail = &b->head;
        pthread_mutex_unlock(&b->lock);
        write_queued(b, first);
        pthread_mutex_lock(&b->lock);
        for (waiter *w = first, *next; w; w = next) {
            next = w->next;
            w->done = 1;
        }
        b->writing = 0;
        pthread_cond_broadcast(&b->written);
    }
    pthread_mutex_unlock(&b->lock);
    if (me.number == 0) {
        *err = me.err;
        snprintf(errstr, errstr_size, "%s", me.errstr);
    }
    return me.number;
}

/* The number of the last entry written on b so far. */
static uint64_t log_batch_sent(log_batch *b)
{
    return atomic_load(&b->sent);
}

/* Returns 0 once Redis has answered every entry of b up to number upto (or
 * the connection that held them failed: counted in the errors, and nothing
 * is left to wait for), -1 when it has not by deadline (mono_clock_us()).
 * Holds b's connection only for a look at what has come. */
static int log_batch_wait(log_batch *b, uint64_t upto, int64_t deadline)
{
    for (;;) {
        if (atomic_load(&b->answered) >= upto)
            return 0;
        /* A writer busy with the connection reads the replies that have
         * come as it writes: look again after it. */
        if (pthread_mutex_trylock(&b->conn_lock) == 0) {
            conn_settle(&b->c);
            note_answered(b);
            pthread_mutex_unlock(&b->conn_lock);
            if (atomic_load(&b->answered) >= upto)
                return 0;
        }
        if (mono_clock_us() >= deadline)
            return -1;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

/* ---- Handles ---- */

/* A handle's state: its connection, used by its own thread only, and the
 * log entries it sent without waiting, on the shared connection. */
typedef struct node {
    store_conn c;
    log_batch *batch;
    uint64_t last_entry; /* the number of the last entry it sent (log_batch_send()) */
} node;

static void *node_open(const store_config *cfg)
{
    node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    conn_init(&n->c, &cfg->nodes[0], cfg);
    n->batch = log_batch_acquire(&n->c);
    if (!n->batch) {
        free(n);
        return NULL;
    }
    return n;
}

static void node_close(void *impl)
{
    node *n = impl;
    if (!n)
        return;
    log_batch_release(n->batch);
    conn_close(&n->c);
    free(n);
}

static store_conn *conn_of(store *s)
{
    return &((node *)s->impl)->c;
}

/* Before a command: what this handle sent without waiting is in Redis
 * first, as it was when such entries went on the handle's own connection
 * (whose replies are read before the next command's). Returns 0, or -1
 * with the handle's error set when Redis has not answered them within the
 * command timeout. */
static int own_entries_answered(store *s)
{
    node *n = s->impl;
    if (n->last_entry == 0)
        return 0;
    int64_t deadline = mono_clock_us() + (int64_t)n->c.command_timeout_ms * 1000;
    int answered = log_batch_wait(n->batch, n->last_entry, deadline) == 0;
    /* Given up on otherwise, as a connection whose replies did not come
     * was dropped with them: the next command does not wait again. */
    n->last_entry = 0;
    if (answered)
        return 0;
    store_fail(s, STORE_ERR_IO, "earlier commands: Redis did not answer within the timeout");
    return -1;
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
    if (own_entries_answered(s) != 0)
        return NULL;
    redisReply *r = conn_command(conn_of(s), argc, argv, lens);
    if (!r)
        conn_failed(s);
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
    if (own_entries_answered(s) != 0)
        return NULL;
    return script_locked(s, script, argc, argv, lens, deadline_arg, flags);
}

static int node_event_defer(store *s, const char *ns, const char *event, size_t event_len)
{
    layout_keys k;
    if (op_keys(s, ns, &k) != 0)
        return -1;
    const char *argv[] = {"XADD", k.events, "*", "entry", event};
    size_t lens[] = {4, strlen(k.events), 1, 5, event_len};
    sds cmd = NULL;
    if (redisFormatSdsCommandArgv(&cmd, 5, argv, lens) < 0) {
        store_fail(s, STORE_ERR_IO, "XADD: out of memory");
        return -1;
    }
    node *n = s->impl;
    int err = 0;
    char errstr[256];
    uint64_t number =
        log_batch_send(n->batch, "XADD", cmd, sdslen(cmd), &err, errstr, sizeof(errstr));
    sdsfree(cmd);
    if (number == 0) {
        /* Counted already, as the connection's errors are. */
        store_fail_quiet(s, err, "%s", errstr);
        return -1;
    }
    n->last_entry = number;
    return 0;
}

/* ---- Settling entries sent without waiting ---- */

/* Redis serves its connections in turns, and only reads part of a
 * connection's backlog in each: a read sent on this connection after an
 * entry was sent on the shared one (a client's answer in between) may be
 * served first, most of all when Redis stalled with the entry unread or
 * that connection not accepted yet. Once Redis has answered an entry it
 * holds it: wait for the answers to every entry sent so far, for a
 * command timeout. */
static int node_settle(store *s)
{
    node *self = s->impl;
    int64_t deadline = mono_clock_us() + (int64_t)self->c.command_timeout_ms * 1000;
    if (log_batch_wait(self->batch, log_batch_sent(self->batch), deadline) == 0)
        return 0;
    store_fail(s, STORE_ERR_IO,
               "log entries sent earlier on another connection: Redis did not answer "
               "them within the timeout");
    return -1;
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
