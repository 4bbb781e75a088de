/* The JSON document an operation's outcome is answered with, the same
 * whichever front asked: REST sends it as the response body under its
 * status, MCP as the tool's result (a failure's as the tool error's). And
 * what an outcome adds to the request's facts. */
#ifndef COMPACTD_ANSWERS_H
#define COMPACTD_ANSWERS_H

#include "api_call.h"
#include "chat_codec.h"
#include "json_decode.h"
#include "ops.h"
#include "spill_page.h"

typedef struct {
    int status; /* the HTTP status the document goes with */
    char *body; /* owned, freed with free(); NULL only when out of memory */
    size_t len;
    compactd_error err; /* as the body reports it; kind ERR_NONE on success */
} answer;

/* Answers the request with a (what a handler does with it); takes its
 * body. */
void respond_answer(api_response *res, answer *a);

/* The scope an operation runs in for a request routed to a session. Its
 * pointers are borrowed from req. */
ops_scope api_scope(const api_request *req);

/* Each fills a; err is the operation's error, or NULL when it succeeded. */
void answer_error(answer *a, const compactd_error *err);
/* page: the page of the spill's text the answer gives (spill_page_cut()). */
void answer_spill(answer *a, const ops_spill_result *r, const spill_page *page,
                  const compactd_error *err);
void answer_spill_list(answer *a, const char *session, const ops_spill_list_result *r,
                       const compactd_error *err);

/* ---- Decoded request to answer ---- */

/* Each runs its operation on a decoded request (which stays the caller's)
 * in scope s, adds its outcome and units to f, and fills a with the
 * answer. */
void run_compact(const ops_scope *s, compact_input *in, request_facts *f, answer *a);
/* in borrows the body it was decoded from, which must still be there. */
void run_compact_messages(const ops_scope *s, const chat_input *in, request_facts *f, answer *a);

/* The same in two halves, for a front that plans where Redis is never
 * waited on: the operation's plan half (ops_compact_plan()) is run by the
 * caller (for messages, by run_compact_messages_plan()), which hands its
 * result r, return code rc and err to the finish, where the rest may wait
 * on Redis. The finish releases r. */
void run_compact_finish(const ops_scope *s, compact_input *in, ops_compact_result *r, int rc,
                        compactd_error *err, request_facts *f, answer *a);
int run_compact_messages_plan(const ops_scope *s, const chat_input *in, ops_messages_result *r,
                              compactd_error *err);
void run_compact_messages_finish(const ops_scope *s, const chat_input *in, ops_messages_result *r,
                                 int rc, compactd_error *err, request_facts *f, answer *a);
/* extra (a JSON object compactd wrote, or NULL) is added to the members of
 * an answer that has a repair. */
void run_verify(const ops_scope *s, verify_input *in, const char *extra, size_t extra_len,
                request_facts *f, answer *a);

#endif
