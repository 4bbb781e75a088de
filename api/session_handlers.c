/* Handlers of the /v1/sessions routes: compact, read spills back, read the
 * decision log, delete a session. */
#include "app.h"

#include "compaction.h"
#include "json_decode.h"
#include "json_encode.h"
#include "session.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Compact ---- */

static void count_facts(request_facts *f, const compaction_request *req, const plan_result *p)
{
    f->units = req->n;
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        plan_decision d = p->entries[i].decision;
        f->units_by[u->cls][d]++;
        f->tokens_by[d] += u->tokens;
        if (d == DECISION_EXTERNALIZED)
            f->spill_bytes += u->text_len;
    }
}

void log_entry_lost(const api_request *req, const compactd_error *err)
{
    fprintf(stderr, "compactd: decision log entry for session %s not written: %s\n", req->session,
            err->message);
}

void append_event_best_effort(const api_request *req, char *event, size_t len)
{
    compactd_error err = {ERR_INTERNAL, "out of memory", ""};
    if (!event || session_log_append(req->ns, event, len, &err) != 0)
        log_entry_lost(req, &err);
    free(event);
}

/* A refused compaction is logged too: the refusal is the decision. */
static void refuse(api_request *req, api_response *res, const compact_input *in,
                   const compaction *c, const compactd_error *err)
{
    size_t len = 0;
    respond_refusal(res, err, in->req.budget, c->plan.required_budget,
                    &in->req.units[c->plan.failed_index]);
    req->facts.outcome = "failure";
    if (!in->req.dry_run) {
        char *event = json_encode_compaction_event(in, c, 1, &len);
        append_event_best_effort(req, event, len);
    }
}

void handle_compact(const app *a, api_request *req, api_response *res)
{
    compact_input in;
    compaction c;
    compactd_error err = {0};
    size_t len = 0;

    if (json_decode_compact(req->body, req->body_len, &a->cfg->limits, &in, &err) != 0) {
        req->facts.outcome = "invalid";
        respond_error(res, &err);
        return;
    }
    api_release_body(req);
    if (compaction_plan(&in.req, &c, &err) != 0) {
        if (err.kind == ERR_COMPACTION_FAILURE)
            refuse(req, res, &in, &c, &err);
        else
            respond_error(res, &err);
        compaction_free(&c);
        compact_input_free(&in);
        return;
    }

    char *event = NULL;
    if (!in.req.dry_run && !(event = json_encode_compaction_event(&in, &c, 0, &len))) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        goto done;
    }
    int committed = compaction_commit(req->ns, &in.req, &c, event, len, &err);
    if (committed < 0) {
        req->facts.outcome = "store_unavailable";
        respond_error(res, &err);
        goto done;
    }
    if (committed == COMMIT_LOG_LOST)
        log_entry_lost(req, &err);

    count_facts(&req->facts, &in.req, &c.plan);
    req->facts.outcome = "ok";
    char *body = json_encode_plan(req->session, &in, &c, &len);
    respond_json(res, 200, body, len);
done:
    free(event);
    compaction_free(&c);
    compact_input_free(&in);
}

/* ---- Spills ---- */

static void store_failed(api_request *req, api_response *res, const compactd_error *err)
{
    req->facts.outcome = "store_unavailable";
    respond_error(res, err);
}

