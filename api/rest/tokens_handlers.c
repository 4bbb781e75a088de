/* POST /v1/tokens: counts texts under a tokenizer without compacting, so an
 * orchestrator can price what it sends with the counts compactd plans by. */
#include "handlers.h"

#include "json_decode.h"
#include "json_encode.h"
#include "ops.h"

void handle_tokens(const app *a, api_request *req, api_response *res)
{
    tokens_input in;
    ops_tokens_result r = {0};
    compactd_error err = {0};
    size_t len = 0;

    if (json_decode_tokens(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &err);
        return;
    }
    ops_tokens_request q = {in.tokenizer, in.texts, in.lens, in.n};
    if (ops_count_tokens(&q, &r, &err) != 0) {
        respond_error(res, &err);
    } else {
        char *body = json_encode_tokens(r.tokenizer, r.counts, r.n, &len);
        respond_json(res, 200, body, len);
    }
    ops_tokens_result_free(&r);
    tokens_input_free(&in);
}
