/* The compaction planner: decides, under a hard token budget, which context
 * units stay verbatim, which shrink to a summary, which are externalized
 * behind a pointer and which are dropped. Pure: no I/O, no allocation
 * beyond its own result, no knowledge of HTTP, JSON or Redis. */
#ifndef COMPACTD_PLAN_H
#define COMPACTD_PLAN_H

#include "shared_defs.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { UNIT_PROTECTED = 0, UNIT_DERIVABLE, UNIT_REDUNDANT } unit_class;
#define UNIT_CLASSES 3

typedef enum { PLAN_STRICT = 0, PLAN_DISCOVERY } plan_mode;

/* DECISION_UNSET is 0 so that an entry the planner forgot reads as no
 * decision at all (plan_run asserts that none is left), never as "preserved
 * at no cost". Arrays indexed by decision have PLAN_DECISIONS slots; the
 * decisions proper run from PLAN_DECISION_FIRST to PLAN_DECISIONS - 1. */
typedef enum {
    DECISION_UNSET = 0,
    DECISION_PRESERVED,
    DECISION_SUMMARIZED,
    DECISION_EXTERNALIZED,
    DECISION_DROPPED
} plan_decision;
#define PLAN_DECISIONS 5
#define PLAN_DECISION_FIRST DECISION_PRESERVED

/* UNIT_KEY_MAX_BYTES (shared_defs.h), the longest unit key in bytes, sizes
 * every buffer that holds a key or a pointer (see pointer.h); the key limit
 * of the configuration is at most this. */

typedef enum { DROP_NONE = 0, DROP_REDUNDANT, DROP_OVER_BUDGET } plan_drop_reason;

/* One context unit as the planner sees it. Strings are borrowed from the
 * caller and never copied; lengths are in bytes and strings need not be
 * NUL-terminated. */
typedef struct {
    const char *key;
    size_t key_len;
    unit_class cls;
    int64_t tokens;
    int has_text; /* a derivable unit can be externalized only with text */
    const char *text;
    size_t text_len;
    /* Derivable only. */
    int64_t priority;
    const char *group; /* NULL when the unit is in no group */
    size_t group_len;
    int has_summary;
    int64_t summary_tokens;
    /* What the unit's pointer would cost, filled by the pricing step
     * (pricing.h); meaningless for a unit that cannot be externalized. */
    int64_t pointer_tokens;
} plan_unit;

typedef struct {
    plan_decision decision;
    plan_drop_reason reason; /* DROP_NONE unless decision is DECISION_DROPPED */
    int64_t cost;            /* tokens this unit takes in the plan */
    /* For a derivable unit dropped over budget: the tokens that were left
     * when its item (the unit, or its whole group) was placed, so the most
     * its summarized form could have taken and been kept. 0 otherwise. */
    int64_t room;
} plan_entry;

typedef struct {
    plan_entry *entries; /* one per unit, in request order */
    size_t n;
    int64_t budget;
    int64_t used_tokens;
    int64_t required_budget; /* least budget at which the request succeeds */
    int64_t verbatim_budget; /* budget that keeps every protected unit verbatim */
    size_t n_externalized;
    /* Set when plan_run returns PLAN_FAILED: the protected unit that could
     * not fit even in its cheapest form; SIZE_MAX when the budget was below
     * 0 and no protected unit was over it. */
    size_t failed_index;
} plan_result;

#define PLAN_OK 0
#define PLAN_FAILED 1
#define PLAN_NOMEM (-1)

/* Plans units[0..n) under budget. Returns PLAN_OK with every entry set,
 * PLAN_FAILED when even the cheapest form of the protected units exceeds the
 * budget (then failed_index, required_budget and verbatim_budget are set and
 * entries are meaningless), or PLAN_NOMEM. On any return the caller releases
 * the result with plan_result_free(). Token counts must be >= 0 and their
 * sums must fit in int64_t (callers bound them at 2^31-1 per unit). */
int plan_run(const plan_unit *units, size_t n, int64_t budget, plan_mode mode, plan_result *out);

void plan_result_free(plan_result *r);

/* The group rule: raises every unit of a group to the strongest class in
 * it (protected > derivable > redundant), so that a tool call is never
 * separated from a result that must stay and a kept call never loses its
 * result. Run before pricing and planning. A unit raised to protected
 * without text is kept verbatim (it cannot be externalized). Returns 0, or
 * -1 when out of memory (units unchanged). */
int plan_apply_groups(plan_unit *units, size_t n);

const char *plan_decision_name(plan_decision d);
const char *plan_reason_name(plan_drop_reason r);
const char *unit_class_name(unit_class c);

#endif
