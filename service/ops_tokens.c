/* The count-tokens operation: texts counted under a tokenizer without
 * compacting, with the counts compactd plans by. */
#include "ops.h"

#include <assert.h>
#include <stdlib.h>

int ops_count_tokens(const ops_tokens_request *req, ops_tokens_result *out, compactd_error *err)
{
    assert(req->tokenizer && "the decoder resolves the default tokenizer");
    out->tokenizer = req->tokenizer;
    out->n = req->n;
    out->counts = malloc((req->n ? req->n : 1) * sizeof(*out->counts));
    if (!out->counts)
        return error_set(err, ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < req->n; i++)
        if ((out->counts[i] = tokenizer_count(out->tokenizer, req->texts[i], req->lens[i])) < 0)
            return error_set(err, ERR_INTERNAL, "out of memory while counting tokens");
    return 0;
}

void ops_tokens_result_free(ops_tokens_result *r)
{
    free(r->counts);
    r->counts = NULL;
    r->n = 0;
}
