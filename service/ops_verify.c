/* The verify operation: the truncation audit of a context, its repair
 * within the budget that is left, and the decision-log entry of both. */
#include "ops.h"

#include "commit.h"
#include "ops_log.h"

#include "pricing.h"

#include <stdio.h>
#include <stdlib.h>

/* The repair cannot fit: CompactionFailure naming the unit, logged like a
 * refused compaction. */
static void refuse(const ops_scope *s, const ops_verify_request *req, ops_verify_result *out,
                   compactd_error *err)
{
    size_t len = 0;
    const plan_result *p = &out->r.repair.plan;
    const plan_unit *u = &out->r.repair_req.units[p->failed_index];
    out->required_budget = req->context_tokens + p->required_budget;
    out->failed = u;
    snprintf(err->message, sizeof(err->message),
             "missing protected unit '%.*s' (%lld tokens) cannot be restored even as a "
             "%lld-token pointer: the context takes %lld of the budget %lld, and the repair "
             "needs a budget of %lld",
             error_quote_len(u->key, u->key_len), u->key, (long long)u->tokens,
             (long long)u->pointer_tokens, (long long)req->context_tokens, (long long)req->budget,
             (long long)out->required_budget);
    if (!req->dry_run) {
        char *event = s->log->verify(req, &out->r, OUTCOME_FAILURE, &len);
        ops_log_best_effort(s, event, len);
    }
}

/* Writes the repair's spills and the audit's log entry, when something is
 * missing and this is no dry run. */
static int commit(const ops_scope *s, const ops_verify_request *req, const verify_result *r,
                  compactd_error *err)
{
    size_t len = 0;
    if (!r->n_missing || req->dry_run)
        return 0;
    char *event =
        s->log->verify(req, r, r->has_repair ? OUTCOME_REPAIRED : OUTCOME_SILENT_TRUNCATION, &len);
    if (!event)
        return error_set(err, ERR_INTERNAL, "out of memory");
    int committed = verify_commit(s->ns, r, event, len, err);
    free(event);
    /* A repair pointer must resolve before it is handed out. */
    if (committed < 0)
        return -1;
    if (committed == COMMIT_LOG_LOST)
        ops_log_lost(s, err);
    return 0;
}

int ops_verify(const ops_scope *s, const ops_verify_request *req, ops_verify_result *out,
               compactd_error *err)
{
    out->outcome = OUTCOME_NONE;
    out->required_budget = 0;
    out->failed = NULL;
    /* verify_result_free() must find nothing to free when pricing fails. */
    out->r = (verify_result){0};
    /* The answer reports each unit with its count, given or counted. */
    if (pricing_count_tokens(req->set, err) != 0)
        return -1;
    verify_request vr = {req->context, req->context_len,   req->set->units, req->set->detail,
                         req->set->n,  req->has_budget,    req->budget,     req->context_tokens,
                         req->dry_run, req->set->tokenizer};
    if (verify_run(s->ns, &vr, &out->r, err) != 0) {
        if (err->kind == ERR_COMPACTION_FAILURE) {
            out->outcome = OUTCOME_SILENT_TRUNCATION;
            refuse(s, req, out, err);
        }
        return -1;
    }
    if (out->r.has_repair && req->repair_returnable && req->repair_returnable(&out->r, err) != 0) {
        out->outcome = OUTCOME_INVALID;
        return -1;
    }
    out->outcome = out->r.n_missing ? OUTCOME_SILENT_TRUNCATION : OUTCOME_SAFE;
    return commit(s, req, &out->r, err);
}
