/* POST /v1/sessions/{session}/verify: the truncation audit and its repair. */
#include "app.h"
#include "audit.h"

#include "json_decode.h"
#include "json_encode.h"
#include "json_writer.h"
#include "pricing.h"
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>

/* The repair cannot fit: 422 naming the unit, logged like a refused
 * compaction. */
static void refuse(api_request *req, api_response *res, const verify_input *in,
                   const verify_result *r, const compactd_error *err)
{
    size_t len = 0;
    const plan_result *p = &r->repair.plan;
    const plan_unit *u = &r->repair_req.units[p->failed_index];
    int64_t required = in->context_tokens + p->required_budget;
    compactd_error e = *err;
    snprintf(e.message, sizeof(e.message),
             "missing protected unit '%.*s' (%lld tokens) cannot be restored even as a "
             "%lld-token pointer: the context takes %lld of the budget %lld, and the repair "
             "needs a budget of %lld",
             error_quote_len(u->key, u->key_len), u->key, (long long)u->tokens,
             (long long)u->pointer_tokens, (long long)in->context_tokens, (long long)in->budget,
             (long long)required);
    respond_refusal(res, &e, in->budget, required, u);
    if (!in->dry_run) {
        char *event = json_encode_verify_event(in, r, "failure", &len);
        append_event_best_effort(req, event, len);
    }
}

/* Writes extra (a JSON object compactd wrote, "{...}") into the members
 * of body (another); frees body. NULL when out of memory. */
static char *with_members(char *body, size_t body_len, const char *extra, size_t extra_len,
                          size_t *len)
{
    if (!body || !extra)
        return body;
    jw w;
    jw_init(&w, body_len + extra_len + 16);
    jw_object_open(&w);
    jw_members_raw(&w, body, body_len);
    jw_members_raw(&w, extra, extra_len);
    jw_object_close(&w);
    free(body);
    return jw_finish(&w, len);
}

void respond_audit(api_request *req, api_response *res, verify_input *in, const char *extra,
                   size_t extra_len)
{
    verify_result r;
    compactd_error err = {0};
    size_t len = 0;
    char *event = NULL;

    /* The answer reports each unit with its count, given or counted. */
    if (pricing_count_tokens(&in->set, &err) != 0) {
        respond_error(res, &err);
        return;
    }
    verify_request vr = {in->context, in->context_len,  in->set.units, in->set.detail,
                         in->set.n,   in->has_budget,   in->budget,    in->context_tokens,
                         in->dry_run, in->set.tokenizer};
    if (verify_run(req->ns, &vr, &r, &err) != 0) {
        if (err.kind == ERR_COMPACTION_FAILURE) {
            req->facts.outcome = "silent_truncation";
            refuse(req, res, in, &r, &err);
        } else {
            respond_error(res, &err);
        }
        goto done;
    }

    req->facts.outcome = r.n_missing ? "silent_truncation" : "safe";
    if (r.n_missing && !in->dry_run) {
        event =
            json_encode_verify_event(in, &r, r.has_repair ? "repaired" : "silent_truncation", &len);
        if (!event) {
            respond_fail(res, ERR_INTERNAL, "out of memory");
            goto done;
        }
        int committed = verify_commit(req->ns, &r, event, len, &err);
        if (committed < 0) {
            /* A repair pointer must resolve before it is handed out. */
            respond_error(res, &err);
            goto done;
        }
        if (committed == COMMIT_LOG_LOST)
            log_entry_lost(req, &err);
    }
    char *body = json_encode_verify(in, &r, &len);
    if (r.has_repair)
        body = with_members(body, len, extra, extra_len, &len);
    respond_json(res, 200, body, len);
done:
    free(event);
    verify_result_free(&r);
}

void handle_verify(const app *a, api_request *req, api_response *res)
{
    verify_input in;
    compactd_error err = {0};

    if (json_decode_verify(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        req->facts.outcome = "invalid";
        respond_error(res, &err);
        return;
    }
    api_release_body(req);
    respond_audit(req, res, &in, NULL, 0);
    verify_input_free(&in);
}
