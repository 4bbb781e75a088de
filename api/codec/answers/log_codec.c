/* Decision-log entries for the operations: the compaction's and the audit's
 * as json_encode.c writes them, and the re-acquisition's. */
#include "log_codec.h"

#include "required_budget.h"
#include "json_encode.h"
#include "json_writer.h"

#include <stdlib.h>

static char *compaction_entry(const compaction_request *req, const compaction *c, int failed,
                              size_t *len)
{
    compact_input in = {.req = *req}; /* a view: the entry reads only the request */
    return json_encode_compaction_event(&in, c, failed, len);
}

static char *chat_compaction_entry(const chat_request *req, const chat_plan *p, const char *format,
                                   int failed, size_t *len)
{
    compact_input in = {.req = p->req};
    chat_event_facts facts = {format,
                              p->system_tokens,
                              0,
                              p->n_markers,
                              p->tools_tokens,
                              req->m,
                              p->classes.hint,
                              NULL,
                              NULL,
                              NULL,
                              0,
                              chat_plan_kind_name(p->kind)};
    for (size_t k = 0; k < p->n_markers; k++)
        facts.marker_tokens += p->markers[k].tokens;
    /* Reasoning that goes with the calls it led to is logged as the answer
     * reports it. */
    unit_class *cls = NULL;
    plan_entry *shown = NULL;
    int leads = 0;
    for (size_t i = 0; !failed && i < req->n && !leads; i++)
        leads = chat_leads_calls(req, &p->classes, i);
    if (leads) {
        cls = malloc(req->n * sizeof(*cls));
        shown = malloc(req->n * sizeof(*shown));
        if (!cls || !shown) {
            free(cls);
            free(shown);
            return NULL;
        }
        for (size_t i = 0; i < req->n; i++)
            chat_plan_reported(req, p, i, &cls[i], &shown[i]);
        facts.shown_cls = cls;
        facts.shown = shown;
    }
    /* A refusal names what fills most of the required budget, as the 422
     * does. */
    chat_required_share shares[REQUIRED_KINDS];
    if (failed && chat_required_shares(req, p, shares) > 0) {
        facts.cause = chat_required_kind_name(shares[0].kind);
        facts.cause_tokens = shares[0].tokens;
    }
    char *entry = json_encode_chat_compaction_event(&in, &p->c, failed, &facts, len);
    free(cls);
    free(shown);
    return entry;
}

static char *verify_entry(const ops_verify_request *req, const verify_result *r,
                          call_outcome outcome, size_t *len)
{
    verify_input in = {0}; /* a view of the audited request, nothing owned */
    in.context = req->context;
    in.context_len = req->context_len;
    in.set = *req->set;
    in.has_budget = in.has_context_tokens = req->has_budget;
    in.budget = req->budget;
    in.context_tokens = req->context_tokens;
    in.dry_run = req->dry_run;
    return json_encode_verify_event(&in, r, outcome, len);
}

static char *reacquire_entry(const store_record *r, const char *via, size_t *len)
{
    char now[32];
    compaction_timestamp(now);
    jw e;
    jw_init(&e, 256);
    jw_object_open(&e);
    jw_member_cstring(&e, "time", now);
    jw_member_cstring(&e, "kind", "reacquire");
    jw_member_cstring(&e, "outcome", outcome_name(OUTCOME_OK));
    jw_member_string(&e, "key", r->key, r->key_len);
    jw_member_cstring(&e, "sha256", r->sha256);
    jw_member_int(&e, "tokens", r->tokens);
    jw_member_cstring(&e, "via", via);
    jw_object_close(&e);
    return jw_finish(&e, len);
}

const ops_log_codec json_log_codec = {compaction_entry, verify_entry, reacquire_entry,
                                      chat_compaction_entry};
