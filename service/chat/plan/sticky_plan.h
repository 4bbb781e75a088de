/* Sticky plans: a compaction that starts from the session's last plan
 * (chat_prior). When the history is the planned one plus new messages, the
 * old messages keep their decisions, so that they and their loss markers
 * render byte for byte as they did and a provider's prompt cache serves
 * them again; the new ones are kept (redundant ones go, as always). Shared
 * by the chat planner; pure. */
#ifndef COMPACTD_STICKY_PLAN_H
#define COMPACTD_STICKY_PLAN_H

#include "chat_plan.h"

/* How close to the budget the protected messages may raise the low-water
 * mark, in percent of the budget: the rest is room for the turns after a
 * recompaction. */
#define STICKY_MARK_SLACK_PERCENT 5

/* How far above the low-water mark a recompaction may land, in percent of
 * the budget, to keep the prefix of the last answer: the markers it sent
 * stay as they were (they may cost more than a fresh plan's) and what it
 * kept stays (a derivable message kept since the start goes only when the
 * room is needed). A recompaction that rewrites the whole context to land
 * a little lower costs more than the turns it buys back. */
#define STICKY_LAND_SLACK_PERCENT 25

/* Whether req's history is prior's plus new messages (every message prior
 * planned still there, the same bytes in the same place) under the same
 * budget. */
int chat_sticky_extends(const chat_plan *p, size_t n, const chat_prior *prior);

/* Whether prior externalized message i: its pointer must be priced, as the
 * extended plan keeps it behind it. */
int chat_sticky_externalized(const chat_prior *prior, size_t i);

/* Plans req with prior's decisions for the messages it planned and every
 * later message kept (prior NULL: every message kept). Returns 1 with the
 * plan and its markers in r, mk and nmk (the caller owns them) when they
 * fit room and every old message and marker stays as it was; 0 when not;
 * -1 when out of memory. run_start (req->n entries) receives the run
 * boundaries its markers keep (chat_markers_build_runs()). */
int chat_sticky_plan(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                     const chat_prior *prior, int64_t room, plan_result *r, chat_marker **mk,
                     size_t *nmk, unsigned char *run_start);

/* Plans req within room keeping prior's decisions for the longest prefix of
 * its messages that lets the rest, planned anew, fit while keeping as many
 * tokens of the rest's protected messages in full as fresh (the plan made
 * without prior, within the same room) does: a recompaction that leaves
 * the provider's cache as much of the last request as it can. The markers
 * the prefix keeps as they were sent may cost more than a fresh plan's, so
 * the plan may pass room by up to slack (what it passes by is the caller's
 * to report). Returns 1 with the plan and its markers in r, mk and nmk (the
 * caller owns them), 0 when no prefix can stay, -1 when out of memory;
 * run_start as for chat_sticky_plan(), all 0 when no prefix stays; *kept
 * the prefix's length. A marker sent stays as it was: where the prefix
 * ends after a run of dropped messages, messages dropped after it get a
 * marker of their own. The rest keeps its newest derivable messages only:
 * none is kept where a newer one after the prefix went. */
int chat_sticky_recompact(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                          const chat_prior *prior, int64_t room, int64_t slack,
                          const plan_entry *fresh, plan_result *r, chat_marker **mk, size_t *nmk,
                          unsigned char *run_start, size_t *kept);

/* The prior a successful plan leaves for the session's next compaction
 * (release it with chat_prior_free()). Returns 0, or -1 when out of
 * memory. */
int chat_prior_from_plan(const chat_plan *p, chat_prior *out);
void chat_prior_free(chat_prior *pr);

#endif
