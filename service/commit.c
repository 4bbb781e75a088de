/* The commit of a planned compaction (see commit.h): its spills and log
 * entry written under one name, or the entry alone when nothing spills. */
#include "commit.h"

#include "session_store.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The commit's name (compaction_commit()): 8 hex digits naming its
 * scope, then 8 naming all it writes, each from a digest of NUL-separated
 * parts. The scope is the session and Idempotency-Key when there is one
 * (the same key with another body is then refused), else the content. The
 * content is the plan the log entry records, less its time: the budget, and
 * every unit's key, class, tokens, text length and decision, with each
 * spill's digest, so that two compactions are one only when their entries
 * would say the same. Returns 0, or -1 when out of memory. */
static int commit_name(const char *ns, const char *idempotency_key, const compaction_request *req,
                       const compaction *c, char key[17])
{
    enum { UNIT_FIGURES = 80 }; /* class, decision and three numbers */
    size_t key_len = idempotency_key ? strlen(idempotency_key) : 0;
    size_t len = strlen(ns) + 64 + key_len;
    for (size_t i = 0; i < req->n; i++)
        len += req->units[i].key_len + UNIT_FIGURES + 65;
    char *buf = malloc(len), content[65], scope[65];
    if (!buf)
        return -1;
    size_t at = (size_t)snprintf(buf, len, "%s%ckey%c", ns, '\0', '\0');
    memcpy(buf + at, idempotency_key ? idempotency_key : "", key_len);
    at += key_len;
    if (idempotency_key)
        sha256_hex(buf, at, scope);
    at += (size_t)snprintf(buf + at, len - at, "%cplan%c%lld %zu", '\0', '\0',
                           (long long)c->plan.budget, req->n);
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        plan_decision d = c->plan.entries[i].decision;
        buf[at++] = '\0';
        memcpy(buf + at, u->key, u->key_len);
        at += u->key_len;
        at +=
            (size_t)snprintf(buf + at, len - at, "%c%s %lld %zu %s", '\0', unit_class_name(u->cls),
                             (long long)u->tokens, u->text_len, plan_decision_name(d));
        if (d != DECISION_EXTERNALIZED)
            continue;
        buf[at++] = '\0';
        memcpy(buf + at, req->sha256[i], 64);
        at += 64;
    }
    sha256_hex(buf, at, content);
    free(buf);
    memcpy(key, idempotency_key ? scope : content, 8);
    memcpy(key + 8, content, 8);
    key[16] = '\0';
    return 0;
}

/* Writes the spills (none, for a keyed commit that spills nothing) and
 * event in one transaction and waits for it. */
static int commit_spills(store *st, const char *ns, const char *idempotency_key,
                         const compaction_request *req, const compaction *c, const char *event,
                         size_t event_len, compactd_error *err)
{
    char key[17];
    if (commit_name(ns, idempotency_key, req, c, key) != 0)
        return error_set(err, ERR_INTERNAL, "out of memory while spilling");
    store_spill *spills =
        malloc((c->plan.n_externalized ? c->plan.n_externalized : 1) * sizeof(*spills));
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
    int rc = store_commit_keyed(st, ns, spills, k, c->created_at, event, event_len, key,
                                idempotency_key != NULL);
    free(spills);
    if (rc != 0 && store_err(st) == STORE_ERR_CONFLICT)
        return error_set(err, ERR_CONFLICT,
                         "the Idempotency-Key header was used already for another request in "
                         "this session; nothing written: send a new key for a new request");
    return rc == 0 ? COMMIT_DONE : session_store_failed(st, err);
}

int compaction_commit(const char *ns, const char *idempotency_key, const compaction_request *req,
                      const compaction *c, const char *event, size_t event_len, compactd_error *err)
{
    if (req->dry_run || (c->plan.n_externalized == 0 && !event))
        return COMMIT_DONE;
    /* No pointer is returned that does not resolve: spills wait for Redis.
     * Nor is a key answered that was not checked against the ones the
     * session holds: a keyed commit waits too. */
    store *st = session_thread_store(err);
    if (c->plan.n_externalized > 0)
        return st ? commit_spills(st, ns, idempotency_key, req, c, event, event_len, err) : -1;
    if (idempotency_key) {
        if (!st)
            return COMMIT_LOG_LOST;
        int rc = commit_spills(st, ns, idempotency_key, req, c, event, event_len, err);
        /* Nothing to spill, so the plan stands without the store, as one
         * without a key does, when nothing was written (its key then not
         * held either); one that may have been written is a 503, whose
         * retry under the key is safe. */
        int maybe = store_err(st) == STORE_ERR_UNKNOWN || store_err(st) == STORE_ERR_REPLICAS;
        return rc < 0 && err->kind == ERR_STORE_UNAVAILABLE && !maybe ? COMMIT_LOG_LOST : rc;
    }
    /* Nothing to spill: the plan stands without the store, and the log
     * entry is written if the store answers. */
    if (!st)
        return COMMIT_LOG_LOST;
    if (store_event_defer(st, ns, event, event_len) != 0) {
        session_store_failed(st, err);
        return COMMIT_LOG_LOST;
    }
    return COMMIT_DONE;
}

int compaction_commit_waits(const compaction_request *req, const compaction *c, int has_event,
                            const char *idempotency_key)
{
    if (req->dry_run)
        return 0;
    if (c->plan.n_externalized > 0 || (has_event && idempotency_key))
        return 1;
    compactd_error err;
    store *st = has_event ? session_thread_store(&err) : NULL;
    return st && store_event_defer_waits(st);
}
