/* POST /v1/sessions/{session}/messages/compact: a provider's chat history
 * in, a history the provider accepts out, within the budget. */
#include "app.h"

#include "answers.h"
#include "chat_codec.h"

void handle_messages_compact(const app *a, api_request *req, api_response *res)
{
    chat_input in;
    compactd_error err = {0};
    answer ans;

    if (chat_decode_compact(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        req->facts.outcome = "invalid";
        respond_error(res, &err);
        chat_input_free(&in);
        return;
    }
    /* The body stays: each message's JSON is its bytes in it. */
    ops_scope s = api_scope(req);
    run_compact_messages(&s, &in, &req->facts, &ans);
    respond_answer(res, &ans);
    chat_input_free(&in);
}
