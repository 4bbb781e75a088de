/* A chat history compacted: classification, pricing, the planner, and the
 * loss markers that stand for each run of dropped messages, iterated until
 * messages and markers together fit the budget. Pure apart from the token
 * cache: writes nothing (compaction_commit() writes the spills). */
#ifndef COMPACTD_CHAT_PLAN_H
#define COMPACTD_CHAT_PLAN_H

#include "chat.h"
#include "chat_classify.h"
#include "chat_keys.h"
#include "compaction.h"
#include "error.h"

typedef enum { MARKER_STANDALONE = 0, MARKER_APPEND } chat_marker_place;

/* A loss marker: a short text saying which messages were dropped and how to
 * re-acquire them. Standalone, it is a message of its own placed before
 * message `at` (at == n: after the last); appended, it is a text block added
 * at the end of message `at`'s content (Anthropic, where a message of its own
 * would break the alternation of turns). Priced as standalone either way. */
typedef struct {
    size_t first, last; /* the run of dropped messages */
    chat_marker_place place;
    size_t at;
    chat_role role; /* of a standalone marker */
    /* Appended to a message that already ends in a marker compactd wrote:
     * this one takes its lists and takes its place, so markers never stack. */
    int absorbs_tail;
    char *text; /* owned */
    size_t len;
    int64_t tokens;
} chat_marker;

/* How a plan came to be, given the session's last one (chat_prior):
 * extended, its decisions kept and the new messages appended; recompacted,
 * the history extends it but that did not fit, so it was planned again
 * down to the low-water mark; fresh, there was none or the history is not
 * it plus new messages. */
typedef enum { CHAT_PLAN_FRESH = 0, CHAT_PLAN_EXTENDED, CHAT_PLAN_RECOMPACTED } chat_plan_kind;

const char *chat_plan_kind_name(chat_plan_kind k);

/* Every message's key (chat_keys.h) and digest, its pointer, and the plan. */

typedef struct {
    chat_classes classes;
    /* The format-neutral request the messages became: one unit per message
     * (text: its JSON; key: chat_keys_assign()'s), what compaction_commit() writes. */
    compaction_request req;
    plan_unit *units;                   /* req.units */
    char (*sha256)[SHA256_HEX_LEN + 1]; /* req.sha256: digest of each message's JSON */
    char (*keys)[CHAT_KEY_MAX];
    /* Each message's identity for sticky plans: the first 64 bits of the
     * digest of its JSON as the request sent it (chat_message.sent where
     * the JSON was rewritten), so that a message read differently once its
     * turn is finished is still the one the last plan knew. */
    uint64_t *ident;
    compaction c; /* c.plan: one entry per message */
    chat_marker *markers;
    size_t n_markers;
    /* Where a run of dropped messages ends before a message that is dropped
     * too (chat_markers_build_runs()): set only by a sticky plan, whose
     * markers stand for their runs as they were sent. */
    unsigned char *run_start;
    /* Of the first result of narration's calls (classes.calls_with): what
     * those calls add to the narration while the results are kept, counted
     * with the results' unit so that the planner prices a drop of them as
     * the narration's calls going too. 0 for every other message. */
    int64_t *calls_share;
    /* Of each message that adds onto a first result so (narration, and the
     * reasoning that goes with the calls it led to): what it adds. */
    int64_t *share_of;
    int64_t system_tokens;
    int64_t tools_tokens;   /* the tool definitions and the provider's framing of them */
    int64_t reserve_tokens; /* the request's room for the reply, never used */
    int64_t used_tokens;    /* system, tools, messages and markers */
    int64_t required_budget;
    chat_plan_kind kind;
    /* The mark a history that did not fit whole was planned down to
     * (compact_to, raised to the required budget and to what keeps the
     * turn just sent in full), or 0 when it was not planned down. */
    int64_t low_water;
    /* How many leading messages a recompaction kept as the last plan had
     * them (0 when it kept none, or was no recompaction). */
    size_t kept_prefix;
    /* On CompactionFailure: the protected message that could not fit, or
     * SIZE_MAX when the loss markers themselves are what does not fit. */
    size_t failed_index;
} chat_plan;

/* Plans req under its budget. Returns 0; or -1 with err set: CompactionFailure
 * (required_budget and failed_index set), Internal when out of memory. Either
 * way release out with chat_plan_free(). */
int chat_plan_run(const chat_request *req, const chat_counter *cnt, chat_plan *out,
                  compactd_error *err);
void chat_plan_free(chat_plan *p);

/* Whether message i is rendered without its calls: narration whose
 * results the plan drops (chat_classes.calls_with). */
int chat_plan_calls_dropped(const chat_plan *p, size_t i);

/* Message i's class and decision as an answer and the decision log report
 * them: its unit's, but for reasoning that goes with the calls it led to
 * (chat_leads_calls()), which takes their class, and their decision where
 * they were dropped. */
void chat_plan_reported(const chat_request *req, const chat_plan *p, size_t i, unit_class *cls,
                        plan_entry *e);

/* Message i's tokens, in full and in the plan, as an answer reports them:
 * narration's calls counted with it rather than with their results. */
void chat_plan_message_tokens(const chat_plan *p, size_t i, int64_t *tokens, int64_t *used);

/* Writes the pointer of message i into out (room for CHAT_KEY_MAX +
 * POINTER_OVERHEAD + 1 bytes); returns its length. */
size_t chat_pointer(const chat_plan *p, size_t i, char *out);

#endif
