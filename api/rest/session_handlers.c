/* Handlers of the /v1/sessions routes: compact, read spills back, read the
 * decision log, delete a session. Each decodes, calls its operation
 * (ops.h) and answers what it returned. */
#include "handlers.h"

#include "answer_account.h"
#include "answers.h"
#include "json_decode.h"
#include "json_encode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Compact ---- */

/* A compaction between its plan and its commit: planned where Redis is
 * never waited on, and committed there too unless the commit waits. */
typedef struct {
    api_request *req;
    ops_scope s;
    compact_input in;
    ops_compact_result r;
    compactd_error err;
    int rc;
} compact_job;

static void compact_finish(void *job, api_response *res)
{
    compact_job *j = job;
    answer ans;
    run_compact_finish(&j->s, &j->in, &j->r, j->rc, &j->err, &api_call_of(j->req)->facts, &ans);
    respond_answer(res, &ans);
    compact_input_free(&j->in);
    free(j);
}

static void compact_drop(void *job)
{
    compact_job *j = job;
    compaction_free(&j->r.c);
    compact_input_free(&j->in);
    free(j);
}

void handle_compact(const app *a, api_request *req, api_response *res)
{
    compact_job *j = calloc(1, sizeof(*j));
    if (!j) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        return;
    }
    if (json_decode_compact(req->body, req->body_len, &a->cfg->limits, &j->in, &j->err) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &j->err);
        free(j);
        return;
    }
    api_release_body(req);
    j->req = req;
    j->s = api_scope(req);
    j->rc = ops_compact_plan(&j->s, &j->in.req, &j->r, &j->err);
    if (!api_hand_on(req, res, j->r.waits, compact_finish, compact_drop, j))
        compact_finish(j, res);
}

/* ---- Spills ---- */

void handle_spill_get(const app *a, api_request *req, api_response *res)
{
    ops_spill_ref ref = {api_call_of(req)->tail, strlen(api_call_of(req)->tail),
                         api_query(req, "sha256")};
    ops_spill_result r;
    spill_page_args args;
    spill_page page;
    compactd_error err = {0};
    answer ans;

    if (spill_page_args_query(api_query(req, "offset"), api_query(req, "max_tokens"),
                              api_query(req, "tokenizer"), (int64_t)a->cfg->limits.max_text_bytes,
                              &args, &err) != 0) {
        api_call_of(req)->facts.outcome = OUTCOME_INVALID;
        respond_error(res, &err);
        return;
    }
    ops_scope s = api_scope(req);
    int rc = ops_spill_read(&s, &ref, &r, &err);
    if (rc == 0)
        rc = spill_page_cut(&args, r.spill.text, r.spill.text_len, &page, &err);
    if (r.outcome)
        api_call_of(req)->facts.outcome = r.outcome;
    answer_spill(&ans, &r, &page, rc == 0 ? NULL : &err);
    ops_spill_result_free(&r);
    respond_answer(res, &ans);
}

void handle_spill_list(const app *a, api_request *req, api_response *res)
{
    ops_spill_list_result r;
    compactd_error err = {0};
    answer ans;
    (void)a;

    ops_scope s = api_scope(req);
    int rc = ops_spill_list(&s, &r, &err);
    if (r.outcome)
        api_call_of(req)->facts.outcome = r.outcome;
    answer_spill_list(&ans, api_call_of(req)->session, &r, rc == 0 ? NULL : &err);
    ops_spill_list_result_free(&r);
    respond_answer(res, &ans);
}

void handle_session_delete(const app *a, api_request *req, api_response *res)
{
    compactd_error err = {0};
    call_outcome outcome;
    (void)a;

    ops_scope s = api_scope(req);
    int rc = ops_session_delete(&s, &outcome, &err);
    if (outcome)
        api_call_of(req)->facts.outcome = outcome;
    if (rc != 0) {
        respond_error(res, &err);
        return;
    }
    res->status = 204;
    res->content_type = NULL;
}

/* ---- Decision log ---- */

#define EVENTS_PAGE_DEFAULT 100
#define EVENTS_PAGE_MAX 1000
/* A page holds at most this many bytes of entries (but always one): a
 * thousand entries of a large session's compactions would otherwise be
 * hundreds of megabytes, in Redis's output buffer and here. */
#define EVENTS_PAGE_BYTES (4u << 20)
/* What reading a page holds before its answer is written: Redis's reply
 * of a few entries and the entries copied out of it. */
#define EVENTS_READ_HOLDS (2 * EVENTS_PAGE_BYTES)

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
    const char *limit_s = api_query(req, "limit");
    ops_events_request q = {api_query(req, "after"), EVENTS_PAGE_DEFAULT, EVENTS_PAGE_BYTES};
    ops_events_result r;
    compactd_error err = {0};
    size_t len;
    (void)a;

    if (limit_s) {
        const char *end;
        uint64_t v;
        if (read_canonical(limit_s, EVENTS_PAGE_MAX, &v, &end) != 0 || *end != '\0' || v < 1) {
            respond_fail(res, ERR_INVALID_REQUEST,
                         "query parameter limit must be an integer from 1 to %d", EVENTS_PAGE_MAX);
            return;
        }
        q.limit = (size_t)v;
    }
    if (q.after && !is_stream_id(q.after)) {
        respond_fail(res, ERR_INVALID_REQUEST,
                     "query parameter after must be an event id such as 1700000000000-0");
        return;
    }
    /* The read is counted in the memory budget before it is made. */
    answer_refusal why = answer_take(EVENTS_READ_HOLDS);
    if (why != ANSWER_OK) {
        answer_refuse(why);
        respond_fail(res, why == ANSWER_OVERLOADED ? ERR_OVERLOADED : ERR_TOO_LARGE,
                     "reading a page of the decision log needs %u bytes more than may be held",
                     EVENTS_READ_HOLDS);
        return;
    }
    ops_scope s = api_scope(req);
    int rc = ops_read_events(&s, &q, &r, &err);
    if (r.outcome)
        api_call_of(req)->facts.outcome = r.outcome;
    if (rc != 0) {
        answer_give(EVENTS_READ_HOLDS);
        respond_error(res, &err);
        return;
    }
    char *body = json_encode_events(r.events, r.n, r.more, &len);
    ops_events_result_free(&r);
    answer_give(EVENTS_READ_HOLDS);
    respond_json(res, 200, body, len);
}
