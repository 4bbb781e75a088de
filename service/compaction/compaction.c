/* Compaction: the format-neutral request and the planner's decision on it,
 * priced and checked by the domain's rules. Pure: compaction_commit()
 * (commit.c) makes it durable. */
#include "compaction.h"

#include "pricing.h"
#include "sha256.h"

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

/* ---- The request ---- */

int compaction_request_init(compaction_request *req, size_t n)
{
    size_t slots = n ? n : 1;
    memset(req, 0, sizeof(*req));
    req->units = calloc(slots, sizeof(*req->units));
    req->detail = calloc(slots, sizeof(*req->detail));
    req->sha256 = calloc(slots, sizeof(*req->sha256));
    if (!req->units || !req->detail || !req->sha256) {
        compaction_request_free(req);
        return -1;
    }
    req->n = n;
    return 0;
}

void compaction_request_free(compaction_request *req)
{
    free(req->units);
    free(req->detail);
    free(req->sha256);
    memset(req, 0, sizeof(*req));
}

const char *compaction_unit_problem(const plan_unit *u, const unit_detail *d, const char **field)
{
    if (u->cls == UNIT_PROTECTED && !u->has_text) {
        *field = "text";
        return "is required for a protected unit: it is what an externalized unit is stored as";
    }
    if (u->cls == UNIT_PROTECTED && u->text_len == 0) {
        *field = "text";
        return "must not be empty for a protected unit: an empty text is found in every context, "
               "so an audit would call it present whatever was lost";
    }
    if (!d->has_tokens && !u->has_text) {
        *field = "tokens";
        return "is required when the unit has no text: there is nothing to count";
    }
    return NULL;
}

/* ---- Planning ---- */

int compaction_plan(compaction_request *req, compaction *out, compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    compaction_timestamp(out->created_at);

    for (size_t i = 0; i < req->n; i++) {
        const char *field = NULL, *problem;
        const plan_unit *u = &req->units[i];
        if ((problem = compaction_unit_problem(u, &req->detail[i], &field)))
            return error_set(err, ERR_INVALID_REQUEST, "unit '%.*s': %s %s",
                             error_quote_len(u->key, u->key_len), u->key, field, problem);
    }
    if (plan_apply_groups(req->units, req->n) != 0)
        return error_set(err, ERR_INTERNAL, "out of memory while planning");
    if (pricing_run(req, err) != 0)
        return -1;

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
    pricing_digest_spills(req, &out->plan);
    return 0;
}

int compaction_lost_identifiers(const compaction_request *req, const compaction *c, size_t i,
                                identifiers_result *out)
{
    const plan_unit *u = &req->units[i];
    const unit_detail *d = &req->detail[i];
    memset(out, 0, sizeof(*out));
    if (c->plan.entries[i].decision != DECISION_SUMMARIZED || !u->has_text)
        return 0;
    return identifiers_lost(u->text, u->text_len, d->summary, d->summary_len, out);
}

void compaction_free(compaction *c)
{
    plan_result_free(&c->plan);
}
