/* The pricing step: every cost compactd computes itself goes through one
 * tokenizer_count() call here. */
#include "pricing.h"

#include "digest_cache.h"
#include "pointer.h"

#include <assert.h>
#include <string.h>

/* A unit the plan may externalize needs its digest (the spill's name) and
 * the cost of its pointer. */
static int may_externalize(const compaction_request *req, const plan_unit *u)
{
    if (u->cls == UNIT_PROTECTED)
        return 1;
    return u->cls == UNIT_DERIVABLE && u->has_text && req->mode == PLAN_DISCOVERY;
}

static int count(const tokenizer *t, const char *text, size_t len, int64_t *out,
                 compactd_error *err)
{
    int64_t n = tokenizer_count(t, text, len);
    if (n < 0)
        return error_set(err, ERR_INTERNAL, "out of memory while counting tokens");
    *out = n;
    return 0;
}

/* Unit i's tokens and summary tokens, where the caller gave none. */
static int count_unit(const tokenizer *t, compaction_request *req, size_t i, compactd_error *err)
{
    plan_unit *u = &req->units[i];
    const unit_detail *d = &req->detail[i];
    if (!d->has_tokens) {
        if (!u->has_text)
            return error_set(err, ERR_INVALID_REQUEST,
                             "unit '%.*s' has neither tokens nor text to count",
                             error_quote_len(u->key, u->key_len), u->key);
        if (count(t, u->text, u->text_len, &u->tokens, err) != 0)
            return -1;
    }
    if (u->has_summary && !d->has_summary_tokens &&
        count(t, d->summary, d->summary_len, &u->summary_tokens, err) != 0)
        return -1;
    return 0;
}

int pricing_count_tokens(compaction_request *req, compactd_error *err)
{
    const tokenizer *t = req->tokenizer;
    assert(t && "the decoder resolves the default tokenizer");
    for (size_t i = 0; i < req->n; i++)
        if (count_unit(t, req, i, err) != 0)
            return -1;
    return 0;
}

/* Stands in for a digest not taken yet where only its length counts. */
static const char digest_stand_in[65] =
    "0000000000000000000000000000000000000000000000000000000000000000";

int pricing_run(compaction_request *req, compactd_error *err)
{
    const tokenizer *t = req->tokenizer;
    char ptr[POINTER_MAX_BYTES];

    assert(t && "the decoder resolves the default tokenizer");
    int by_length = tokenizer_counts_length(t);
    for (size_t i = 0; i < req->n; i++) {
        plan_unit *u = &req->units[i];
        if (count_unit(t, req, i, err) != 0)
            return -1;
        if (!may_externalize(req, u))
            continue;
        const char *sha = req->sha256[i];
        if (sha[0] == '\0' && by_length)
            sha = digest_stand_in;
        else if (sha[0] == '\0')
            digest_cache_sha256_hex(u->text, u->text_len, req->sha256[i]);
        size_t plen = pointer_format(ptr, u->key, u->key_len, sha);
        if (count(t, ptr, plen, &u->pointer_tokens, err) != 0)
            return -1;
    }
    return 0;
}

void pricing_digest_spills(compaction_request *req, const plan_result *p)
{
    for (size_t i = 0; i < req->n; i++)
        if (p->entries[i].decision == DECISION_EXTERNALIZED && req->sha256[i][0] == '\0')
            digest_cache_sha256_hex(req->units[i].text, req->units[i].text_len, req->sha256[i]);
}
