/* The store's operations on one Redis: every session's keys on the one
 * connection of the handle (store_node_ops). */
#include "conn.h"
#include "layout.h"
#include "staged.h"
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *node_open(const store_config *cfg)
{
    store_conn *c = malloc(sizeof(*c));
    if (c)
        conn_init(c, &cfg->nodes[0], cfg);
    return c;
}

static void node_close(void *impl)
{
    if (impl)
        conn_close(impl);
    free(impl);
}

static store_conn *conn_of(store *s)
{
    return s->impl;
}

/* Copies the connection's error (already counted) into the handle. */
static int conn_failed(store *s)
{
    store_conn *c = conn_of(s);
    store_fail_quiet(s, c->err ? c->err : STORE_ERR_IO, "%s", c->errstr);
    return -1;
}

static int oom(store *s)
{
    store_fail(s, STORE_ERR_OOM, "out of memory");
    return -1;
}

static int keys_for(store *s, const char *ns, layout_keys *k)
{
    if (layout_keys_make(ns, k) == 0)
        return 0;
    store_fail(s, STORE_ERR_PROTOCOL, "namespace too long");
    return -1;
}

/* Runs one command; NULL after setting the handle's error. Through the
 * handle's transport, so that a cluster runs these operations too. */
static redisReply *command(store *s, int argc, const char **argv, const size_t *lens)
{
    return s->ops->command(s, argc, argv, lens);
}

/* r when it is of the type asked for (or nil, where nil_ok); else NULL with
 * STORE_ERR_PROTOCOL, after freeing r: a node that answers anything else
 * is a store that failed (503), never an empty session (404). */
static redisReply *expect(store *s, redisReply *r, int type, int nil_ok, const char *what)
{
    if (!r || r->type == type || (nil_ok && r->type == REDIS_REPLY_NIL))
        return r;
    store_fail(s, STORE_ERR_PROTOCOL, "%s: unexpected reply of type %d", what, r->type);
    freeReplyObject(r);
    return NULL;
}

static redisReply *node_command(store *s, int argc, const char **argv, const size_t *lens)
{
    redisReply *r = conn_command(conn_of(s), argc, argv, lens);
    if (!r)
        conn_failed(s);
    return r;
}

