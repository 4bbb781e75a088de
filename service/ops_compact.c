/* The compacting operations: a set of units, and a chat history, each
 * planned, committed with its decision-log entry and answered as a plan. */
#include "ops.h"

#include "commit.h"
#include "ops_log.h"
#include "plan_memory.h"
#include "sticky_plan.h"

#include <stdint.h>
#include <stdlib.h>

/* Writes a planned compaction and its log entry event (a dry run writes
 * nothing and has none; NULL otherwise: out of memory). Frees event. Sets
 * *outcome, and *log_lost when the plan stands without its entry; returns 0
 * or -1 with err set. */
static int commit(const ops_scope *s, const compaction_request *req, const compaction *c,
                  char *event, size_t len, call_outcome *outcome, int *log_lost,
                  compactd_error *err)
{
    if (!req->dry_run && !event)
        return error_set(err, ERR_INTERNAL, "out of memory");
    int committed = compaction_commit(s->ns, s->idempotency_key, req, c, event, len, err);
    free(event);
    if (committed < 0) {
        *outcome = OUTCOME_STORE_UNAVAILABLE;
        return -1;
    }
    *log_lost = committed == COMMIT_LOG_LOST;
    if (*log_lost)
        ops_log_lost(s, err);
    *outcome = OUTCOME_OK;
    return 0;
}

/* ---- Units ---- */

int ops_compact_plan(const ops_scope *s, compaction_request *req, ops_compact_result *out,
                     compactd_error *err)
{
    out->outcome = OUTCOME_NONE;
    out->refused = out->waits = out->log_lost = 0;
    if (compaction_plan(req, &out->c, err) != 0) {
        if (err->kind == ERR_COMPACTION_FAILURE) {
            out->outcome = OUTCOME_FAILURE;
            out->refused = 1;
            out->waits = !req->dry_run; /* the refusal's entry is awaited */
        }
        return -1;
    }
    out->waits = compaction_commit_waits(req, &out->c, !req->dry_run, s->idempotency_key);
    return 0;
}

int ops_compact_finish(const ops_scope *s, compaction_request *req, ops_compact_result *out,
                       compactd_error *err)
{
    size_t len = 0;
    if (out->refused) {
        /* A refused compaction is logged too: the refusal is the decision. */
        if (!req->dry_run) {
            char *event = s->log->compaction(req, &out->c, 1, &len);
            ops_log_best_effort(s, event, len);
        }
        return -1;
    }
    char *event = req->dry_run ? NULL : s->log->compaction(req, &out->c, 0, &len);
    return commit(s, req, &out->c, event, len, &out->outcome, &out->log_lost, err);
}

int ops_compact(const ops_scope *s, compaction_request *req, ops_compact_result *out,
                compactd_error *err)
{
    if (ops_compact_plan(s, req, out, err) != 0 && !out->refused)
        return -1;
    return ops_compact_finish(s, req, out, err);
}

/* ---- Messages ---- */

/* Counts through the request's tokenizer. */
static int64_t count_tokens(const void *ctx, const char *text, size_t len)
{
    return tokenizer_count(ctx, text, len);
}

/* A refusal is logged unless it is a dry run's or names no message (the
 * markers alone did not fit). */
static int refusal_logged(const chat_request *req, const chat_plan *p)
{
    return !req->dry_run && p->failed_index != SIZE_MAX;
}

/* The log entry names the message that did not fit. */
static void log_refusal(const ops_scope *s, const chat_request *req, const char *format,
                        chat_plan *p)
{
    size_t len = 0;
    if (!refusal_logged(req, p))
        return;
    p->c.plan.failed_index = p->failed_index;
    p->c.plan.budget = req->budget;
    p->c.plan.required_budget = p->required_budget;
    char *event = s->log->chat_compaction(req, p, format, 1, &len);
    ops_log_best_effort(s, event, len);
}

/* Plans the history from the session's last plan when this process has
 * it (plan_memory.h). */
static int plan_sticky(const ops_scope *s, const ops_messages_request *mr, const chat_counter *cnt,
                       chat_plan *p, compactd_error *err)
{
    chat_request req = *mr->req;
    chat_prior prior;
    int has = plan_memory_get(s->ns, mr->format, tokenizer_name(req.tokenizer), &prior);
    if (has < 0)
        return error_set(err, ERR_INTERNAL, "out of memory while planning");
    req.prior = has ? &prior : NULL;
    int rc = chat_plan_run(&req, cnt, p, err);
    if (rc == 0 && p->kind != CHAT_PLAN_FRESH && mr->rendered_valid(mr->ctx, p) != 0) {
        /* Kept as it was, an old message no longer keeps the provider's
         * rules beside the new ones: planned fresh. */
        chat_plan_free(p);
        req.prior = NULL;
        rc = chat_plan_run(&req, cnt, p, err);
    }
    if (has)
        chat_prior_free(&prior);
    return rc;
}

int ops_compact_messages_plan(const ops_scope *s, const ops_messages_request *mr,
                              ops_messages_result *out, compactd_error *err)
{
    chat_counter cnt = {count_tokens, mr->req->tokenizer,
                        tokenizer_counts_by_parts(mr->req->tokenizer)};
    out->outcome = OUTCOME_NONE;
    out->refused = out->waits = out->log_lost = 0;
    if (plan_sticky(s, mr, &cnt, &out->plan, err) != 0) {
        if (err->kind == ERR_COMPACTION_FAILURE) {
            out->outcome = OUTCOME_FAILURE;
            out->refused = 1;
            out->waits = refusal_logged(mr->req, &out->plan);
        }
        return -1;
    }
    /* Checked before anything is written, so that no broken history is
     * committed. */
    if (mr->rendered_valid(mr->ctx, &out->plan) != 0)
        return error_set(err, ERR_INTERNAL,
                         "the compacted history would break the provider's rules");
    out->waits = compaction_commit_waits(&out->plan.req, &out->plan.c, !out->plan.req.dry_run,
                                         s->idempotency_key);
    return 0;
}

/* What the session's next compaction starts from: this plan, once it is
 * answered. */
static void remember(const ops_scope *s, const ops_messages_request *mr, const chat_plan *p)
{
    chat_prior pr;
    if (mr->req->dry_run || !plan_memory_keeps() || chat_prior_from_plan(p, &pr) != 0)
        return;
    plan_memory_put(s->ns, mr->format, tokenizer_name(mr->req->tokenizer), &pr);
    chat_prior_free(&pr);
}

int ops_compact_messages_finish(const ops_scope *s, const ops_messages_request *mr,
                                ops_messages_result *out, compactd_error *err)
{
    if (out->refused) {
        log_refusal(s, mr->req, mr->format, &out->plan);
        return -1;
    }
    /* Spills and their log entry in one transaction: no pointer is returned
     * that does not resolve. */
    size_t len = 0;
    char *event = out->plan.req.dry_run
                      ? NULL
                      : s->log->chat_compaction(mr->req, &out->plan, mr->format, 0, &len);
    if (commit(s, &out->plan.req, &out->plan.c, event, len, &out->outcome, &out->log_lost, err) !=
        0)
        return -1;
    remember(s, mr, &out->plan);
    return 0;
}

int ops_compact_messages(const ops_scope *s, const ops_messages_request *mr,
                         ops_messages_result *out, compactd_error *err)
{
    if (ops_compact_messages_plan(s, mr, out, err) != 0 && !out->refused)
        return -1;
    return ops_compact_messages_finish(s, mr, out, err);
}
