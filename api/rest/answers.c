/* What REST and MCP answer each operation's outcome with: one encoding per
 * operation, so that both fronts send the same documents. */
#include "answers.h"

#include "answer_account.h"
#include "json_encode.h"
#include "json_text.h"
#include "json_writer.h"
#include "log_codec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ops_scope api_scope(const api_request *req)
{
    const api_call *c = api_call_of(req);
    ops_scope s = {c->ns, c->session, api_header(req, "Idempotency-Key"), &json_log_codec};
    return s;
}

/* The document body under status, *len bytes (read after body is made,
 * whatever order the arguments are evaluated in); when it could not be
 * written, the out-of-memory error instead. */
static void finish(answer *a, int status, char *body, const size_t *len)
{
    if (!body) {
        compactd_error oom = {ERR_INTERNAL, "out of memory", ""};
        answer_error(a, &oom);
        return;
    }
    a->status = status;
    a->body = body;
    a->len = *len;
}

void answer_error(answer *a, const compactd_error *err)
{
    /* Messages may quote the request (its path, a key cut short): keep the
     * body valid UTF-8 whatever the client sent. */
    a->err = *err;
    json_sanitize_text(a->err.message);
    json_sanitize_text(a->err.path);
    a->status = error_status(err->kind);
    a->body = json_encode_error(&a->err, &a->len);
}

/* A refusal's body is written from the error as the operation set it. */
static void refusal(answer *a, const compactd_error *err, char *body, const size_t *len)
{
    if (body)
        a->err = *err;
    finish(a, error_status(err->kind), body, len);
}

/* Writes extra (a JSON object compactd wrote, "{...}") into the members
 * of body (another); frees body. NULL when out of memory. */
static char *with_members(char *body, size_t body_len, const char *extra, size_t extra_len,
                          size_t *len)
{
    if (!body || !extra)
        return body;
    jw w;
    jw_init(&w, body_len + extra_len + 16);
    jw_object_open(&w);
    jw_members_raw(&w, body, body_len);
    jw_members_raw(&w, extra, extra_len);
    jw_object_close(&w);
    free(body);
    return jw_finish(&w, len);
}

static void answer_compact(answer *a, const char *session, const compact_input *in,
                           const ops_compact_result *r, const compactd_error *err)
{
    size_t len = 0;
    *a = (answer){0};
    if (!err) {
        finish(a, 200, json_encode_plan(session, in, &r->c, &len), &len);
    } else if (err->kind == ERR_COMPACTION_FAILURE) {
        const plan_result *p = &r->c.plan;
        refusal(a, err,
                json_encode_compaction_failure(err, in->req.budget, p->required_budget,
                                               &in->req.units[p->failed_index], &len),
                &len);
    } else {
        answer_error(a, err);
    }
}

static void answer_messages(answer *a, const char *session, const chat_input *in,
                            const ops_messages_result *r, const compactd_error *err)
{
    size_t len = 0;
    *a = (answer){0};
    if (!err)
        finish(a, 200, chat_encode_answer(session, in, &r->plan, &len), &len);
    else if (err->kind == ERR_COMPACTION_FAILURE)
        refusal(a, err, chat_encode_failure(err, in, &r->plan, &len), &len);
    else
        answer_error(a, err);
}

static void answer_verify(answer *a, const verify_input *in, const ops_verify_result *r,
                          const compactd_error *err, const char *extra, size_t extra_len)
{
    size_t len = 0;
    *a = (answer){0};
    if (!err) {
        char *body = json_encode_verify(in, &r->r, &len);
        if (r->r.has_repair)
            body = with_members(body, len, extra, extra_len, &len);
        finish(a, 200, body, &len);
    } else if (err->kind == ERR_COMPACTION_FAILURE) {
        refusal(
            a, err,
            json_encode_compaction_failure(err, in->budget, r->required_budget, r->failed, &len),
            &len);
    } else {
        answer_error(a, err);
    }
}

void answer_spill(answer *a, const ops_spill_result *r, const spill_page *page,
                  const compactd_error *err)
{
    size_t len = 0;
    *a = (answer){0};
    if (!err) {
        store_record rec = spill_page_record(&r->spill, page);
        finish(a, 200, json_encode_spill(&rec, page, &len), &len);
    } else if (err->kind == ERR_AMBIGUOUS) {
        compactd_error e = *err;
        json_sanitize_text(e.message);
        refusal(a, &e, json_encode_ambiguous(&e, &r->amb, &len), &len);
    } else {
        answer_error(a, err);
    }
}

