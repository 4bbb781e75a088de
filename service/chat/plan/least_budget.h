/* The least plan of a chat history: the cheapest set of derivable items to
 * drop once the loss markers are priced as the plan would place them (a run
 * of dropped messages shares one marker), which makes required_budget the
 * smallest budget at which a plan exists rather than a sum of worst cases;
 * where the search prices markers by estimate (least_budget.c), the plan it
 * finds exists at its exact price but may not be the least. */
#ifndef COMPACTD_LEAST_BUDGET_H
#define COMPACTD_LEAST_BUDGET_H

#include "chat_plan.h"

/* A derivable message alone, or a derivable tool exchange: placed or
 * dropped whole, messages [first, last]. */
typedef struct {
    size_t first, last;
    plan_decision how; /* its cheapest form, a drop priced as a marker of its own */
    int64_t cheapest;
    plan_decision keep_how; /* its cheapest form that keeps it */
    int64_t keep_cost;
} chat_item;

/* Sets used_tokens and n_externalized of r from its entries. */
void chat_plan_recount(plan_result *r);

/* Puts every item of items in one form: dropped where drop[k] is set, else
 * its cheapest kept form; with drop NULL, its `how`. Recounts r. */
void chat_items_apply(const plan_unit *u, const chat_item *items, size_t nitems,
                      const unsigned char *drop, plan_result *r);

/* The least plan: base has every protected message in its cheapest form;
 * out receives a copy of it with each item kept or dropped as the search
 * finds cheapest, and *mk, *nmk its markers, *tokens its total (messages and
 * markers). Returns 0, or -1 when out of memory (nothing to release). */
int chat_least_plan(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                    const plan_result *base, const chat_item *items, size_t nitems,
                    plan_result *out, chat_marker **mk, size_t *nmk, int64_t *tokens);

#endif
