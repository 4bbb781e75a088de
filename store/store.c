/* The store's public functions (store.h): handles and per-thread handles
 * on the transport their configuration names, the operations of
 * operations.h run over it, and the health those runs report. The handle's
 * error and the counters are in handle.c, the freeing of records in
 * types/store_types.c. */
#include "cluster.h"
#include "conn.h"
#include "layout.h"
#include "operations.h"
#include "sha256.h"
#include "store_impl.h"

#include <assert.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Handles ---- */

/* The implementation for each kind of store_config. */
static const store_transport *transport_for(store_kind kind)
{
    switch (kind) {
    case STORE_SINGLE:
        return &store_node_transport;
    case STORE_CLUSTER:
        return store_cluster_transport();
    }
    return NULL;
}

store *store_new(const store_config *cfg)
{
    const store_transport *t = transport_for(cfg->kind);
    store *s = t ? calloc(1, sizeof(*s)) : NULL;
    if (!s)
        return NULL;
    s->t = t;
    s->min_replicas = cfg->min_replicas;
    s->stage_ttl_ms = cfg->stage_ttl_ms > 0 ? cfg->stage_ttl_ms : LAYOUT_STAGE_TTL_MS;
    snprintf(s->stop_at, sizeof(s->stop_at), "%s", cfg->stop_at);
    s->impl = t->open(cfg);
    if (!s->impl) {
        free(s);
        return NULL;
    }
    return s;
}

void store_free(store *s)
{
    if (!s)
        return;
    s->t->close(s->impl);
    free(s);
}

static store *begin(store *s)
{
    s->err = 0;
    s->errstr[0] = '\0';
    return s;
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

/* ---- Health ---- */

/* What the last operation that reached Redis, or failed to, said: readiness
 * follows the request path at once instead of its next probe. */
static atomic_int healthy = 1;
static pthread_mutex_t health_lock = PTHREAD_MUTEX_INITIALIZER;
static char health_why[256];

/* Records rc's outcome (0 / 1 / 2 success, -1 failure) and returns it. A
 * failure of the caller's own making, or of memory here, says nothing of
 * Redis; nor does a command sent without waiting for its answer. */
static int outcome(store *s, int rc, int answered)
{
    if (rc < 0 && s->err != STORE_ERR_INVALID && s->err != STORE_ERR_OOM) {
        pthread_mutex_lock(&health_lock);
        snprintf(health_why, sizeof(health_why), "%s", s->errstr);
        atomic_store(&healthy, 0);
        pthread_mutex_unlock(&health_lock);
    } else if (rc >= 0 && answered && !atomic_load(&healthy)) {
        atomic_store(&healthy, 1);
    }
    return rc;
}

int store_healthy(char *why, size_t len)
{
    if (atomic_load(&healthy))
        return 1;
    pthread_mutex_lock(&health_lock);
    snprintf(why, len, "%s", health_why);
    pthread_mutex_unlock(&health_lock);
    return 0;
}

/* ---- Operations ---- */

/* An entry of ns sent without waiting (store_event_defer()) on another
 * handle is in Redis before its session is read, deleted (where it would
 * come back after the delete) or committed to (where it would follow the
 * later entry). */
static int settled(store *s, const char *ns)
{
    return s->t->settle ? s->t->settle(s, ns) : 0;
}

int store_ping(store *s)
{
    return outcome(s, begin(s)->t->ping(s), 1);
}

int store_commit(store *s, const char *ns, const store_spill *spills, size_t n,
                 const char *created_at, const char *event, size_t event_len)
{
    return store_commit_keyed(s, ns, spills, n, created_at, event, event_len, NULL, 0);
}

int store_commit_keyed(store *s, const char *ns, const store_spill *spills, size_t n,
                       const char *created_at, const char *event, size_t event_len,
                       const char *commit_key, int keyed)
{
    /* The caller's contract (store.h): a namespace, the spills it counts,
     * keys that name them, and an entry's bytes when there is an entry. */
    assert(ns && (n == 0 || spills) && (event || event_len == 0));
    for (size_t i = 0; i < n; i++)
        assert(spills[i].key && spills[i].key_len > 0 && spills[i].sha256 &&
               (spills[i].text || spills[i].text_len == 0));
    /* A log entry sent earlier without waiting, on another handle, comes
     * before this one in the session's log: Redis may run this commit
     * before it has read that entry. */
    if (event && settled(begin(s), ns) != 0)
        return outcome(s, -1, 1);
    return outcome(
        s, op_commit(begin(s), ns, spills, n, created_at, event, event_len, commit_key, keyed), 1);
}

int store_event_append(store *s, const char *ns, const char *event, size_t event_len)
{
    return store_commit(s, ns, NULL, 0, "", event, event_len);
}

int store_event_defer(store *s, const char *ns, const char *event, size_t event_len)
{
    return outcome(s, begin(s)->t->event_defer(s, ns, event, event_len), 0);
}

int store_event_defer_waits(const store *s)
{
    return s->t->event_defer_waits;
}

int store_spill_get(store *s, const char *ns, const char *key, size_t key_len, const char *sha256,
                    store_record *out)
{
    memset(out, 0, sizeof(*out));
    return outcome(s, op_spill_get(begin(s), ns, key, key_len, sha256, out), 1);
}

int store_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                           const char *prefix, size_t prefix_len, store_record *out,
                           char (**candidates)[65], size_t *n_candidates)
{
    if (candidates)
        *candidates = NULL;
    if (n_candidates)
        *n_candidates = 0;
    if (!sha256_prefix_valid(prefix, prefix_len)) {
        /* The caller's mistake, not the store's: not counted in the stats. */
        store_fail_quiet(s, STORE_ERR_INVALID, "sha256 must be %d to %d lower-case hex digits",
                         POINTER_SHA_HEX, SHA256_HEX_LEN);
        return -1;
    }
    return outcome(s,
                   op_spill_get_prefix(begin(s), ns, key, key_len, prefix, prefix_len, out,
                                       candidates, n_candidates),
                   1);
}

int store_spill_list(store *s, const char *ns, store_record **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    return outcome(s, op_spill_list(begin(s), ns, out, n), 1);
}

int store_spill_exists(store *s, const char *ns, const char *key, size_t key_len,
                       const char *sha256)
{
    store_spill_ref ref = {key, key_len, sha256};
    unsigned char found;
    return store_spill_exists_many(s, ns, &ref, 1, &found) == 0 ? found : -1;
}

int store_spill_exists_many(store *s, const char *ns, const store_spill_ref *refs, size_t n,
                            unsigned char *found)
{
    return outcome(s, op_spill_exists_many(begin(s), ns, refs, n, found), n > 0);
}

int store_session_delete(store *s, const char *ns)
{
    if (settled(begin(s), ns) != 0)
        return outcome(s, -1, 1);
    return outcome(s, op_drop_session(s, ns), 1);
}

int store_event_range(store *s, const char *ns, const char *after, size_t limit, size_t max_bytes,
                      store_event **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (settled(begin(s), ns) != 0)
        return outcome(s, -1, 1);
    return outcome(s, op_event_range(s, ns, after, limit, max_bytes, out, n), 1);
}
