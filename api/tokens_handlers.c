/* POST /v1/tokens: counts texts under a tokenizer without compacting, so an
 * orchestrator can price what it sends with the counts compactd plans by. */
#include "app.h"

#include "json_decode.h"
#include "json_encode.h"
#include "tokenizer.h"

#include <stdlib.h>

void handle_tokens(const app *a, api_request *req, api_response *res)
{
    tokens_input in;
    compactd_error err = {0};
    size_t len = 0;

    if (json_decode_tokens(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        req->facts.outcome = "invalid";
        respond_error(res, &err);
        return;
    }
    const tokenizer *t = in.tokenizer;
    int64_t *counts = malloc((in.n ? in.n : 1) * sizeof(*counts));
    if (!counts) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < in.n; i++)
        if ((counts[i] = tokenizer_count(t, in.texts[i], in.lens[i])) < 0) {
            respond_fail(res, ERR_INTERNAL, "out of memory while counting tokens");
            goto done;
        }
    char *body = json_encode_tokens(t, counts, in.n, &len);
    respond_json(res, 200, body, len);
done:
    free(counts);
    tokens_input_free(&in);
}
