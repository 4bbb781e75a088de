/* The one road from the service to the store (session.h), over the
 * per-thread store connection: the only file above store/ that includes
 * store.h. Records read from the store change hands here: their strings
 * were allocated by the store with malloc() and are freed with free(). */
#include "session.h"

#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int initialized;

/* The calling thread's connection (borrowed, valid for the thread's life),
 * or NULL with StoreUnavailable when there is none. */
static store *thread_store(compactd_error *err)
{
    store *st = initialized ? store_for_thread() : NULL;
    if (!st)
        error_set(err, ERR_STORE_UNAVAILABLE, "spill store unavailable: %s",
                  initialized ? "out of memory" : "no store configured");
    return st;
}

/* Sets StoreUnavailable with st's last error; returns -1. */
static int store_failed(store *st, compactd_error *err)
{
    return error_set(err, ERR_STORE_UNAVAILABLE, "spill store unavailable: %s", store_errstr(st));
}

static int settings_to_config(const session_store_settings *s, store_config *cfg, char *err,
                              size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    if (store_config_parse_url(s->url, cfg, err, errlen) != 0)
        return -1;
    cfg->connect_timeout_ms = s->connect_timeout_ms;
    cfg->command_timeout_ms = s->command_timeout_ms;
    cfg->min_replicas = s->min_replicas;
    snprintf(cfg->tls.ca_file, sizeof(cfg->tls.ca_file), "%s", s->tls_ca_file);
    snprintf(cfg->tls.ca_dir, sizeof(cfg->tls.ca_dir), "%s", s->tls_ca_dir);
    snprintf(cfg->tls.cert_file, sizeof(cfg->tls.cert_file), "%s", s->tls_cert_file);
    snprintf(cfg->tls.key_file, sizeof(cfg->tls.key_file), "%s", s->tls_key_file);
    snprintf(cfg->tls.server_name, sizeof(cfg->tls.server_name), "%s", s->tls_server_name);
    cfg->stage_ttl_ms = s->stage_ttl_ms;
    if (!store_stop_at_valid(s->stop_at)) {
        snprintf(err, errlen,
                 "COMPACTD_DEBUG_STOP_AT: '%s' is not staged:<piece>, published or merged:<piece>",
                 s->stop_at);
        return -1;
    }
    snprintf(cfg->stop_at, sizeof(cfg->stop_at), "%s", s->stop_at);
    return 0;
}

int session_store_check(const session_store_settings *s, char *err, size_t errlen)
{
    store_config cfg;
    if (settings_to_config(s, &cfg, err, errlen) != 0)
        return -1;
    return store_tls_check(&cfg, err, errlen);
}

int session_store_init(const session_store_settings *s, char *err, size_t errlen)
{
    store_config cfg;
    if (settings_to_config(s, &cfg, err, errlen) != 0)
        return -1;
    if (store_thread_init(&cfg) != 0) {
        snprintf(err, errlen, "cannot set up per-thread Redis connections");
        return -1;
    }
    initialized = 1;
    return 0;
}

void session_store_url_shown(const session_store_settings *s, char *out, size_t len)
{
    store_url_redacted(s->url, out, len);
}

int session_store_probe(const session_store_settings *s, compactd_error *err)
{
    store_config cfg;
    char why[256];
    if (settings_to_config(s, &cfg, why, sizeof(why)) != 0)
        return error_set(err, ERR_STORE_UNAVAILABLE, "%s", why);
    /* A handle of its own, closed after: the workers' connections are the
     * only ones that stay. */
    store *st = store_new(&cfg);
    if (!st)
        return error_set(err, ERR_STORE_UNAVAILABLE, "out of memory");
    int rc = store_ping(st) == 0 ? 0
                                 : error_set(err, ERR_STORE_UNAVAILABLE,
                                             "Redis does not answer: %s", store_errstr(st));
    store_free(st);
    return rc;
}

int session_ready(compactd_error *err)
{
    store *st = thread_store(err);
    if (!st)
        return -1;
    if (store_ping(st) != 0)
        return error_set(err, ERR_STORE_UNAVAILABLE, "not ready: Redis does not answer: %s",
                         store_errstr(st));
    return 0;
}

int session_store_healthy(char *why, size_t len)
{
    return store_healthy(why, len);
}

void session_store_get_stats(store_stats *out)
{
    store_get_stats(out);
}

/* ---- Spills ---- */

int session_spill_read(const char *ns, const char *key, size_t key_len, const char *digest,
                       store_record *out, spill_candidates *amb, compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    memset(amb, 0, sizeof(*amb));
    store *st = thread_store(err);
    if (!st)
        return -1;
    if (!digest) {
        int found = store_spill_get(st, ns, key, key_len, NULL, out);
        return found < 0 ? store_failed(st, err) : found ? SPILL_FOUND : SPILL_NONE;
    }
    int found = store_spill_get_prefix(st, ns, key, key_len, digest, strlen(digest), out,
                                       &amb->sha256, &amb->n);
    if (found < 0 && store_err(st) == STORE_ERR_INVALID)
        return error_set(err, ERR_INVALID_REQUEST,
                         "sha256 must be %d to %d lower-case hex digits (the pointer's %d are "
                         "enough)",
                         POINTER_SHA_HEX, SHA256_HEX_LEN, POINTER_SHA_HEX);
    if (found < 0)
        return store_failed(st, err);
    return found == STORE_FOUND       ? SPILL_FOUND
           : found == STORE_AMBIGUOUS ? SPILL_AMBIGUOUS
                                      : SPILL_NONE;
}

