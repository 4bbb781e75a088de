/* POST /v1/sessions/{session}/messages/compact: a provider's chat history
 * in, a history the provider accepts out, within the budget. */
#include "app.h"

#include "chat_codec.h"
#include "json_encode.h"
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>

/* Counts through the request's tokenizer. */
static int64_t count_tokens(const void *ctx, const char *text, size_t len)
{
    return tokenizer_count(ctx, text, len);
}

static void count_facts(request_facts *f, const chat_plan *p, size_t n)
{
    f->units = n;
    for (size_t i = 0; i < n; i++) {
        const plan_unit *u = &p->units[i];
        plan_decision d = p->c.plan.entries[i].decision;
        f->units_by[u->cls][d]++;
        f->tokens_by[d] += u->tokens;
        if (d == DECISION_EXTERNALIZED)
            f->spill_bytes += u->text_len;
    }
}

/* The decision log takes a units compaction's entry, with the format, the
 * message indexes and the tokens outside the messages. */
static char *event_of(const chat_input *in, const chat_plan *p, int failed, size_t *len)
{
    compact_input ci = {NULL, p->req};
    chat_event_facts facts = {in->codec->name, p->system_tokens, 0, p->n_markers};
    for (size_t k = 0; k < p->n_markers; k++)
        facts.marker_tokens += p->markers[k].tokens;
    return json_encode_chat_compaction_event(&ci, &p->c, failed, &facts, len);
}

static void refuse(api_request *req, api_response *res, const chat_input *in, chat_plan *p,
                   const compactd_error *err)
{
    size_t len = 0;
    req->facts.outcome = "failure";
    char *body = chat_encode_failure(err, in, p, &len);
    respond_json(res, error_status(err->kind), body, len);
    /* The log entry names the message that did not fit; a refusal for the
     * markers alone names none and is not logged. */
    if (!in->req.dry_run && p->failed_index != SIZE_MAX) {
        p->c.plan.failed_index = p->failed_index;
        p->c.plan.budget = in->req.budget;
        p->c.plan.required_budget = p->required_budget;
        char *event = event_of(in, p, 1, &len);
        append_event_best_effort(req, event, len);
    }
}

void handle_messages_compact(const app *a, api_request *req, api_response *res)
{
    chat_input in;
    chat_plan p = {0};
    compactd_error err = {0};
    size_t len = 0;
    char *event = NULL;

    if (chat_decode_compact(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        req->facts.outcome = "invalid";
        respond_error(res, &err);
        chat_input_free(&in);
        return;
    }
    /* The body stays: each message's JSON is its bytes in it. */
    chat_counter cnt = {count_tokens, in.req.tokenizer};
    if (chat_plan_run(&in.req, &cnt, &p, &err) != 0) {
        if (err.kind == ERR_COMPACTION_FAILURE)
            refuse(req, res, &in, &p, &err);
        else
            respond_error(res, &err);
        goto done;
    }
    if (chat_output_valid(&in, &p) != 0) {
        respond_fail(res, ERR_INTERNAL, "the compacted history would break the provider's rules");
        goto done;
    }

    if (!in.req.dry_run) {
        event = event_of(&in, &p, 0, &len);
        if (!event) {
            respond_fail(res, ERR_INTERNAL, "out of memory");
            goto done;
        }
    }
    /* Spills and their log entry in one transaction: no pointer is returned
     * that does not resolve. */
    int rc = compaction_commit(req->ns, &p.req, &p.c, event, len, &err);
    if (rc < 0) {
        req->facts.outcome = "store_unavailable";
        respond_error(res, &err);
        goto done;
    }
    if (rc == COMMIT_LOG_LOST)
        fprintf(stderr, "compactd: decision log entry for session %s not written: %s\n",
                req->session, err.message);
    count_facts(&req->facts, &p, in.req.n);
    req->facts.outcome = "ok";
    char *body = chat_encode_answer(req->session, &in, &p, &len);
    respond_json(res, 200, body, len);
done:
    free(event);
    chat_plan_free(&p);
    chat_input_free(&in);
}
