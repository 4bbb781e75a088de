/* The session operations the API layer uses, over the per-thread store
 * connection. Records read from the store change hands here: their strings
 * were allocated by the store with malloc() and are freed with free(). */
#include "session.h"

#include "session_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int initialized;

store *session_thread_store(compactd_error *err)
{
    store *st = initialized ? store_for_thread() : NULL;
    if (!st)
        error_set(err, ERR_STORE_UNAVAILABLE, "spill store unavailable: %s",
                  initialized ? "out of memory" : "no store configured");
    return st;
}

int session_store_failed(store *st, compactd_error *err)
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
    store *st = session_thread_store(err);
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

int session_spill_get(const char *ns, const char *key, size_t key_len, const char *sha256,
                      store_record *out, compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    store *st = session_thread_store(err);
    if (!st)
        return -1;
    int found = store_spill_get(st, ns, key, key_len, sha256, out);
    return found < 0 ? session_store_failed(st, err) : found;
}

int session_spill_get_prefix(const char *ns, const char *key, size_t key_len, const char *prefix,
                             store_record *out, spill_candidates *amb, compactd_error *err)
{
    size_t n = 0;
    memset(out, 0, sizeof(*out));
    memset(amb, 0, sizeof(*amb));
    while (prefix[n] &&
           ((prefix[n] >= '0' && prefix[n] <= '9') || (prefix[n] >= 'a' && prefix[n] <= 'f')))
        n++;
    if (prefix[n] || n < SPILL_PREFIX_MIN || n > 64)
        return error_set(err, ERR_INVALID_REQUEST,
                         "sha256 must be %d to 64 lower-case hex digits (the pointer's %d are "
                         "enough)",
                         SPILL_PREFIX_MIN, SPILL_PREFIX_MIN);
    store *st = session_thread_store(err);
    if (!st)
        return -1;
    int found = store_spill_get_prefix(st, ns, key, key_len, prefix, n, out, &amb->sha256, &amb->n);
    if (found < 0)
        return session_store_failed(st, err);
    return found == STORE_FOUND ? 1 : found == STORE_AMBIGUOUS ? 2 : 0;
}

int session_spill_list(const char *ns, store_record **out, size_t *n, compactd_error *err)
{
    *out = NULL;
    *n = 0;
    store *st = session_thread_store(err);
    if (!st)
        return -1;
    return store_spill_list(st, ns, out, n) == 0 ? 0 : session_store_failed(st, err);
}

int session_delete(const char *ns, compactd_error *err)
{
    store *st = session_thread_store(err);
    if (!st)
        return -1;
    return store_session_delete(st, ns) == 0 ? 0 : session_store_failed(st, err);
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
    store *st = session_thread_store(err);
    if (!st)
        return -1;
    return store_event_range(st, ns, after, limit, max_bytes, out, n) == 0
               ? 0
               : session_store_failed(st, err);
}

int session_log_append(const char *ns, const char *event, size_t event_len, compactd_error *err)
{
    store *st = session_thread_store(err);
    if (!st)
        return -1;
    return store_event_append(st, ns, event, event_len) == 0 ? 0 : session_store_failed(st, err);
}