static int node_ping(store *s)
{
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    redisReply *r = expect(s, command(s, 1, argv, lens), REDIS_REPLY_STATUS, 0, "PING");
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

/* How long the question of commit_outcome() may wait for its answer: a
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
 * will be: the answer is final. Returns the probe's reply (integer 1: it
 * landed; 0: it did not and will not), or NULL when no answer came. */
static redisReply *commit_outcome(const store_conn *c, int cargc, const char **cargv,
                                  const size_t *clens, int64_t sent_redis_us)
{
    enum { FIXED = 8, COMMIT_FIXED = 3 + LAYOUT_COMMIT_KEYS + LAYOUT_COMMIT_FIXED_ARGS };
    const char *nonce = cargv[COMMIT_FIXED - 1];
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
    const char *fixed[FIXED] = {"EVAL",   layout_probe_script, "3",  cargv[3],
                                cargv[5], cargv[7],            since, nonce};
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
    redisReply *r = commit_outcome(like, argc, argv, lens, sent_redis_us);
    if (!r) {
        store_fail_quiet(s, STORE_ERR_UNKNOWN,
                         "commit: outcome unknown, Redis stopped answering after it was "
                         "sent (%s); a retry is safe",
                         why);
        return NULL;
    }
    if (r->integer != 1) {
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

static redisReply *node_script(store *s, const char *script, int argc, const char **argv,
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
    } else if (deadline_arg >= 0 && r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
        /* Too late: start over with a fresh connection (and clock). */
        conn_close(c);
    } else if ((flags & STORE_SCRIPT_WAIT) && s->min_replicas > 0 &&
               r->type == REDIS_REPLY_INTEGER && r->integer >= 1 &&
               wait_replicas(s, c, s->min_replicas) != 0) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

static int node_commit(store *s, const char *ns, const store_spill *spills, size_t n,
                       const char *created_at, const char *event, size_t event_len,
                       const char *commit_key)
{
    /* EVALSHA digest, key count, keys, deadline, event, nonce */
    enum { FIXED = 3 + LAYOUT_COMMIT_KEYS + LAYOUT_COMMIT_FIXED_ARGS };
    layout_keys k;
    if (keys_for(s, ns, &k) != 0)
        return -1;
    if (staged_needed(spills, n))
        return staged_commit(s, &k, spills, n, created_at, event, event_len, commit_key);

    size_t argc = FIXED + LAYOUT_COMMIT_ARGS_PER_SPILL * n;
    const char **argv = calloc(argc, sizeof(*argv));
    size_t *lens = calloc(argc, sizeof(*lens));
    char **owned = calloc(2 * n + 1, sizeof(*owned)); /* fields and metas */
    char nonce[17] = "", marker[sizeof(k.stage) + 24];
    int rc = -1;
    if (!argv || !lens || !owned) {
        oom(s);
        goto done;
    }
    if (event && commit_key)
        snprintf(nonce, sizeof(nonce), "%.16s", commit_key);
    else if (event)
        staged_make_nonce(nonce);
    layout_marker_key(&k, nonce, marker, sizeof(marker));
    const char *fixed[FIXED] = {NULL,   NULL,         "5",        k.text,
                                k.meta, k.events,     k.pending,  marker,
                                "(deadline)", event ? event : "", nonce};
    for (size_t i = 2; i < FIXED; i++) {
        argv[i] = fixed[i];
        lens[i] = i == FIXED - 2 ? (event ? event_len : 0) : strlen(fixed[i]);
    }
    for (size_t i = 0; i < n; i++) {
        const store_spill *sp = &spills[i];
        size_t field_len;
        char *field = layout_field(sp->sha256, sp->key, sp->key_len, &field_len);
        char *meta = layout_meta(sp, created_at);
        owned[2 * i] = field;
        owned[2 * i + 1] = meta;
        if (!field || !meta) {
            oom(s);
            goto done;
        }
        size_t a = FIXED + LAYOUT_COMMIT_ARGS_PER_SPILL * i;
        argv[a] = field;
        lens[a] = field_len;
        argv[a + 1] = sp->text;
        lens[a + 1] = sp->text_len;
        argv[a + 2] = meta;
        lens[a + 2] = strlen(meta);
    }
    redisReply *r;
    /* -1: a staged commit of the session is being merged; merge it first. */
    for (int round = 0;; round++) {
        r = s->ops->script(s, layout_commit_script, (int)argc, argv, lens, FIXED - 3,
                           STORE_SCRIPT_ONCE | STORE_SCRIPT_WAIT);
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != -1 || round == 8)
            break;
        freeReplyObject(r);
        r = NULL;
        if (staged_roll_forward(s, &k) != 0)
            goto done;
    }
    /* 2: a retry of a commit already written; nothing written again. */
    if (r && (r->type != REDIS_REPLY_INTEGER || (r->integer != 1 && r->integer != 2))) {
        /* Redis ran it too late to be waited for, and wrote nothing. */
        store_fail(s, STORE_ERR_IO, "commit: Redis did not run it within the timeout");
    } else if (r) {
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
done:
    for (size_t i = 0; owned && i < 2 * n; i++)
        free(owned[i]);
    free(owned);
    free(argv);
    free(lens);
    return rc;
}

static int node_event_defer(store *s, const char *ns, const char *event, size_t event_len)
{
    layout_keys k;
    if (keys_for(s, ns, &k) != 0)
        return -1;
    const char *argv[] = {"XADD", k.events, "*", "entry", event};
    size_t lens[] = {4, strlen(k.events), 1, 5, event_len};
    if (conn_defer(conn_of(s), 5, argv, lens) != 0)
        return conn_failed(s);
    return 0;
}

static int node_session_delete(store *s, const char *ns)
{
    layout_keys k;
    if (keys_for(s, ns, &k) != 0)
        return -1;
    /* A commit still being merged goes with its pieces; one only staged
     * expires. */
    const char *get[] = {"GET", k.pending};
    size_t get_lens[] = {3, strlen(k.pending)};
    redisReply *p = command(s, 2, get, get_lens);
    if (!p)
        return -1;
    char nonce[17];
    size_t pieces = 0;
    if (p->type != REDIS_REPLY_STRING || sscanf(p->str, "%16s %*s %zu", nonce, &pieces) != 2)
        pieces = 0;
    freeReplyObject(p);
    const char **argv = malloc((5 + pieces) * sizeof(*argv));
    size_t *lens = malloc((5 + pieces) * sizeof(*lens));
    char(*stage)[sizeof(k.stage) + 48] = calloc(pieces ? pieces : 1, sizeof(*stage));
    int rc = -1;
    if (!argv || !lens || !stage) {
        oom(s);
        goto done;
    }
    /* UNLINK: a session of 100,000 spills would hold Redis for the whole
     * free under DEL. */
    const char *fixed[] = {"UNLINK", k.text, k.meta, k.events, k.pending};
    for (size_t i = 0; i < 5; i++) {
        argv[i] = fixed[i];
        lens[i] = strlen(fixed[i]);
    }
    for (size_t i = 0; i < pieces; i++) {
        argv[5 + i] = stage[i];
        lens[5 + i] = (size_t)layout_stage_key(&k, nonce, i, stage[i], sizeof(stage[i]));
    }
    redisReply *r = expect(s, command(s, (int)(5 + pieces), argv, lens), REDIS_REPLY_INTEGER, 0,
                           "UNLINK");
    if (r) {
        freeReplyObject(r);
        rc = 0;
    }
done:
    free(argv);
    free(lens);
    free(stage);
    return rc;
}

/* ---- Reads ---- */

/* Reads the meta hash whole: metadata is small next to the texts. */
static int read_meta(store *s, const layout_keys *k, store_record **out, size_t *n)
{
    const char *argv[] = {"HGETALL", k->meta};
    size_t lens[] = {7, strlen(k->meta)};
    redisReply *r = expect(s, staged_read(s, k, 2, argv, lens), REDIS_REPLY_ARRAY, 0, "HGETALL");
    *out = NULL;
    *n = 0;
    if (!r)
        return -1;
    size_t count = r->elements / 2;
    store_record *recs = calloc(count ? count : 1, sizeof(*recs));
    if (!recs) {
        freeReplyObject(r);
        return oom(s);
    }
    size_t got = 0;
    for (size_t i = 0; i < count; i++) {
        redisReply *f = r->element[2 * i], *v = r->element[2 * i + 1];
        if (layout_record_from_meta(f->str, f->len, v->str, v->len, &recs[got]) == 0)
            got++;
    }
    freeReplyObject(r);
    *out = recs;
    *n = got;
    return 0;
}

static int node_spill_list(store *s, const char *ns, store_record **out, size_t *n)
{
    layout_keys k;
    if (keys_for(s, ns, &k) != 0 || read_meta(s, &k, out, n) != 0)
        return -1;
    qsort(*out, *n, sizeof(**out), layout_record_cmp);
    return 0;
}

/* One version of a key, as newest_version() weighs it. */
typedef struct {
    int ordered; /* written since the spill order is kept */
    unsigned long long a, b;
    store_record rec;
} version;

static int version_later(const version *x, const version *y)
{
    if (x->ordered != y->ordered)
        return x->ordered > y->ordered;
    if (x->ordered && (x->a != y->a || x->b != y->b))
        return x->a != y->a ? x->a > y->a : x->b > y->b;
    return layout_record_cmp(&x->rec, &y->rec) > 0;
}

/* Finds the version of key spilled last (layout_commit_script keeps the
 * order); writes its digest into sha256. Reads the metadata whole, as the
 * listing does. Returns 1, 0 when the key has no spill, -1 on error. */
static int newest_version(store *s, const layout_keys *k, const char *key, size_t key_len,
                          char *sha256)
{
    const char *argv[] = {"HGETALL", k->meta};
    size_t lens[] = {7, strlen(k->meta)};
    redisReply *r = expect(s, staged_read(s, k, 2, argv, lens), REDIS_REPLY_ARRAY, 0, "HGETALL");
    if (!r)
        return -1;
    version best = {0}, v;
    int found = 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *m = r->element[i + 1];
        if (f->len != 65 + key_len || memcmp(f->str + 65, key, key_len) != 0)
            continue;
        memset(&v, 0, sizeof(v));
        v.ordered = layout_meta_order(m->str, m->len, &v.a, &v.b);
        if (layout_record_from_meta(f->str, f->len, m->str, m->len, &v.rec) != 0)
            continue;
        if (!found || version_later(&v, &best)) {
            store_record_clear(&best.rec);
            best = v;
            found = 1;
        } else {
            store_record_clear(&v.rec);
        }
    }
    freeReplyObject(r);
    if (found)
        memcpy(sha256, best.rec.sha256, 65);
    store_record_clear(&best.rec);
    return found;
}

static int node_spill_get(store *s, const char *ns, const char *key, size_t key_len,
                          const char *sha256, store_record *out)
{
    layout_keys k;
    char newest[65];
    if (keys_for(s, ns, &k) != 0)
        return -1;
    if (!sha256) {
        int found = newest_version(s, &k, key, key_len, newest);
        if (found <= 0)
            return found;
        sha256 = newest;
    }

    size_t flen;
    char *field = layout_field(sha256, key, key_len, &flen);
    if (!field)
        return oom(s);
    const char *argv[] = {"HMGET", k.meta, field};
    size_t lens[] = {5, strlen(k.meta), flen};
    /* The text needs no guard: it is written before or with its metadata
     * and never changes. */
    redisReply *meta = expect(s, staged_read(s, &k, 3, argv, lens), REDIS_REPLY_ARRAY, 0, "HMGET");
    if (meta && meta->elements != 1) {
        freeReplyObject(meta);
        meta = NULL;
        store_fail(s, STORE_ERR_PROTOCOL, "HMGET: unexpected reply");
    }
    argv[0] = "HGET";
    lens[0] = 4;
    argv[1] = k.text;
    lens[1] = strlen(k.text);
    redisReply *text =
        meta ? expect(s, command(s, 3, argv, lens), REDIS_REPLY_STRING, 1, "HGET") : NULL;

    int rc = -1;
    if (meta && text) {
        redisReply *m = meta->element[0];
        rc = 0;
        if (m->type == REDIS_REPLY_STRING && text->type == REDIS_REPLY_STRING) {
            rc = layout_record_from_meta(field, flen, m->str, m->len, out) == 0 ? 1 : -1;
            if (rc == 1) {
                out->text = layout_dup(text->str, text->len);
                out->text_len = text->len;
                if (!out->text) {
                    store_record_clear(out);
                    rc = -1;
                }
            }
            if (rc < 0)
                store_fail(s, STORE_ERR_OOM, "malformed spill record or out of memory");
        }
    }
    if (meta)
        freeReplyObject(meta);
    if (text)
        freeReplyObject(text);
    free(field);
    return rc;
}

/* ---- Reads by digest prefix ---- */

/* The HSCAN pattern of the fields of key whose digest starts with prefix:
 * the prefix, one '?' per digit left, ':', then key with Redis's glob
 * characters escaped. A pattern of fixed width before the key, so a ':' in
 * a key cannot make another key's field match. Returns a new string. */
static char *prefix_pattern(const char *prefix, size_t prefix_len, const char *key, size_t key_len,
                            size_t *len)
{
    char *p = malloc(65 + 2 * key_len);
    if (!p)
        return NULL;
    memcpy(p, prefix, prefix_len);
    memset(p + prefix_len, '?', 64 - prefix_len);
    p[64] = ':';
    size_t n = 65;
    for (size_t i = 0; i < key_len; i++) {
        if (key[i] != '\0' && strchr("*?[]\\", key[i]))
            p[n++] = '\\';
        p[n++] = key[i];
    }
    *len = n;
    return p;
}

static int digest_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 64);
}

