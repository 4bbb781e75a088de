/* The least plan of a chat history where every loss marker is priced
 * exactly from counts of its parts: the header, a count per entry of its
 * lists and the digits of the messages it names, all counted once, so that
 * the shortest path over the kept messages weighs every run of dropped
 * messages with the exact price of its marker in O(1), and finds its least
 * plan in O(n log n) (and O(n) more for each turn that ends in one of
 * compactd's markers, which a new marker may take in). See least_budget.h for
 * the search it serves. */
#ifndef COMPACTD_LEAST_BUDGET_PARTS_H
#define COMPACTD_LEAST_BUDGET_PARTS_H

#include "least_budget.h"

/* Where cnt counts by parts (chat_counter's by_parts), no two messages'
 * list entries share a text, and the turns that end in one of compactd's
 * markers are few enough to price one at a time (least_budget_parts.c's
 * TAIL_WORK_MAX): sets
 * drop[k] for each of the nitems items that the least plan drops, *tokens
 * to its total (messages and markers, as chat_markers_build() prices them),
 * and returns 1. Elsewhere returns 0 and leaves drop as it was; -1 when out
 * of memory. base and items are chat_least_plan()'s. */
int chat_least_exact(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                     const plan_result *base, const chat_item *items, size_t nitems,
                     unsigned char *drop, int64_t *tokens);

#endif
