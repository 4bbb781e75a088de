/* The operations compactd offers, whatever front asks for them: REST and MCP
 * each decode a request into one of these typed requests, call the
 * operation, and encode its typed result. An operation makes its outcome
 * durable and writes its decision-log entry itself; it knows no HTTP and no
 * JSON (entries are written through the ops_log_codec the front passes in).
 *
 * Every operation returns 0, or -1 with err set; out->outcome (where there
 * is one) says what the metrics and the access log count the call as,
 * failure or not, and is OUTCOME_NONE when the call counts as none. */
#ifndef COMPACTD_OPS_H
#define COMPACTD_OPS_H

#include "chat.h"
#include "chat_plan.h"
#include "compaction.h"
#include "error.h"
#include "outcome.h"
#include "session.h"
#include "verify.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Who an operation runs for ---- */

typedef struct ops_verify_request ops_verify_request;

/* How a decision-log entry is written: the operation decides what is
 * logged and when; the codec, given by the API layer, how it reads. Each
 * returns a new buffer the caller frees with free() and its length in
 * *len, or NULL when out of memory. A callback table rather than entries
 * encoded in advance, because an entry depends on what the operation
 * decided (a refusal is logged with the unit that did not fit). */
typedef struct {
    /* A compaction, or a refused one when failed is set (then c->plan
     * names the unit that did not fit). */
    char *(*compaction)(const compaction_request *req, const compaction *c, int failed,
                        size_t *len);
    /* An audit that found units missing: OUTCOME_SILENT_TRUNCATION,
     * OUTCOME_REPAIRED or OUTCOME_FAILURE. */
    char *(*verify)(const ops_verify_request *req, const verify_result *r, call_outcome outcome,
                    size_t *len);
    /* A spill read back through a pointer; via names the front ("mcp"). */
    char *(*reacquire)(const store_record *r, const char *via, size_t *len);
    /* A chat history's compaction: the units entry, with the history's
     * format, what lies outside its messages (system, markers) and each
     * message's role as req read it. */
    char *(*chat_compaction)(const chat_request *req, const chat_plan *p, const char *format,
                             int failed, size_t *len);
} ops_log_codec;

/* The session an operation reads and writes. Borrowed: every pointer must
 * outlive the call. */
typedef struct {
    const char *ns;      /* "tenant:session": the store's namespace */
    const char *session; /* the session id, for messages */
    /* The client's Idempotency-Key, or NULL: names its commits
     * (compaction_commit()). */
    const char *idempotency_key;
    const ops_log_codec *log;
} ops_scope;

/* ---- Compact units ---- */

typedef struct {
    compaction c; /* release with compaction_free() either way */
    call_outcome outcome;
    /* Set by ops_compact_plan(): refused, the plan was a CompactionFailure
     * (the finish logs it); waits, ops_compact_finish() waits on Redis. */
    int refused, waits;
    /* Set by the finish: the plan is answered, but its log entry (and its
     * Idempotency-Key) could not be written; the answer must say so. */
    int log_lost;
} ops_compact_result;

/* Prices and plans req (compaction_plan()), commits it with its log entry
 * (compaction_commit()) and answers the plan in out->c. A refusal
 * (CompactionFailure: out->c.plan names the unit and the budget it needs)
 * is logged unless req->dry_run. req stays the caller's; the pricing step
 * fills its costs. */
int ops_compact(const ops_scope *s, compaction_request *req, ops_compact_result *out,
                compactd_error *err);

/* ops_compact() in two halves, for a front that plans where Redis is never
 * waited on and hands the rest on where it may be: ops_compact_plan()
 * prices and plans and writes nothing; when it returns 0 or sets
 * out->refused, ops_compact_finish() commits the plan (or logs the
 * refusal) with err as the plan left it, and returns as ops_compact(). */
int ops_compact_plan(const ops_scope *s, compaction_request *req, ops_compact_result *out,
                     compactd_error *err);
int ops_compact_finish(const ops_scope *s, compaction_request *req, ops_compact_result *out,
                       compactd_error *err);

/* ---- Compact messages ---- */

typedef struct {
    const chat_request *req;
    /* 0 when the history the front renders from plan p keeps the
     * provider's rules, -1 when not or out of memory: checked before
     * anything is written, so that no broken history is committed. */
    int (*rendered_valid)(const void *ctx, const chat_plan *p);
    const void *ctx;
    const char *format; /* the provider format's name, for the log ("openai") */
} ops_messages_request;

typedef struct {
    chat_plan plan; /* release with chat_plan_free() either way */
    call_outcome outcome;
    int refused, waits, log_lost; /* as ops_compact_result's */
} ops_messages_result;

/* Plans a chat history under its budget (chat_plan_run()), commits its
 * spills with its log entry and answers the plan. On CompactionFailure,
 * out->plan names the message (or SIZE_MAX: the loss markers) that did not
 * fit; a refusal naming a message is logged unless dry_run. */
int ops_compact_messages(const ops_scope *s, const ops_messages_request *req,
                         ops_messages_result *out, compactd_error *err);

/* Its two halves, as ops_compact_plan() and ops_compact_finish(). */
int ops_compact_messages_plan(const ops_scope *s, const ops_messages_request *req,
                              ops_messages_result *out, compactd_error *err);
