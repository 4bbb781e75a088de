/* The truncation audit: one scan of the context for every unit's text and
 * pointer, then the store's word on each pointer, then the repair. */
#include "verify.h"

#include "acmatch.h"
#include "commit.h"
#include "pointer.h"
#include "session.h"

#include <stdlib.h>
#include <string.h>

/* Scans the context once for 2n patterns: unit i's text is pattern 2i, its
 * pointer pattern 2i+1. Sets found[i] to verbatim, or to pointer when only
 * the pointer occurs (to be confirmed by the store). */
static int scan_context(const verify_request *req, verify_result *out)
{
    size_t n = req->n;
    acmatch_pattern *pats = calloc(2 * n + 1, sizeof(*pats));
    char *pointers = malloc(n * POINTER_MAX_BYTES + 1);
    unsigned char *hit = malloc(2 * n + 1);
    int rc = -1;
    if (!pats || !pointers || !hit)
        goto done;

    char *p = pointers;
    for (size_t i = 0; i < n; i++) {
        const plan_unit *u = &req->units[i];
        sha256_hex(u->text, u->text_len, out->sha256[i]);
        pats[2 * i] = (acmatch_pattern){u->text, u->text_len};
        size_t plen = pointer_format(p, u->key, u->key_len, out->sha256[i]);
        pats[2 * i + 1] = (acmatch_pattern){p, plen};
        p += plen + 1;
    }
    acmatch *m = acmatch_new(pats, 2 * n);
    if (!m)
        goto done;
    acmatch_scan(m, req->context, req->context_len, hit);
    acmatch_free(m);

    for (size_t i = 0; i < n; i++)
        out->found[i] = hit[2 * i]       ? FOUND_VERBATIM
                        : hit[2 * i + 1] ? FOUND_POINTER
                                         : FOUND_MISSING;
    rc = 0;
done:
    free(pats);
    free(pointers);
    free(hit);
    return rc;
}

/* A pointer counts only while its spill can be read back. */
static int confirm_pointers(const char *ns, const verify_request *req, verify_result *out,
                            compactd_error *err)
{
    /* Every pointer found, asked about in one round trip. */
    size_t *at = malloc((req->n ? req->n : 1) * sizeof(*at)), k = 0;
    unsigned char *stored = malloc(req->n ? req->n : 1);
    int rc = 0;
    if (!at || !stored) {
        rc = error_set(err, ERR_INTERNAL, "out of memory checking pointers");
        goto done;
    }
    for (size_t i = 0; i < req->n; i++)
        if (out->found[i] == FOUND_POINTER)
            at[k++] = i;
    rc = session_spills_stored(ns, req->units, (const char(*)[SHA256_HEX_LEN + 1]) out->sha256, at,
                               k, stored, err);
    for (size_t j = 0; rc == 0 && j < k; j++)
        if (!stored[j])
            out->found[at[j]] = FOUND_MISSING;
done:
    free(at);
    free(stored);
    return rc;
}

/* Plans the missing units as a compaction of their own into the room the
 * context leaves: verbatim where room allows, else externalized. */
static int plan_repair(const verify_request *req, verify_result *out, compactd_error *err)
{
    compaction_request *rr = &out->repair_req;
    size_t k = 0;
    out->missing_index = malloc((out->n_missing ? out->n_missing : 1) * sizeof(size_t));
    if (!out->missing_index || compaction_request_init(rr, out->n_missing) != 0)
        return error_set(err, ERR_INTERNAL, "out of memory planning a repair");
    for (size_t i = 0; i < req->n; i++)
        if (out->found[i] == FOUND_MISSING) {
            rr->units[k] = req->units[i];
            rr->detail[k] = req->detail[i];
            memcpy(rr->sha256[k], out->sha256[i], sizeof(rr->sha256[k]));
            out->missing_index[k++] = i;
        }

    /* A context already over budget leaves no room at all. */
    int64_t room = req->budget - req->context_tokens;
    rr->budget = room < 0 ? 0 : room;
    rr->mode = PLAN_STRICT;
    rr->dry_run = req->dry_run;
    rr->tokenizer = req->tokenizer;
    out->has_repair = 1;
    return compaction_plan(rr, &out->repair, err);
}

int verify_run(const char *ns, const verify_request *req, verify_result *out, compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    size_t n = req->n ? req->n : 1;
    out->found = malloc(n * sizeof(*out->found));
    out->sha256 = malloc(n * sizeof(*out->sha256));
    if (!out->found || !out->sha256 || scan_context(req, out) != 0)
        return error_set(err, ERR_INTERNAL, "out of memory scanning the context");
    if (confirm_pointers(ns, req, out, err) != 0)
        return -1;
    for (size_t i = 0; i < req->n; i++)
        out->n_missing += out->found[i] == FOUND_MISSING;
    if (req->repair && out->n_missing > 0)
        return plan_repair(req, out, err);
    return 0;
}

int verify_commit(const char *ns, const verify_result *r, const char *event, size_t event_len,
                  compactd_error *err)
{
    if (r->has_repair && !r->repair_req.dry_run && r->repair.plan.n_externalized > 0)
        return compaction_commit(ns, NULL, &r->repair_req, &r->repair, event, event_len, err);
    if (!event)
        return COMMIT_DONE;
    return session_log_append(ns, event, event_len, err) == 0 ? COMMIT_DONE : COMMIT_LOG_LOST;
}

void verify_result_free(verify_result *r)
{
    free(r->found);
    free(r->sha256);
    free(r->missing_index);
    compaction_request_free(&r->repair_req);
    if (r->has_repair)
        compaction_free(&r->repair);
    memset(r, 0, sizeof(*r));
}
