/* Loss markers: the text that stands for each run of dropped messages, where
 * it goes so that the provider's turn rules still hold, and what it costs.
 * Shared by the chat planner and its search for the least plan. */
#ifndef COMPACTD_LOSS_MARKERS_H
#define COMPACTD_LOSS_MARKERS_H

#include "chat_plan.h"

void chat_markers_free(chat_marker *mk, size_t n);

/* The marker text for messages [first, last]: which went, why (lost: some
 * were dropped over budget), and the hints of those dropped over budget by
 * e (each exchange's once). With e NULL, every hint of the run, under the
 * longest header any run could have. Returns malloc'd text with *len, or
 * NULL when out of memory. */
char *chat_marker_text(const chat_plan *p, const plan_entry *e, size_t first, size_t last,
                       size_t absorb, int lost, size_t *len);

/* A marker compactd wrote, fed back and kept, beside messages dropped now
 * goes with them (its lists join the new run's marker, so markers never
 * stack): marks it dropped in e. Returns whether a decision changed. */
int chat_markers_merge_own(const chat_plan *p, size_t n, plan_entry *e);

/* Whether a run [first, last] needs a marker and where it goes. at_start:
 * nothing is kept before the run; prev: the role of what comes before it. */
typedef struct {
    int need;
    chat_marker_place place;
    size_t at;
    chat_role role;
} chat_placement;

chat_placement chat_marker_place_run(const chat_request *req, size_t first, size_t last, int lost,
                                     int at_start, chat_role prev);

/* Builds the markers for the decisions in e. Returns 0 with *tokens their
 * total, or -1 when out of memory. */
int chat_markers_build(const chat_request *req, const chat_plan *p, const plan_entry *e,
                       const chat_counter *cnt, chat_marker **out, size_t *nout, int64_t *tokens);

/* The same, a run of dropped messages ending before each message i whose
 * run_start[i] is set (n entries, or NULL: runs end only at a kept
 * message): a marker once sent stands for its run as it was, and messages
 * dropped after it get a marker of their own (sticky plans). */
int chat_markers_build_runs(const chat_request *req, const chat_plan *p, const plan_entry *e,
                            const unsigned char *run_start, const chat_counter *cnt,
                            chat_marker **out, size_t *nout, int64_t *tokens);

/* Whether every marker appended to a message is appended to one that is
 * kept (a run boundary can leave one beside a dropped message). */
int chat_markers_attached(const chat_marker *mk, size_t n, const plan_entry *e);

#endif
