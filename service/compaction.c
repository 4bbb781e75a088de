/* Compaction: the planner's decision made durable before it is answered. */
#include "compaction.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void compaction_timestamp(char buf[32])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t len = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + len, 32 - len, ".%03dZ", (int)(ts.tv_nsec / 1000000));
}

int compaction_plan(const compaction_request *req, compaction *out, compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    compaction_timestamp(out->created_at);

    int rc = plan_run(req->units, req->n, req->budget, req->mode, &out->plan);
    if (rc == PLAN_NOMEM)
        return error_set(err, ERR_INTERNAL, "out of memory while planning");
    if (rc == PLAN_FAILED) {
        const plan_unit *u = &req->units[out->plan.failed_index];
        return error_set(err, ERR_COMPACTION_FAILURE,
                         "protected unit '%.*s' (%lld tokens) cannot fit even as a %lld-token "
                         "pointer: budget %lld is below the required %lld. Refusing lossy "
                         "compaction.",
                         error_quote_len(u->key, u->key_len), u->key, (long long)u->tokens,
                         (long long)u->pointer_tokens, (long long)req->budget,
                         (long long)out->plan.required_budget);
    }

    size_t next = 0;
    out->ext_sha256 = malloc((out->plan.n_externalized ? out->plan.n_externalized : 1) *
                             sizeof(*out->ext_sha256));
    if (!out->ext_sha256)
        return error_set(err, ERR_INTERNAL, "out of memory while planning");
    for (size_t i = 0; i < req->n; i++)
        if (out->plan.entries[i].decision == DECISION_EXTERNALIZED)
            sha256_hex(req->units[i].text, req->units[i].text_len, out->ext_sha256[next++]);
    return 0;
}

int compaction_commit(store *st, const char *ns, const compaction_request *req, const compaction *c,
                      const char *event, size_t event_len, compactd_error *err)
{
    if (req->dry_run)
        return 0;
    if (c->plan.n_externalized == 0 && !event)
        return 0;
    if (!st)
        return error_set(err, ERR_INTERNAL, "out of memory for a store connection");

    store_spill *spills =
        malloc((c->plan.n_externalized ? c->plan.n_externalized : 1) * sizeof(*spills));
    if (!spills)
        return error_set(err, ERR_INTERNAL, "out of memory while spilling");
    size_t k = 0;
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        if (c->plan.entries[i].decision != DECISION_EXTERNALIZED)
            continue;
        spills[k] =
            (store_spill){u->key,  u->key_len, unit_class_name(u->cls), u->tokens, c->ext_sha256[k],
                          u->text, u->text_len};
        k++;
    }
    int rc = store_commit(st, ns, spills, k, c->created_at, event, event_len);
    free(spills);
    if (rc != 0)
        return error_set(err, ERR_STORE_UNAVAILABLE, "spill store unavailable: %s",
                         store_errstr(st));
    return 0;
}

void compaction_free(compaction *c)
{
    plan_result_free(&c->plan);
    free(c->ext_sha256);
    c->ext_sha256 = NULL;
}