int session_spill_list(const char *ns, store_record **out, size_t *n, compactd_error *err)
{
    *out = NULL;
    *n = 0;
    store *st = thread_store(err);
    if (!st)
        return -1;
    return store_spill_list(st, ns, out, n) == 0 ? 0 : store_failed(st, err);
}

int session_spills_stored(const char *ns, const plan_unit *units,
                          const char (*sha256)[SHA256_HEX_LEN + 1], const size_t *at, size_t k,
                          unsigned char *stored, compactd_error *err)
{
    if (k == 0)
        return 0;
    store_spill_ref *refs = malloc(k * sizeof(*refs));
    if (!refs)
        return error_set(err, ERR_INTERNAL, "out of memory checking pointers");
    for (size_t j = 0; j < k; j++)
        refs[j] = (store_spill_ref){units[at[j]].key, units[at[j]].key_len, sha256[at[j]]};
    store *st = thread_store(err);
    int rc = st ? store_spill_exists_many(st, ns, refs, k, stored) : -1;
    free(refs);
    if (st && rc != 0)
        error_set(err, ERR_STORE_UNAVAILABLE, "spill store unavailable while checking pointers: %s",
                  store_errstr(st));
    return rc == 0 ? 0 : -1;
}

int session_delete(const char *ns, compactd_error *err)
{
    store *st = thread_store(err);
    if (!st)
        return -1;
    return store_session_delete(st, ns) == 0 ? 0 : store_failed(st, err);
}

/* ---- Decision log ---- */

/* The largest id a stream can hold: nothing comes after it (and Redis
 * refuses it as an exclusive start). */
#define LAST_EVENT_ID "18446744073709551615-18446744073709551615"

int session_events(const char *ns, const char *after, size_t limit, size_t max_bytes,
                   store_event **out, size_t *n, compactd_error *err)
{
    *out = NULL;
    *n = 0;
    if (after && strcmp(after, LAST_EVENT_ID) == 0) {
        *out = malloc(sizeof(**out));
        return *out ? 0 : error_set(err, ERR_INTERNAL, "out of memory");
    }
    store *st = thread_store(err);
    if (!st)
        return -1;
    return store_event_range(st, ns, after, limit, max_bytes, out, n) == 0 ? 0
                                                                           : store_failed(st, err);
}

int session_log_append(const char *ns, const char *event, size_t event_len, compactd_error *err)
{
    store *st = thread_store(err);
    if (!st)
        return -1;
    return store_event_append(st, ns, event, event_len) == 0 ? 0 : store_failed(st, err);
}

int session_log_send(const char *ns, const char *event, size_t event_len, compactd_error *err)
{
    store *st = thread_store(err);
    if (!st)
        return -1;
    return store_event_defer(st, ns, event, event_len) == 0 ? 0 : store_failed(st, err);
}

int session_log_send_waits(void)
{
    store *st = initialized ? store_for_thread() : NULL;
    return st && store_event_defer_waits(st);
}

/* ---- Commits ---- */

int session_commit(const char *ns, const compaction_request *req, const compaction *c,
                   const char *event, size_t event_len, const char *name, int keyed,
                   compactd_error *err)
{
    size_t n = c->plan.n_externalized;
    store_spill *spills = malloc((n ? n : 1) * sizeof(*spills));
    if (!spills)
        return error_set(err, ERR_INTERNAL, "out of memory while spilling");
    size_t k = 0;
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        if (c->plan.entries[i].decision != DECISION_EXTERNALIZED)
            continue;
        spills[k++] = (store_spill){.key = u->key,
                                    .key_len = u->key_len,
                                    .cls = unit_class_name(u->cls),
                                    .tokens = u->tokens,
                                    .sha256 = req->sha256[i],
                                    .text = u->text,
                                    .text_len = u->text_len,
                                    .metadata = req->detail[i].metadata,
                                    .metadata_len = req->detail[i].metadata_len};
    }
    store *st = thread_store(err);
    int rc =
        st ? store_commit_keyed(st, ns, spills, k, c->created_at, event, event_len, name, keyed)
           : -1;
    free(spills);
    if (!st)
        return SESSION_NOT_WRITTEN;
    if (rc == 0)
        return SESSION_WRITTEN;
    if (store_err(st) == STORE_ERR_CONFLICT) {
        error_set(err, ERR_KEY_REUSED,
                  "the Idempotency-Key header was used already for another request in "
                  "this session; nothing written: send a new key for a new request");
        return SESSION_NOT_WRITTEN;
    }
    store_failed(st, err);
    return store_err(st) == STORE_ERR_UNKNOWN || store_err(st) == STORE_ERR_REPLICAS
               ? SESSION_MAYBE_WRITTEN
               : SESSION_NOT_WRITTEN;
}
