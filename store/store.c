/* Redis access for spills and the decision log: one connection per handle,
 * reconnecting lazily after any failure, one round trip per operation. */
#include "store.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct store {
    store_config cfg;
    redisContext *ctx;
    int err;
    char errstr[128];
    int ever_connected;
    int64_t clock_offset_us; /* Redis's clock minus ours, measured at connect */
    int deferred;            /* sent commands whose replies are still unread */
    char script_sha[41];     /* the commit script as loaded on this connection */
};

static atomic_uint_fast64_t stat_errors;
static atomic_uint_fast64_t stat_reconnects;

void store_get_stats(store_stats *out)
{
    out->errors = atomic_load(&stat_errors);
    out->reconnects = atomic_load(&stat_reconnects);
}

/* ---- Configuration ---- */

static int parse_int(const char *s, size_t len, int lo, int hi, int *out)
{
    long v = 0;
    if (len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int store_config_parse_url(const char *url, store_config *cfg, char *err, size_t errlen)
{
    static const char redis_scheme[] = "redis://", unix_scheme[] = "unix://";

    cfg->host[0] = cfg->unix_path[0] = '\0';
    cfg->port = 6379;
    cfg->db = 0;
    if (strncmp(url, unix_scheme, sizeof(unix_scheme) - 1) == 0) {
        const char *path = url + sizeof(unix_scheme) - 1;
        if (path[0] != '/' || strlen(path) >= sizeof(cfg->unix_path)) {
            snprintf(err, errlen, "redis url '%s': expected unix:///absolute/path.sock", url);
            return -1;
        }
        strcpy(cfg->unix_path, path);
        return 0;
    }
    if (strncmp(url, redis_scheme, sizeof(redis_scheme) - 1) != 0) {
        snprintf(err, errlen, "redis url '%s': expected redis://host:port/db or unix:///path", url);
        return -1;
    }

    const char *host = url + sizeof(redis_scheme) - 1, *host_end, *p;
    if (*host == '[') { /* [::1]:6379 */
        host_end = strchr(host, ']');
        if (!host_end)
            goto bad;
        host++;
        p = host_end + 1;
    } else {
        host_end = host + strcspn(host, ":/");
        p = host_end;
    }
    size_t host_len = (size_t)(host_end - host);
    if (host_len == 0 || host_len >= sizeof(cfg->host))
        goto bad;
    memcpy(cfg->host, host, host_len);
    cfg->host[host_len] = '\0';

    if (*p == ':') {
        const char *port = ++p;
        p += strcspn(p, "/");
        if (parse_int(port, (size_t)(p - port), 1, 65535, &cfg->port) != 0)
            goto bad;
    }
    if (*p == '/' && p[1] != '\0') {
        if (parse_int(p + 1, strlen(p + 1), 0, 1000000, &cfg->db) != 0)
            goto bad;
    } else if (*p != '\0' && strcmp(p, "/") != 0) {
        goto bad;
    }
    return 0;
bad:
    snprintf(err, errlen, "redis url '%s': expected redis://host:port/db", url);
    return -1;
}

/* ---- Connection ---- */

store *store_new(const store_config *cfg)
{
    store *s = calloc(1, sizeof(*s));
    if (s)
        s->cfg = *cfg;
    return s;
}

void store_free(store *s)
{
    if (!s)
        return;
    if (s->ctx)
        redisFree(s->ctx);
    free(s);
}

int store_err(const store *s)
{
    return s->err;
}

const char *store_errstr(const store *s)
{
    return s->errstr;
}

static void set_error(store *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(store *s, int code, const char *fmt, ...)
{
    va_list ap;
    s->err = code;
    va_start(ap, fmt);
    vsnprintf(s->errstr, sizeof(s->errstr), fmt, ap);
    va_end(ap);
    atomic_fetch_add(&stat_errors, 1);
}

/* A connection that failed once may be half-read: drop it and start over on
 * the next call rather than guess its state. */
static void drop_connection(store *s, const char *what)
{
    s->deferred = 0;
    set_error(s, STORE_ERR_IO, "%s: %s", what,
              s->ctx && s->ctx->errstr[0] ? s->ctx->errstr : "I/O error");
    if (s->ctx) {
        redisFree(s->ctx);
        s->ctx = NULL;
    }
}

static struct timeval ms_to_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

static int64_t realtime_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Measures Redis's clock against ours, so that a commit can carry a deadline
 * in Redis's own time (see store_commit()). Returns 0, or -1. */
static int measure_clock(store *s)
{
    int64_t before = realtime_us();
    redisReply *r = redisCommand(s->ctx, "TIME");
    int64_t after = realtime_us();
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok) {
        int64_t redis_us =
            strtoll(r->element[0]->str, NULL, 10) * 1000000 + strtoll(r->element[1]->str, NULL, 10);
        s->clock_offset_us = redis_us - before - (after - before) / 2;
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Whether a connection that sat idle is still fit for a command. A Redis
 * that restarted (or dropped the client) has closed it, which shows as end
 * of file before anything is sent: reconnect then, instead of failing the
 * one request that finds out. Bytes waiting where no reply is due mean the
 * connection is out of step: not fit either. */
static int connection_fit(const redisContext *c)
{
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

/* One compaction's writes as one script, which Redis runs atomically like
 * MULTI/EXEC, with one thing EXEC cannot do: refuse to run late. When a
 * command times out, compactd answers 503, but the bytes are already in
 * Redis's socket buffer; a Redis that was stalled (SIGSTOP, a long fork, a
 * paused VM) would run them when it wakes and store spills nobody was told
 * about. So the script first checks Redis's clock against a deadline that
 * ends before compactd stops waiting, and writes nothing past it.
 * KEYS: text, meta, events. ARGV: deadline (us, Redis time), event (may be
 * empty), then field, text, meta for each spill. */
static const char commit_script[] =
    "local t = redis.call('TIME')\n"
    "if tonumber(t[1]) * 1000000 + tonumber(t[2]) > tonumber(ARGV[1]) then return 0 end\n"
    "for i = 3, #ARGV, 3 do\n"
    "  redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])\n"
    "  redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 2])\n"
    "end\n"
    "if ARGV[2] ~= '' then redis.call('XADD', KEYS[3], '*', 'entry', ARGV[2]) end\n"
    "return 1\n";

/* How long after a commit is sent Redis may still start it: the command
 * timeout less a margin for running it and for the reply's way back, so
 * that a commit Redis runs is one compactd waits for. */
static int64_t commit_window_us(const store *s)
{
    int64_t ms = s->cfg.command_timeout_ms, margin = ms / 4 < 500 ? ms / 4 : 500;
    return (ms - margin) * 1000;
}

/* Reads the replies of deferred commands (see store_event_defer()); they
 * have usually long arrived. Returns 0, or -1 when the connection failed. */
static int drain_deferred(store *s)
{
    for (; s->deferred > 0; s->deferred--) {
        redisReply *r = NULL;
        if (redisGetReply(s->ctx, (void **)&r) != REDIS_OK || !r) {
            s->deferred = 0;
            atomic_fetch_add(&stat_errors, 1);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR)
            atomic_fetch_add(&stat_errors, 1);
        freeReplyObject(r);
    }
    return 0;
}

static int ensure_connected(store *s)
{
    s->err = 0;
    s->errstr[0] = '\0';
    if (s->ctx) {
        /* A reply just read proves the connection as well as a peek. */
        if (s->deferred > 0 ? drain_deferred(s) == 0 : connection_fit(s->ctx))
            return 0;
        redisFree(s->ctx);
        s->ctx = NULL;
        s->deferred = 0;
    }

    struct timeval ct = ms_to_tv(s->cfg.connect_timeout_ms);
    if (s->cfg.unix_path[0])
        s->ctx = redisConnectUnixWithTimeout(s->cfg.unix_path, ct);
    else
        s->ctx = redisConnectWithTimeout(s->cfg.host, s->cfg.port, ct);
    if (!s->ctx || s->ctx->err) {
        drop_connection(s, "connect");
        return -1;
    }
    if (redisSetTimeout(s->ctx, ms_to_tv(s->cfg.command_timeout_ms)) != REDIS_OK) {
        drop_connection(s, "set timeout");
        return -1;
    }
    if (s->cfg.db != 0) {
        redisReply *r = redisCommand(s->ctx, "SELECT %d", s->cfg.db);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (!ok) {
            drop_connection(s, "select");
            return -1;
        }
    }
    if (measure_clock(s) != 0) {
        drop_connection(s, "time");
        return -1;
    }
    /* Loaded once per connection, so each commit sends 40 bytes of digest
     * instead of the script. */
    redisReply *r = redisCommand(s->ctx, "SCRIPT LOAD %s", commit_script);
    int loaded = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (loaded)
        memcpy(s->script_sha, r->str, 41);
    if (r)
        freeReplyObject(r);
    if (!loaded) {
        drop_connection(s, "script load");
        return -1;
    }
    if (s->ever_connected)
        atomic_fetch_add(&stat_reconnects, 1);
    s->ever_connected = 1;
    return 0;
}

/* Runs one command; returns its reply (caller frees) or NULL after setting
 * the error. An error reply from Redis is a protocol error. */
static redisReply *command(store *s, int argc, const char **argv, const size_t *lens)
{
    if (ensure_connected(s) != 0)
        return NULL;
    redisReply *r = redisCommandArgv(s->ctx, argc, argv, lens);
    if (!r) {
        drop_connection(s, argv[0]);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        set_error(s, STORE_ERR_PROTOCOL, "%s: %.*s", argv[0], (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int store_ping(store *s)
{
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    redisReply *r = command(s, 1, argv, lens);
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* ---- Per-thread handles ---- */

static pthread_key_t thread_key;
static store_config thread_cfg;

static void thread_store_free(void *p)
{
    store_free(p);
}

int store_thread_init(const store_config *cfg)
{
    thread_cfg = *cfg;
    return pthread_key_create(&thread_key, thread_store_free) == 0 ? 0 : -1;
}

store *store_for_thread(void)
{
    store *s = pthread_getspecific(thread_key);
    if (!s) {
        s = store_new(&thread_cfg);
        if (s && pthread_setspecific(thread_key, s) != 0) {
            store_free(s);
            s = NULL;
        }
    }
    return s;
}

/* ---- Key names ---- */

/* Every key of a session shares the hash tag {ns}; ns holds no braces, so
 * the tag is exactly the namespace and no unit key can reach into it. */
typedef struct {
    char text[300], meta[300], events[300];
} session_keys;

static int session_keys_make(store *s, const char *ns, session_keys *k)
{
    int a = snprintf(k->text, sizeof(k->text), "compactd:{%s}:text", ns);
    int b = snprintf(k->meta, sizeof(k->meta), "compactd:{%s}:meta", ns);
    int c = snprintf(k->events, sizeof(k->events), "compactd:{%s}:events", ns);
    if (a < 0 || b < 0 || c < 0 || (size_t)a >= sizeof(k->text) || (size_t)c >= sizeof(k->events)) {
        set_error(s, STORE_ERR_PROTOCOL, "namespace too long");
        return -1;
    }
    return 0;
}

/* A spill's field in the text and meta hashes: the fixed-width digest first,
 * so any key bytes may follow without ambiguity. Returns a new buffer. */
static char *field_make(const char *sha256, const char *key, size_t key_len, size_t *len)
{
    char *f = malloc(64 + 1 + key_len);
    if (!f)
        return NULL;
    memcpy(f, sha256, 64);
    f[64] = ':';
    memcpy(f + 65, key, key_len);
    *len = 65 + key_len;
    return f;
}

/* ---- Writes ---- */

int store_commit(store *s, const char *ns, const store_spill *spills, size_t n,
                 const char *created_at, const char *event, size_t event_len)
{
    enum { FIXED = 8 }; /* EVALSHA digest 3 text meta events deadline event */
    session_keys k;
    if (session_keys_make(s, ns, &k) != 0 || ensure_connected(s) != 0)
        return -1;

    size_t argc = FIXED + 3 * n;
    const char **argv = calloc(argc, sizeof(*argv));
    size_t *lens = calloc(argc, sizeof(*lens));
    char **owned = calloc(2 * n + 1, sizeof(*owned)); /* fields and metas */
    char deadline[24];
    int rc = -1;
    if (!argv || !lens || !owned) {
        set_error(s, STORE_ERR_OOM, "out of memory");
        goto done;
    }
    const char *fixed[FIXED] = {"EVALSHA", s->script_sha, "3",      k.text,
                                k.meta,    k.events,      deadline, event ? event : ""};
    for (size_t i = 0; i < 6; i++) {
        argv[i] = fixed[i];
        lens[i] = strlen(fixed[i]);
    }
    argv[6] = deadline; /* filled in last */
    argv[7] = fixed[7];
    lens[7] = event ? event_len : 0;
    for (size_t i = 0; i < n; i++) {
        const store_spill *sp = &spills[i];
        size_t field_len, meta_len = strlen(sp->cls) + strlen(created_at) + 24;
        char *field = field_make(sp->sha256, sp->key, sp->key_len, &field_len);
        char *meta = malloc(meta_len);
        owned[2 * i] = field;
        owned[2 * i + 1] = meta;
        if (!field || !meta) {
            set_error(s, STORE_ERR_OOM, "out of memory");
            goto done;
        }
        snprintf(meta, meta_len, "%s %lld %s", sp->cls, (long long)sp->tokens, created_at);
        size_t a = FIXED + 3 * i;
        argv[a] = field;
        lens[a] = field_len;
        argv[a + 1] = sp->text;
        lens[a + 1] = sp->text_len;
        argv[a + 2] = meta;
        lens[a + 2] = strlen(meta);
    }
    /* The deadline last, right before sending. */
    lens[6] =
        (size_t)snprintf(deadline, sizeof(deadline), "%lld",
                         (long long)(realtime_us() + s->clock_offset_us + commit_window_us(s)));

    redisReply *r = redisCommandArgv(s->ctx, (int)argc, argv, lens);
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* The script cache was flushed under us: send the script itself. */
        freeReplyObject(r);
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = commit_script;
        lens[1] = strlen(commit_script);
        r = redisCommandArgv(s->ctx, (int)argc, argv, lens);
    }
    if (!r) {
        drop_connection(s, "commit");
        goto done;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        set_error(s, STORE_ERR_PROTOCOL, "commit: %.*s", (int)r->len, r->str);
    } else if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
        /* Redis ran it too late to be waited for, and wrote nothing. Start
         * over with a fresh connection (and a fresh clock reading). */
        freeReplyObject(r);
        r = NULL;
        set_error(s, STORE_ERR_IO, "commit: Redis did not run it within the timeout");
        redisFree(s->ctx);
        s->ctx = NULL;
    } else {
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

int store_event_append(store *s, const char *ns, const char *event, size_t event_len)
{
    return store_commit(s, ns, NULL, 0, "", event, event_len);
}

int store_event_defer(store *s, const char *ns, const char *event, size_t event_len)
{
    session_keys k;
    if (session_keys_make(s, ns, &k) != 0 || ensure_connected(s) != 0)
        return -1;
    const char *argv[] = {"XADD", k.events, "*", "entry", event};
    size_t lens[] = {4, strlen(k.events), 1, 5, event_len};
    int done = 0;
    if (redisAppendCommandArgv(s->ctx, 5, argv, lens) != REDIS_OK) {
        drop_connection(s, "XADD");
        return -1;
    }
    while (!done)
        if (redisBufferWrite(s->ctx, &done) != REDIS_OK) {
            drop_connection(s, "XADD");
            return -1;
        }
    s->deferred++;
    return 0;
}

int store_session_delete(store *s, const char *ns)
{
    session_keys k;
    if (session_keys_make(s, ns, &k) != 0)
        return -1;
    const char *argv[] = {"DEL", k.text, k.meta, k.events};
    size_t lens[] = {3, strlen(k.text), strlen(k.meta), strlen(k.events)};
    redisReply *r = command(s, 4, argv, lens);
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* ---- Reads ---- */

void store_record_clear(store_record *r)
{
    free(r->key);
    free(r->cls);
    free(r->created_at);
    free(r->text);
    memset(r, 0, sizeof(*r));
}

void store_records_free(store_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        store_record_clear(&r[i]);
    free(r);
}

static char *dup_bytes(const char *p, size_t len)
{
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, p, len);
        d[len] = '\0';
    }
    return d;
}

/* Fills a record from a meta field and value; returns 0, or -1 when either
 * is malformed or memory runs out. */
static int record_from_meta(const char *field, size_t flen, const char *meta, size_t mlen,
                            store_record *out)
{
    memset(out, 0, sizeof(*out));
    if (flen < 65 || field[64] != ':')
        return -1;
    const char *sp1 = memchr(meta, ' ', mlen);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', mlen - (size_t)(sp1 + 1 - meta)) : NULL;
    if (!sp2)
        return -1;
    memcpy(out->sha256, field, 64);
    out->sha256[64] = '\0';
    out->key = dup_bytes(field + 65, flen - 65);
    out->key_len = flen - 65;
    out->cls = dup_bytes(meta, (size_t)(sp1 - meta));
    out->tokens = strtoll(sp1 + 1, NULL, 10);
    out->created_at = dup_bytes(sp2 + 1, mlen - (size_t)(sp2 + 1 - meta));
    if (!out->key || !out->cls || !out->created_at) {
        store_record_clear(out);
        return -1;
    }
    return 0;
}

/* Reads the meta hash whole: metadata is small next to the texts. */
static int read_meta(store *s, const session_keys *k, store_record **out, size_t *n)
{
    const char *argv[] = {"HGETALL", k->meta};
    size_t lens[] = {7, strlen(k->meta)};
    redisReply *r = command(s, 2, argv, lens);
    *out = NULL;
    *n = 0;
    if (!r)
        return -1;
    size_t count = r->type == REDIS_REPLY_ARRAY ? r->elements / 2 : 0;
    store_record *recs = calloc(count ? count : 1, sizeof(*recs));
    if (!recs) {
        freeReplyObject(r);
        set_error(s, STORE_ERR_OOM, "out of memory");
        return -1;
    }
    size_t got = 0;
    for (size_t i = 0; i < count; i++) {
        redisReply *f = r->element[2 * i], *v = r->element[2 * i + 1];
        if (record_from_meta(f->str, f->len, v->str, v->len, &recs[got]) == 0)
            got++;
    }
    freeReplyObject(r);
    *out = recs;
    *n = got;
    return 0;
}

static int by_created_then_key(const void *pa, const void *pb)
{
    const store_record *a = pa, *b = pb;
    int c = strcmp(a->created_at, b->created_at);
    if (c)
        return c;
    size_t m = a->key_len < b->key_len ? a->key_len : b->key_len;
    c = memcmp(a->key, b->key, m);
    if (c)
        return c;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return strcmp(a->sha256, b->sha256);
}

int store_spill_list(store *s, const char *ns, store_record **out, size_t *n)
{
    session_keys k;
    if (session_keys_make(s, ns, &k) != 0 || read_meta(s, &k, out, n) != 0)
        return -1;
    qsort(*out, *n, sizeof(**out), by_created_then_key);
    return 0;
}

/* Finds the newest version of key; writes its digest into sha256. Returns 1,
 * 0 when the key has no spill, -1 on error. */
static int newest_version(store *s, const session_keys *k, const char *key, size_t key_len,
                          char *sha256)
{
    store_record *recs;
    size_t n, best = SIZE_MAX;
    if (read_meta(s, k, &recs, &n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].key_len != key_len || memcmp(recs[i].key, key, key_len) != 0)
            continue;
        if (best == SIZE_MAX || by_created_then_key(&recs[i], &recs[best]) > 0)
            best = i;
    }
    if (best != SIZE_MAX)
        memcpy(sha256, recs[best].sha256, 65);
    store_records_free(recs, n);
    return best != SIZE_MAX;
}

int store_spill_get(store *s, const char *ns, const char *key, size_t key_len, const char *sha256,
                    store_record *out)
{
    session_keys k;
    char newest[65];
    memset(out, 0, sizeof(*out));
    if (session_keys_make(s, ns, &k) != 0)
        return -1;
    if (!sha256) {
        int found = newest_version(s, &k, key, key_len, newest);
        if (found <= 0)
            return found;
        sha256 = newest;
    }

    size_t flen;
    char *field = field_make(sha256, key, key_len, &flen);
    if (!field) {
        set_error(s, STORE_ERR_OOM, "out of memory");
        return -1;
    }
    const char *argv[] = {"HMGET", k.meta, field};
    size_t lens[] = {5, strlen(k.meta), flen};
    redisReply *meta = command(s, 3, argv, lens);
    argv[0] = "HGET";
    lens[0] = 4;
    argv[1] = k.text;
    lens[1] = strlen(k.text);
    redisReply *text = meta ? command(s, 3, argv, lens) : NULL;

    int rc = -1;
    if (meta && text) {
        redisReply *m = meta->element[0];
        rc = 0;
        if (m->type == REDIS_REPLY_STRING && text->type == REDIS_REPLY_STRING) {
            rc = record_from_meta(field, flen, m->str, m->len, out) == 0 ? 1 : -1;
            if (rc == 1) {
                out->text = dup_bytes(text->str, text->len);
                out->text_len = text->len;
                if (!out->text) {
                    store_record_clear(out);
                    rc = -1;
                }
            }
            if (rc < 0)
                set_error(s, STORE_ERR_OOM, "malformed spill record or out of memory");
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

static int is_hex_prefix(const char *p, size_t len)
{
    if (len < STORE_PREFIX_MIN || len > 64)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}

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
        if (strchr("*?[]\\", key[i]) && key[i] != '\0')
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
static int prefix_candidates(store *s, const session_keys *k, const char *prefix, size_t prefix_len,
                             const char *key, size_t key_len, char (**out)[65], size_t *n)
{
    size_t plen, cap = 0;
    char *pattern = prefix_pattern(prefix, prefix_len, key, key_len, &plen);
    char cursor[32] = "0";
    *out = NULL;
    *n = 0;
    if (!pattern) {
        set_error(s, STORE_ERR_OOM, "out of memory");
        return -1;
    }
    do {
        const char *argv[] = {"HSCAN", k->meta, cursor, "MATCH", pattern, "COUNT", "1000"};
        size_t lens[] = {5, strlen(k->meta), strlen(cursor), 5, plen, 5, 4};
        redisReply *r = command(s, 7, argv, lens);
        if (!r)
            goto fail;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof(cursor) ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            set_error(s, STORE_ERR_PROTOCOL, "HSCAN: unexpected reply");
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
                    set_error(s, STORE_ERR_OOM, "out of memory");
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

int store_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                           const char *prefix, size_t prefix_len, store_record *out,
                           char (**candidates)[65], size_t *n_candidates)
{
    session_keys k;
    char(*found)[65];
    size_t n;
    if (candidates)
        *candidates = NULL;
    if (n_candidates)
        *n_candidates = 0;
    if (!is_hex_prefix(prefix, prefix_len)) {
        /* The caller's mistake, not the store's: not counted in the stats. */
        s->err = STORE_ERR_INVALID;
        snprintf(s->errstr, sizeof(s->errstr),
                 "sha256 prefix must be %d to 64 lower-case hex digits", STORE_PREFIX_MIN);
        return -1;
    }
    if (session_keys_make(s, ns, &k) != 0 ||
        prefix_candidates(s, &k, prefix, prefix_len, key, key_len, &found, &n) != 0)
        return -1;
    int rc = STORE_NOT_FOUND;
    if (n == 1) {
        /* Deleted in between reads as not found, like any later read. */
        rc = store_spill_get(s, ns, key, key_len, found[0], out);
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

int store_spill_exists(store *s, const char *ns, const char *key, size_t key_len,
                       const char *sha256)
{
    session_keys k;
    size_t flen;
    if (session_keys_make(s, ns, &k) != 0)
        return -1;
    char *field = field_make(sha256, key, key_len, &flen);
    if (!field) {
        set_error(s, STORE_ERR_OOM, "out of memory");
        return -1;
    }
    const char *argv[] = {"HEXISTS", k.text, field};
    size_t lens[] = {7, strlen(k.text), flen};
    redisReply *r = command(s, 3, argv, lens);
    free(field);
    if (!r)
        return -1;
    int found = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return found;
}

/* ---- Decision log reads ---- */

void store_events_free(store_event *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].data);
    free(e);
}

int store_event_range(store *s, const char *ns, const char *after, size_t limit, store_event **out,
                      size_t *n)
{
    session_keys k;
    char start[64], count[24];
    *out = NULL;
    *n = 0;
    if (session_keys_make(s, ns, &k) != 0)
        return -1;
    if (after)
        snprintf(start, sizeof(start), "(%.*s", 48, after);
    else
        strcpy(start, "-");
    snprintf(count, sizeof(count), "%zu", limit);
    const char *argv[] = {"XRANGE", k.events, start, "+", "COUNT", count};
    size_t lens[] = {6, strlen(k.events), strlen(start), 1, 5, strlen(count)};
    redisReply *r = command(s, 6, argv, lens);
    if (!r)
        return -1;

    size_t total = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    store_event *ev = calloc(total ? total : 1, sizeof(*ev));
    if (!ev) {
        freeReplyObject(r);
        set_error(s, STORE_ERR_OOM, "out of memory");
        return -1;
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
        ev[got].data = dup_bytes(fv->element[1]->str, fv->element[1]->len);
        ev[got].data_len = fv->element[1]->len;
        if (!ev[got].data) {
            store_events_free(ev, got);
            freeReplyObject(r);
            set_error(s, STORE_ERR_OOM, "out of memory");
            return -1;
        }
        got++;
    }
    freeReplyObject(r);
    *out = ev;
    *n = got;
    return 0;
}
