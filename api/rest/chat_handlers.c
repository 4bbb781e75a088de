/* POST /v1/sessions/{session}/messages/compact: a provider's chat history
 * in, a history the provider accepts out, within the budget. */
#include "handlers.h"

#include "answers.h"
#include "chat_codec.h"

#include <stdlib.h>

/* A history between its plan and its commit (as handle_compact()'s). */
typedef struct {
    api_request *req;
    ops_scope s;
    chat_input in; /* borrows the body, which stays */
    ops_messages_result r;
    compactd_error err;
    int rc;
} messages_job;

static void messages_finish(void *job, api_response *res)
{
    messages_job *j = job;
    answer ans;
    run_compact_messages_finish(&j->s, &j->in, &j->r, j->rc, &j->err, &api_call_of(j->req)->facts,
                                &ans);
    respond_answer(res, &ans);
    chat_input_free(&j->in);
    free(j);
}

static void messages_drop(void *job)
{
    messages_job *j = job;
    chat_plan_free(&j->r.plan);
    chat_input_free(&j->in);
    free(j);
}

void handle_messages_compact(const app *a, api_request *req, api_response *res)
{
    messages_job *j = calloc(1, sizeof(*j));
    if (!j) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        return;
    }
    if (chat_decode_compact(req->body, req->body_len, &a->cfg->limits, &j->in, &j->err) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &j->err);
        chat_input_free(&j->in);
        free(j);
        return;
    }
    /* The body stays: each message's JSON is its bytes in it. */
    j->req = req;
    j->s = api_scope(req);
    j->rc = run_compact_messages_plan(&j->s, &j->in, &j->r, &j->err);
    if (!api_hand_on(req, res, j->r.waits, messages_finish, messages_drop, j))
        messages_finish(j, res);
}