void answer_spill_list(answer *a, const char *session, const ops_spill_list_result *r,
                       const compactd_error *err)
{
    size_t len = 0;
    *a = (answer){0};
    if (!err)
        finish(a, 200, json_encode_spill_list(session, r->spills, r->n, &len), &len);
    else
        answer_error(a, err);
}

/* ---- Runs ---- */

/* Adds a planned compaction's units and decisions to f. */
static void facts_add_plan(request_facts *f, const compaction_request *req, const plan_result *p)
{
    f->units += req->n;
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        plan_decision d = p->entries[i].decision;
        f->units_by[u->cls][d]++;
        f->tokens_by[d] += u->tokens;
        if (d == DECISION_EXTERNALIZED)
            f->spill_bytes += u->text_len;
    }
}

void run_compact(const ops_scope *s, compact_input *in, request_facts *f, answer *a)
{
    ops_compact_result r = {0};
    compactd_error err = {0};
    int rc = ops_compact_plan(s, &in->req, &r, &err);
    run_compact_finish(s, in, &r, rc, &err, f, a);
}

/* ---- Spills every front can give back ---- */

/* A compaction spills a unit only when the answer that gives it back fits
 * what one client may hold on every front (spill_answer_fits(), the rule
 * the answer would be refused by): otherwise it is refused before the
 * commit, with nothing written, rather than keep a text no pointer leads
 * back to. Unit i is the request's member[index[i]] (member[i] when index
 * is NULL). 0, or -1 with err set. */
static int spills_returnable(const compaction_request *req, const plan_result *p,
                             const char *member, const size_t *index, compactd_error *err)
{
    size_t limit = answer_limit(), bytes;
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        if (p->entries[i].decision != DECISION_EXTERNALIZED ||
            spill_answer_fits(limit, u->key, u->key_len, u->text, u->text_len, &bytes))
            continue;
        /* Short: a message holds 255 bytes, a long key included. */
        error_set(err, ERR_TOO_LARGE,
                  "nothing was written: spilled, unit '%.*s' would take %zu bytes to give back, "
                  "past the %zu one client may hold, %u kept for its request "
                  "(COMPACTD_MAX_CLIENT_INFLIGHT_BYTES)",
                  error_quote_len(u->key, u->key_len), u->key, bytes, limit,
                  REACQUIRE_REQUEST_ROOM);
        snprintf(err->path, sizeof(err->path), "$.%s[%zu]", member, index ? index[i] : i);
        return -1;
    }
    return 0;
}

/* ---- Answers made before the commit ---- */

/* A planned compaction's answer is written before anything is committed:
 * one that would pass what the request may hold (answer_account.h) is
 * refused with nothing written, and one that was written is sent whatever
 * the commit needs on the way. Returns 0 when a holds the answer and the
 * commit may go ahead (*keep: the bytes held with it); 1 when a is the
 * refusal. */
static int answer_first(answer *a, size_t *keep)
{
    if (a->status != 200)
        return 1;
    /* What the front adds to send it must be there too; taken to check,
     * given back for the front to take as it writes. */
    size_t extra = answer_front_extra(a->body, a->len);
    if (extra) {
        answer_refusal why = answer_take(extra);
        if (why != ANSWER_OK) {
            /* The front answers the refusal it records (413, 503 or its
             * own error), as for any answer that did not fit. */
            answer_refuse(why);
            free(a->body);
            *a = (answer){0};
            compactd_error err = {ERR_TOO_LARGE, "", ""};
            snprintf(err.message, sizeof(err.message), "the answer would not fit once wrapped");
            answer_error(a, &err);
            return 1;
        }
        answer_give(extra);
    }
    *keep = answer_taken();
    return 0;
}

/* A plan answered without its decision-log entry says so: a last member
 * added to the object body (*len bytes, never empty), which is freed when
 * that fails. NULL when out of memory. */
static char *unlogged(char *body, size_t *len)
{
    static const char member[] = ",\"logged\":false}";
    assert(*len > 1 && body[*len - 1] == '}');
    char *more = realloc(body, *len + sizeof(member));
    if (!more) {
        free(body);
        return NULL;
    }
    /* The closing brace gives way to the member and a brace of its own. */
    memcpy(more + *len - 1, member, sizeof(member));
    *len += sizeof(member) - 2;
    return more;
}

/* After the commit: what it allocated and freed (its log entry) goes back,
 * a failed commit's error replaces the answer made for it, and one whose
 * entry was lost says so. */
