/* The operations on what a session has stored: read a spill back (and
 * re-acquire one through its pointer), list the spills, read the decision
 * log, delete the session. */
#include "ops.h"
#include "ops_log.h"
#include "plan_memory.h"

#include <stdlib.h>
#include <string.h>

/* A store that does not answer is counted as such. */
static int store_failed(call_outcome *outcome, const compactd_error *err)
{
    if (err->kind == ERR_STORE_UNAVAILABLE)
        *outcome = OUTCOME_STORE_UNAVAILABLE;
    return -1;
}

/* ---- Spills ---- */

int ops_spill_read(const ops_scope *s, const ops_spill_ref *ref, ops_spill_result *out,
                   compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    int found =
        session_spill_read(s->ns, ref->key, ref->key_len, ref->sha256, &out->spill, &out->amb, err);
    if (found < 0)
        return store_failed(&out->outcome, err);
    if (found == SPILL_NONE)
        /* The session is not named: the message may reach a model (the
         * reacquire tool's result), which needs no session id. */
        return error_set(err, ERR_NOT_FOUND, "no spill of key '%.200s'%s in this session", ref->key,
                         ref->sha256 ? " with that sha256" : "");
    if (found == SPILL_AMBIGUOUS)
        return error_set(err, ERR_AMBIGUOUS,
                         "sha256 prefix %s matches %zu versions of key '%.120s' in this session: "
                         "ask again with one of the full digests in candidates",
                         ref->sha256, out->amb.n, ref->key);
    return 0;
}

int ops_reacquire(const ops_scope *s, const ops_spill_ref *ref, const char *via,
                  ops_spill_check_fn check, void *check_ctx, ops_spill_result *out,
                  compactd_error *err)
{
    size_t len = 0;
    if (ops_spill_read(s, ref, out, err) != 0)
        return -1;
    if (check && check(check_ctx, &out->spill, err) != 0)
        return -1;
    /* The decision log records each re-acquisition that found its text. */
    char *event = s->log->reacquire(&out->spill, via, &len);
    ops_log_best_effort(s, event, len);
    return 0;
}

void ops_spill_result_free(ops_spill_result *r)
{
    store_record_clear(&r->spill);
    free(r->amb.sha256);
    r->amb.sha256 = NULL;
    r->amb.n = 0;
}

int ops_spill_list(const ops_scope *s, ops_spill_list_result *out, compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    if (session_spill_list(s->ns, &out->spills, &out->n, err) != 0)
        return store_failed(&out->outcome, err);
    return 0;
}

void ops_spill_list_result_free(ops_spill_list_result *r)
{
    store_records_free(r->spills, r->n);
    r->spills = NULL;
    r->n = 0;
}

int ops_session_delete(const ops_scope *s, call_outcome *outcome, compactd_error *err)
{
    *outcome = OUTCOME_NONE;
    plan_memory_forget(s->ns); /* whatever the store answers: a cache */
    if (session_delete(s->ns, err) != 0)
        return store_failed(outcome, err);
    return 0;
}

/* ---- Decision log ---- */

int ops_read_events(const ops_scope *s, const ops_events_request *req, ops_events_result *out,
                    compactd_error *err)
{
    memset(out, 0, sizeof(*out));
    /* One entry more than the page tells whether another page follows. */
    if (session_events(s->ns, req->after, req->limit + 1, req->max_bytes, &out->events,
                       &out->n_read, err) != 0)
        return store_failed(&out->outcome, err);
    size_t n = 0, bytes = 0;
    while (n < out->n_read && n < req->limit) {
        size_t size = out->events[n].data_len + strlen(out->events[n].id);
        if (n > 0 && (bytes >= req->max_bytes || size > req->max_bytes - bytes))
            break;
        bytes += size;
        n++;
    }
    out->n = n;
    out->more = out->n_read > n;
    return 0;
}

void ops_events_result_free(ops_events_result *r)
{
    store_events_free(r->events, r->n_read);
    r->events = NULL;
    r->n = r->n_read = 0;
}