int ops_compact_messages_finish(const ops_scope *s, const ops_messages_request *req,
                                ops_messages_result *out, compactd_error *err);

/* ---- Verify ---- */

struct ops_verify_request {
    const char *context; /* what the model sees, borrowed */
    size_t context_len;
    compaction_request *set; /* the protected units, borrowed; priced in place */
    int has_budget;          /* plan a repair within budget - context_tokens */
    int64_t budget;
    int64_t context_tokens;
    int dry_run;
    /* 0 when every spill of the repair in r can be given back by the
     * fronts, else -1 with err set: checked before anything is written.
     * NULL: not checked. */
    int (*repair_returnable)(const verify_result *r, compactd_error *err);
};

typedef struct {
    verify_result r; /* release with verify_result_free() either way */
    call_outcome outcome;
    /* On CompactionFailure (the repair cannot fit): the budget the repair
     * needs and the unit that could not be restored (borrowed from r). */
    int64_t required_budget;
    const plan_unit *failed;
} ops_verify_result;

/* The truncation audit (verify_run()) and its repair, committed with its
 * log entry when units are missing (verify_commit()). The repair's refusal
 * is CompactionFailure with the message to answer, logged unless dry_run. */
int ops_verify(const ops_scope *s, const ops_verify_request *req, ops_verify_result *out,
               compactd_error *err);

/* ---- Count tokens ---- */

typedef struct {
    const tokenizer *tokenizer; /* resolved by the decoder, never NULL */
    const char *const *texts;   /* n texts, borrowed */
    const size_t *lens;
    size_t n;
} ops_tokens_request;

typedef struct {
    const tokenizer *tokenizer; /* the one that counted */
    int64_t *counts;            /* n counts; owned, freed by ops_tokens_result_free() */
    size_t n;
} ops_tokens_result;

int ops_count_tokens(const ops_tokens_request *req, ops_tokens_result *out, compactd_error *err);
void ops_tokens_result_free(ops_tokens_result *r);

/* ---- Spills ---- */

/* A spill named by its key and, optionally, a digest or a prefix of one. */
typedef struct {
    const char *key; /* borrowed; no NUL inside */
    size_t key_len;
    const char *sha256; /* a digest or its start (sha256_prefix_valid()); NULL: the newest */
} ops_spill_ref;

typedef struct {
    store_record spill;   /* on success */
    spill_candidates amb; /* on Ambiguous: the full digests */
    call_outcome outcome;
} ops_spill_result;

/* Releases what either holds (after success or failure alike). */
void ops_spill_result_free(ops_spill_result *r);

/* Reads a spill back. Fails with NotFound (no such key, or no version
 * with that digest), Ambiguous (the prefix matches several: out->amb),
 * InvalidRequest (a malformed digest) or StoreUnavailable. */
int ops_spill_read(const ops_scope *s, const ops_spill_ref *ref, ops_spill_result *out,
                   compactd_error *err);

/* Checks a spill read back before its re-acquisition is logged (the page
 * a call asks for): 0, or -1 with err set. */
typedef int (*ops_spill_check_fn)(void *ctx, const store_record *spill, compactd_error *err);

/* Reads a spill back for a model that met its pointer: as ops_spill_read()
 * with a digest prefix, then check (when not NULL) on what was read, and
 * the re-acquisition is logged (via names the front) only when it passes:
 * a call refused changes nothing. */
int ops_reacquire(const ops_scope *s, const ops_spill_ref *ref, const char *via,
                  ops_spill_check_fn check, void *check_ctx, ops_spill_result *out,
                  compactd_error *err);

typedef struct {
    store_record *spills; /* n records without texts; owned: ops_spill_list_result_free() */
    size_t n;
    call_outcome outcome;
} ops_spill_list_result;

/* The session's spills, oldest first. Fails with StoreUnavailable. */
int ops_spill_list(const ops_scope *s, ops_spill_list_result *out, compactd_error *err);
void ops_spill_list_result_free(ops_spill_list_result *r);

/* Removes everything stored for the session. Fails with StoreUnavailable;
 * *outcome as for the others. */
int ops_session_delete(const ops_scope *s, call_outcome *outcome, compactd_error *err);

/* ---- Decision log ---- */

typedef struct {
    const char *after; /* a well-formed stream id (the front checks), or NULL: from the start */
    size_t limit;      /* at least 1 */
    size_t max_bytes;  /* a page's entries (ids and data) hold at most this, but always one */
} ops_events_request;

typedef struct {
    store_event *events; /* owned: ops_events_result_free() */
    size_t n;            /* entries of this page (at most limit and max_bytes) */
    size_t n_read;       /* entries read: more than n when more */
    int more;            /* another page follows */
    call_outcome outcome;
} ops_events_result;

/* A page of the decision log, oldest first. Fails with StoreUnavailable. */
int ops_read_events(const ops_scope *s, const ops_events_request *req, ops_events_result *out,
                    compactd_error *err);
void ops_events_result_free(ops_events_result *r);

/* ---- Decision log ---- */

/* How many decision-log entries the operations could not write since the
 * process started (a compaction answered without its entry, a refusal's,
 * a read's, an audit's): the metrics' count. */
uint64_t ops_log_lost_count(void);

#endif