static void after_commit(answer *a, size_t keep, int rc, int log_lost, const compactd_error *err)
{
    answer_settle(keep);
    if (rc == 0 && log_lost && !(a->body = unlogged(a->body, &a->len))) {
        compactd_error oom = {ERR_INTERNAL, "out of memory", ""};
        *a = (answer){0};
        answer_error(a, &oom);
    }
    if (rc != 0) {
        free(a->body);
        *a = (answer){0};
        answer_error(a, err);
    }
}

void run_compact_finish(const ops_scope *s, compact_input *in, ops_compact_result *r, int rc,
                        compactd_error *err, request_facts *f, answer *a)
{
    size_t keep = 0;
    if (rc == 0 && spills_returnable(&in->req, &r->c.plan, "units", NULL, err) != 0) {
        rc = -1;
        f->outcome = OUTCOME_INVALID;
        answer_error(a, err);
    } else if (rc == 0) {
        answer_compact(a, s->session, in, r, NULL);
        if (answer_first(a, &keep) == 0) {
            rc = ops_compact_finish(s, &in->req, r, err);
            after_commit(a, keep, rc, r->log_lost, err);
        } else {
            rc = -1;
        }
    } else {
        if (r->refused)
            ops_compact_finish(s, &in->req, r, err);
        answer_compact(a, s->session, in, r, err);
    }
    if (r->outcome)
        f->outcome = r->outcome;
    if (rc == 0)
        facts_add_plan(f, &in->req, &r->c.plan);
    compaction_free(&r->c);
}

/* The operation checks the history the codec will render before it
 * commits anything. */
static int rendered_valid(const void *ctx, const chat_plan *p)
{
    return chat_output_valid(ctx, p);
}

static ops_messages_request messages_request(const chat_input *in)
{
    ops_messages_request mr = {&in->req, rendered_valid, in, in->codec->format->name};
    return mr;
}

int run_compact_messages_plan(const ops_scope *s, const chat_input *in, ops_messages_result *r,
                              compactd_error *err)
{
    ops_messages_request mr = messages_request(in);
    *r = (ops_messages_result){0};
    return ops_compact_messages_plan(s, &mr, r, err);
}

void run_compact_messages(const ops_scope *s, const chat_input *in, request_facts *f, answer *a)
{
    ops_messages_result r;
    compactd_error err = {0};
    int rc = run_compact_messages_plan(s, in, &r, &err);
    run_compact_messages_finish(s, in, &r, rc, &err, f, a);
}

void run_compact_messages_finish(const ops_scope *s, const chat_input *in, ops_messages_result *r,
                                 int rc, compactd_error *err, request_facts *f, answer *a)
{
    ops_messages_request mr = messages_request(in);
    size_t keep = 0;
    if (rc == 0 && spills_returnable(&r->plan.req, &r->plan.c.plan, "messages", NULL, err) != 0) {
        rc = -1;
        f->outcome = OUTCOME_INVALID;
        answer_error(a, err);
    } else if (rc == 0) {
        answer_messages(a, s->session, in, r, NULL);
        if (answer_first(a, &keep) == 0) {
            rc = ops_compact_messages_finish(s, &mr, r, err);
            after_commit(a, keep, rc, r->log_lost, err);
        } else {
            rc = -1;
        }
    } else {
        if (r->refused)
            ops_compact_messages_finish(s, &mr, r, err);
        answer_messages(a, s->session, in, r, err);
    }
    if (r->outcome)
        f->outcome = r->outcome;
    if (rc == 0)
        facts_add_plan(f, &r->plan.req, &r->plan.c.plan);
    chat_plan_free(&r->plan);
}

/* A repair spills the missing units it cannot restore verbatim. */
static int repair_returnable(const verify_result *r, compactd_error *err)
{
    return spills_returnable(&r->repair_req, &r->repair.plan, "units", r->missing_index, err);
}

void run_verify(const ops_scope *s, verify_input *in, const char *extra, size_t extra_len,
                request_facts *f, answer *a)
{
    ops_verify_request vr = {in->context, in->context_len,    &in->set,    in->has_budget,
                             in->budget,  in->context_tokens, in->dry_run, repair_returnable};
    ops_verify_result r;
    compactd_error err = {0};
    int rc = ops_verify(s, &vr, &r, &err);
    if (r.outcome)
        f->outcome = r.outcome;
    answer_verify(a, in, &r, rc == 0 ? NULL : &err, extra, extra_len);
    verify_result_free(&r.r);
}
