/* POST /v1/sessions/{session}/verify: the truncation audit and its repair. */
#include "handlers.h"

#include "answers.h"
#include "json_decode.h"

void handle_verify(const app *a, api_request *req, api_response *res)
{
    verify_input in;
    compactd_error err = {0};
    answer ans;

    if (json_decode_verify(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &err);
        return;
    }
    api_release_body(req);
    ops_scope s = api_scope(req);
    run_verify(&s, &in, NULL, 0, &api_call_of(req)->facts, &ans);
    respond_answer(res, &ans);
    verify_input_free(&in);
}