void handle_spill_get(const app *a, api_request *req, api_response *res)
{
    const char *sha = api_query(req, "sha256");
    compactd_error err = {0};
    spill_record r;
    spill_candidates amb = {0};
    size_t len;
    (void)a;

    size_t key_len = strlen(req->tail);
    int found = sha ? session_spill_get_prefix(req->ns, req->tail, key_len, sha, &r, &amb, &err)
                    : session_spill_get(req->ns, req->tail, key_len, NULL, &r, &err);
    if (found < 0) {
        if (err.kind == ERR_STORE_UNAVAILABLE)
            store_failed(req, res, &err);
        else
            respond_error(res, &err);
        return;
    }
    if (found == 0) {
        respond_fail(res, ERR_NOT_FOUND, "no spill of key '%.200s'%s in session %s", req->tail,
                     sha ? " with that sha256" : "", req->session);
        return;
    }
    if (found == 2) {
        error_set(&err, ERR_AMBIGUOUS,
                  "sha256 prefix %s matches %zu versions of key '%.120s' in session %s: ask "
                  "again with one of the full digests in candidates",
                  sha, amb.n, req->tail, req->session);
        json_sanitize_text(err.message);
        char *body = json_encode_ambiguous(&err, &amb, &len);
        free(amb.sha256);
        respond_json(res, 409, body, len);
        return;
    }
    char *body = json_encode_spill(&r, &len);
    spill_record_clear(&r);
    respond_json(res, 200, body, len);
}

void handle_spill_list(const app *a, api_request *req, api_response *res)
{
    compactd_error err = {0};
    spill_record *r;
    size_t n, len;
    (void)a;
    if (session_spill_list(req->ns, &r, &n, &err) != 0) {
        store_failed(req, res, &err);
        return;
    }
    char *body = json_encode_spill_list(req->session, r, n, &len);
    spill_records_free(r, n);
    respond_json(res, 200, body, len);
}

void handle_session_delete(const app *a, api_request *req, api_response *res)
{
    compactd_error err = {0};
    (void)a;
    if (session_delete(req->ns, &err) != 0) {
        store_failed(req, res, &err);
        return;
    }
    res->status = 204;
    res->content_type = NULL;
}

/* ---- Decision log ---- */

#define EVENTS_PAGE_DEFAULT 100
#define EVENTS_PAGE_MAX 1000

/* Reads a canonical decimal number of at most max: digits only, no sign,
 * space or leading zero (but "0" itself). Sets *end past it. */
static int read_canonical(const char *s, uint64_t max, uint64_t *out, const char **end)
{
    uint64_t v = 0;
    size_t n = 0;
    for (; s[n] >= '0' && s[n] <= '9'; n++) {
        unsigned d = (unsigned)(s[n] - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (n == 0 || (n > 1 && s[0] == '0'))
        return -1;
    *out = v;
    *end = s + n;
    return 0;
}

/* A stream id: <ms>-<seq>, both canonical decimals that fit in 64 bits, as
 * Redis takes them. */
static int is_stream_id(const char *s)
{
    uint64_t v;
    const char *end;
    if (read_canonical(s, UINT64_MAX, &v, &end) != 0 || *end != '-')
        return 0;
    return read_canonical(end + 1, UINT64_MAX, &v, &end) == 0 && *end == '\0';
}

void handle_events(const app *a, api_request *req, api_response *res)
{
    const char *limit_s = api_query(req, "limit"), *after = api_query(req, "after");
    size_t limit = EVENTS_PAGE_DEFAULT, n, len;
    compactd_error err = {0};
    session_event *ev;
    (void)a;

    if (limit_s) {
        const char *end;
        uint64_t v;
        if (read_canonical(limit_s, EVENTS_PAGE_MAX, &v, &end) != 0 || *end != '\0' || v < 1) {
            respond_fail(res, ERR_INVALID_REQUEST,
                         "query parameter limit must be an integer from 1 to %d", EVENTS_PAGE_MAX);
            return;
        }
        limit = (size_t)v;
    }
    if (after && !is_stream_id(after)) {
        respond_fail(res, ERR_INVALID_REQUEST,
                     "query parameter after must be an event id such as 1700000000000-0");
        return;
    }
    /* One entry more than asked tells whether another page follows. */
    if (session_events(req->ns, after, limit + 1, &ev, &n, &err) != 0) {
        store_failed(req, res, &err);
        return;
    }
    int more = n > limit;
    char *body = json_encode_events(ev, more ? limit : n, more, &len);
    session_events_free(ev, n);
    respond_json(res, 200, body, len);
}