/* Collects the distinct digests of key's versions that start with prefix.
 * Returns 0 with a new array in *out (sorted), or -1. */
static int prefix_candidates(store *s, const layout_keys *k, const char *prefix, size_t prefix_len,
                             const char *key, size_t key_len, char (**out)[65], size_t *n)
{
    size_t plen, cap = 0;
    char *pattern = prefix_pattern(prefix, prefix_len, key, key_len, &plen);
    char cursor[32] = "0";
    *out = NULL;
    *n = 0;
    if (!pattern)
        return oom(s);
    do {
        const char *argv[] = {"HSCAN", k->meta, cursor, "MATCH", pattern, "COUNT", "1000"};
        size_t lens[] = {5, strlen(k->meta), strlen(cursor), 5, plen, 5, 4};
        redisReply *r = staged_read(s, k, 7, argv, lens);
        if (!r)
            goto fail;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof(cursor) ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            store_fail(s, STORE_ERR_PROTOCOL, "HSCAN: unexpected reply");
            goto fail;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
        redisReply *fields = r->element[1];
        for (size_t i = 0; i + 1 < fields->elements; i += 2) {
            const redisReply *f = fields->element[i];
            /* The pattern narrows; this decides. */
            if (f->type != REDIS_REPLY_STRING || f->len != 65 + key_len || f->str[64] != ':' ||
                memcmp(f->str, prefix, prefix_len) != 0 || memcmp(f->str + 65, key, key_len) != 0)
                continue;
            if (*n == cap) {
                cap = cap ? 2 * cap : 4;
                char(*bigger)[65] = realloc(*out, cap * sizeof(**out));
                if (!bigger) {
                    freeReplyObject(r);
                    oom(s);
                    goto fail;
                }
                *out = bigger;
            }
            memcpy((*out)[*n], f->str, 64);
            (*out)[(*n)++][64] = '\0';
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    free(pattern);

    /* HSCAN may return a field twice while Redis resizes the hash. */
    size_t distinct = 0;
    if (*n)
        qsort(*out, *n, sizeof(**out), digest_cmp);
    for (size_t i = 0; i < *n; i++)
        if (distinct == 0 || memcmp((*out)[distinct - 1], (*out)[i], 64) != 0)
            memmove((*out)[distinct++], (*out)[i], 65);
    *n = distinct;
    return 0;
fail:
    free(pattern);
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

static int node_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                                 const char *prefix, size_t prefix_len, store_record *out,
                                 char (**candidates)[65], size_t *n_candidates)
{
    layout_keys k;
    char(*found)[65];
    size_t n;
    if (keys_for(s, ns, &k) != 0 ||
        prefix_candidates(s, &k, prefix, prefix_len, key, key_len, &found, &n) != 0)
        return -1;
    int rc = STORE_NOT_FOUND;
    if (n == 1) {
        /* Deleted in between reads as not found, like any later read. */
        memset(out, 0, sizeof(*out));
        rc = node_spill_get(s, ns, key, key_len, found[0], out);
    } else if (n > 1) {
        rc = STORE_AMBIGUOUS;
        if (candidates) {
            *candidates = found;
            found = NULL;
        }
        if (n_candidates)
            *n_candidates = n;
    }
    free(found);
    return rc;
}

/* HMGETs of the spills' metadata fields, LAYOUT_READ_ARGS_MAX at a time
 * (each sees any commit whole or not at all): only small values come back
 * (a spill's text and metadata are written and removed together). */
static int node_spill_exists_many(store *s, const char *ns, const store_spill_ref *refs, size_t n,
                                  unsigned char *found)
{
    enum { CHUNK = LAYOUT_READ_ARGS_MAX - 2 };
    layout_keys k;
    if (n == 0)
        return 0;
    if (keys_for(s, ns, &k) != 0)
        return -1;
    size_t most = n < CHUNK ? n : CHUNK;
    const char **argv = malloc((most + 2) * sizeof(*argv));
    size_t *lens = malloc((most + 2) * sizeof(*lens));
    char **fields = calloc(most, sizeof(*fields));
    int rc = 0;
    if (!argv || !lens || !fields) {
        free(argv);
        free(lens);
        free(fields);
        return oom(s);
    }
    argv[0] = "HMGET";
    lens[0] = 5;
    argv[1] = k.meta;
    lens[1] = strlen(k.meta);
    for (size_t at = 0; rc == 0 && at < n; at += most) {
        size_t m = n - at < most ? n - at : most;
        for (size_t i = 0; i < m; i++) {
            fields[i] = layout_field(refs[at + i].sha256, refs[at + i].key, refs[at + i].key_len,
                                     &lens[i + 2]);
            argv[i + 2] = fields[i];
            if (!fields[i])
                rc = oom(s);
        }
        redisReply *r = rc == 0 ? staged_read(s, &k, (int)m + 2, argv, lens) : NULL;
        if (!r) {
            rc = -1;
        } else if (r->type != REDIS_REPLY_ARRAY || r->elements != m) {
            store_fail(s, STORE_ERR_PROTOCOL, "HMGET: unexpected reply");
            rc = -1;
        } else {
            for (size_t i = 0; i < m; i++)
                found[at + i] = r->element[i]->type == REDIS_REPLY_STRING;
        }
        if (r)
            freeReplyObject(r);
        for (size_t i = 0; i < m; i++) {
            free(fields[i]);
            fields[i] = NULL;
        }
    }
    free(fields);
    free(argv);
    free(lens);
    return rc;
}

/* ---- Decision log reads ---- */

static int node_event_range(store *s, const char *ns, const char *after, size_t limit,
                            store_event **out, size_t *n)
{
    layout_keys k;
    char start[64], count[24];
    if (keys_for(s, ns, &k) != 0)
        return -1;
    if (after)
        snprintf(start, sizeof(start), "(%.*s", 48, after);
    else
        strcpy(start, "-");
    snprintf(count, sizeof(count), "%zu", limit);
    const char *argv[] = {"XRANGE", k.events, start, "+", "COUNT", count};
    size_t lens[] = {6, strlen(k.events), strlen(start), 1, 5, strlen(count)};
    redisReply *r = expect(s, command(s, 6, argv, lens), REDIS_REPLY_ARRAY, 0, "XRANGE");
    if (!r)
        return -1;

    size_t total = r->elements;
    store_event *ev = calloc(total ? total : 1, sizeof(*ev));
    if (!ev) {
        freeReplyObject(r);
        return oom(s);
    }
    size_t got = 0;
    for (size_t i = 0; i < total; i++) {
        redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2)
            continue;
        redisReply *id = e->element[0], *fv = e->element[1];
        if (id->len >= sizeof(ev[got].id) || fv->type != REDIS_REPLY_ARRAY || fv->elements < 2)
            continue;
        memcpy(ev[got].id, id->str, id->len);
        ev[got].id[id->len] = '\0';
        ev[got].data = layout_dup(fv->element[1]->str, fv->element[1]->len);
        ev[got].data_len = fv->element[1]->len;
        if (!ev[got].data) {
            store_events_free(ev, got);
            freeReplyObject(r);
            return oom(s);
        }
        got++;
    }
    freeReplyObject(r);
    *out = ev;
    *n = got;
    return 0;
}

const store_ops store_node_ops = {
    .name = "redis",
    .open = node_open,
    .close = node_close,
    .ping = node_ping,
    .commit = node_commit,
    .spill_get = node_spill_get,
    .spill_get_prefix = node_spill_get_prefix,
    .spill_list = node_spill_list,
    .spill_exists_many = node_spill_exists_many,
    .session_delete = node_session_delete,
    .event_defer = node_event_defer,
    .event_range = node_event_range,
    .command = node_command,
    .script = node_script,
};
