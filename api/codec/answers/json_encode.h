/* Response and log documents. Every function returns a new NUL-terminated
 * buffer the caller frees with free() and its length in *len, or NULL when
 * out of memory. */
#ifndef COMPACTD_JSON_ENCODE_H
#define COMPACTD_JSON_ENCODE_H

#include "chat.h"
#include "compaction.h"
#include "error.h"
#include "error_status.h"
#include "json_decode.h"
#include "json_writer.h"
#include "outcome.h"
#include "session.h"
#include "spill_page.h"
#include "verify.h"

char *json_encode_error(const compactd_error *err, size_t *len);

/* The 422 body: names the protected unit u that could not fit. */
char *json_encode_compaction_failure(const compactd_error *err, int64_t budget,
                                     int64_t required_budget, const plan_unit *u, size_t *len);

/* The 409 body of a digest prefix that names several versions of a key:
 * lists their full digests. */
char *json_encode_ambiguous(const compactd_error *err, const spill_candidates *amb, size_t *len);

/* The 200 body of a compaction. */
char *json_encode_plan(const char *session, const compact_input *in, const compaction *c,
                       size_t *len);

/* The decision-log entry of a compaction, or of a refused one when
 * failed is set (then c->plan names the unit that did not fit). */
char *json_encode_compaction_event(const compact_input *in, const compaction *c, int failed,
                                   size_t *len);

/* What a chat compaction's entry adds: unit i is message i, and the
 * history's system prompt and loss markers take tokens besides the units.
 * format is the codec's name ("openai", "anthropic"); borrowed. */
typedef struct {
    const char *format;
    int64_t system_tokens;
    int64_t marker_tokens;
    size_t marker_count;
    int64_t tools_tokens; /* the tool definitions sent with the call */
    /* Of each message: what it was read as (only its role is logged, never
     * a text) and the re-acquire hint its drop carries (chat_classify.h). */
    const chat_message *m;
    const chat_str *hints;
    /* Of each message, its class and decision as the answer reports them
     * (chat_plan_reported()), where they are not its unit's; NULL when
     * every message's are. */
    const unit_class *shown_cls;
    const plan_entry *shown;
    /* A refusal's: the kind that fills most of the required budget
     * (required_budget.h), NULL when none. */
    const char *cause;
    int64_t cause_tokens;
    const char *plan; /* chat_plan_kind_name()'s: how the plan came to be */
} chat_event_facts;

/* The decision-log entry of a chat compaction (as above, with chat's facts). */
char *json_encode_chat_compaction_event(const compact_input *in, const compaction *c, int failed,
                                        const chat_event_facts *chat, size_t *len);

/* The 200 body of a verify, and its decision-log entry (outcome
 * OUTCOME_SILENT_TRUNCATION, OUTCOME_REPAIRED or OUTCOME_FAILURE). */
char *json_encode_verify(const verify_input *in, const verify_result *r, size_t *len);
char *json_encode_verify_event(const verify_input *in, const verify_result *r, call_outcome outcome,
                               size_t *len);

/* {"tokenizer", "counts", "total"}: counts[0..n) of the texts of a token
 * count request, under t. */
char *json_encode_tokens(const tokenizer *t, const int64_t *counts, size_t n, size_t *len);

/* ---- Spills ---- */

/* Room a request that re-acquires a spill takes itself, its body and its
 * parse tree (a tools/call of reacquire is a few hundred bytes). */
#define REACQUIRE_REQUEST_ROOM (16u << 10)

/* The most bytes the answer that gives a spill of key and text back takes
 * on any front (GET .../spills/{key}, /reacquire, the reacquire tool of
 * /mcp and of /v1/sessions/{session}/mcp, the last the largest): what each
 * of them reserves before it writes the answer, and what a compaction
 * checks before it spills the text. */
size_t spill_answer_bytes(const char *key, size_t key_len, const char *text, size_t text_len);

/* Whether that answer, beside the request that asks for it, fits in limit
 * (what one request may hold: answer_limit()), by the rule an answer is
 * refused by; *bytes is the answer's size when it does not fit (0 when
 * its bound already fits and it was not counted). A spill that does not fit is
 * refused before anything is written, so that whatever was spilled can be
 * given back on every front. */
int spill_answer_fits(size_t limit, const char *key, size_t key_len, const char *text,
                      size_t text_len, size_t *bytes);

/* The spill record r as an object: key, class, sha256, tokens, the text
 * when with_text, the page's members when page is not NULL (r's text is
 * then the page's, spill_page_record()), created_at and the metadata it
 * has. */
void json_write_spill(jw *w, const store_record *r, const spill_page *page, int with_text);

/* The 200 body of a spill read back: json_write_spill() with its text. */
char *json_encode_spill(const store_record *r, const spill_page *page, size_t *len);
char *json_encode_spill_list(const char *session, const store_record *r, size_t n, size_t *len);

/* A page of the decision log: each entry is the object stored by a
 * json_encode_*_event() function with its stream id put in front. */
char *json_encode_events(const store_event *e, size_t n, int more, size_t *len);

/* Writes the path of one spill version: /v1/sessions/S/spills/KEY?sha256=H
 * with the key percent-encoded. Returns a new string. */
char *spill_href(const char *session, const char *key, size_t key_len, const char *sha256);

#endif
