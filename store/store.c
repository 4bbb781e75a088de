/* Redis access for spills and the decision log: one connection per handle,
 * reconnecting lazily after any failure, one round trip per operation. */
#include "store.h"

#include <hiredis/hiredis.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store {
    store_config cfg;
    redisContext *ctx;
    int err;
    char errstr[128];
    int ever_connected;
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
    set_error(s, STORE_ERR_IO, "%s: %s", what, s->ctx && s->ctx->errstr[0] ? s->ctx->errstr : "I/O error");
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

static int ensure_connected(store *s)
{
    s->err = 0;
    s->errstr[0] = '\0';
    if (s->ctx)
        return 0;

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
    if (a < 0 || b < 0 || c < 0 || (size_t)a >= sizeof(k->text) ||
        (size_t)c >= sizeof(k->events)) {
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
    session_keys k;
    if (session_keys_make(s, ns, &k) != 0 || ensure_connected(s) != 0)
        return -1;

    char **fields = calloc(n ? n : 1, sizeof(*fields));
    char **metas = calloc(n ? n : 1, sizeof(*metas));
    size_t *field_lens = calloc(n ? n : 1, sizeof(*field_lens));
    int rc = -1;
    if (!fields || !metas || !field_lens) {
        set_error(s, STORE_ERR_OOM, "out of memory");
        goto done;
    }

    redisAppendCommand(s->ctx, "MULTI");
    for (size_t i = 0; i < n; i++) {
        const store_spill *sp = &spills[i];
        fields[i] = field_make(sp->sha256, sp->key, sp->key_len, &field_lens[i]);
        size_t meta_len = strlen(sp->cls) + strlen(created_at) + 24;
        metas[i] = malloc(meta_len);
        if (!fields[i] || !metas[i]) {
            set_error(s, STORE_ERR_OOM, "out of memory");
            /* The MULTI is already buffered: drop the connection so it is
             * never executed. */
            drop_connection(s, "commit");
            goto done;
        }
        snprintf(metas[i], meta_len, "%s %lld %s", sp->cls, (long long)sp->tokens, created_at);
        const char *targv[] = {"HSETNX", k.text, fields[i], sp->text};
        size_t tlens[] = {6, strlen(k.text), field_lens[i], sp->text_len};
        const char *margv[] = {"HSETNX", k.meta, fields[i], metas[i]};
        size_t mlens[] = {6, strlen(k.meta), field_lens[i], strlen(metas[i])};
        redisAppendCommandArgv(s->ctx, 4, targv, tlens);
        redisAppendCommandArgv(s->ctx, 4, margv, mlens);
    }
    if (event) {
        const char *eargv[] = {"XADD", k.events, "*", "entry", event};
        size_t elens[] = {4, strlen(k.events), 1, 5, event_len};
        redisAppendCommandArgv(s->ctx, 5, eargv, elens);
    }
    redisAppendCommand(s->ctx, "EXEC");

    size_t replies = 2 + 2 * n + (event ? 1 : 0);
    for (size_t i = 0; i < replies; i++) {
        redisReply *r = NULL;
        if (redisGetReply(s->ctx, (void **)&r) != REDIS_OK || !r) {
            drop_connection(s, "commit");
            goto done;
        }
        int last = i == replies - 1;
        int bad = r->type == REDIS_REPLY_ERROR || (last && r->type != REDIS_REPLY_ARRAY);
        if (bad) {
            set_error(s, STORE_ERR_PROTOCOL, "commit: %.*s", (int)r->len,
                      r->str ? r->str : "transaction aborted");
            freeReplyObject(r);
            /* Read the rest so the connection stays in step. */
            for (size_t j = i + 1; j < replies; j++) {
                if (redisGetReply(s->ctx, (void **)&r) != REDIS_OK) {
                    drop_connection(s, "commit");
                    break;
                }
                freeReplyObject(r);
            }
            goto done;
        }
        freeReplyObject(r);
    }
    rc = 0;
done:
    for (size_t i = 0; fields && metas && i < n; i++) {
        free(fields[i]);
        free(metas[i]);
    }
    free(fields);
    free(metas);
    free(field_lens);
    return rc;
}

int store_event_append(store *s, const char *ns, const char *event, size_t event_len)
{
    return store_commit(s, ns, NULL, 0, "", event, event_len);
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

int store_spill_get(store *s, const char *ns, const char *key, size_t key_len,
                    const char *sha256, store_record *out)
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

int store_event_range(store *s, const char *ns, const char *after, size_t limit,
                      store_event **out, size_t *n)
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
