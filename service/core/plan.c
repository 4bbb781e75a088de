/* The compaction planner: protected units first, derivable units fill what
 * is left, redundant units go. See plan.h for the contract. */
#include "plan.h"

#include "bytemap.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *plan_decision_name(plan_decision d)
{
    switch (d) {
    case DECISION_UNSET:
        break;
    case DECISION_PRESERVED:
        return "preserved";
    case DECISION_SUMMARIZED:
        return "summarized";
    case DECISION_EXTERNALIZED:
        return "externalized";
    case DECISION_DROPPED:
        return "dropped";
    }
    return "unknown";
}

const char *plan_reason_name(plan_drop_reason r)
{
    switch (r) {
    case DROP_REDUNDANT:
        return "redundant";
    case DROP_OVER_BUDGET:
        return "over_budget";
    case DROP_NONE:
        break;
    }
    return "none";
}

const char *unit_class_name(unit_class c)
{
    switch (c) {
    case UNIT_PROTECTED:
        return "protected";
    case UNIT_DERIVABLE:
        return "derivable";
    case UNIT_REDUNDANT:
        return "redundant";
    }
    return "unknown";
}

static void set_entry(plan_entry *e, plan_decision d, plan_drop_reason r, int64_t cost)
{
    e->decision = d;
    e->reason = r;
    e->cost = cost;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- Protected placement ---- */

typedef struct {
    int64_t saving;
    size_t index;
} saving_t;

static int by_saving_desc(const void *pa, const void *pb)
{
    const saving_t *a = pa, *b = pb;
    if (a->saving != b->saving)
        return a->saving > b->saving ? -1 : 1;
    return a->index < b->index ? -1 : (a->index > b->index);
}

/* Keeps every protected unit verbatim if they fit; otherwise externalizes
 * the fewest units, largest saving first (earliest on ties). Returns the
 * tokens the protected set takes, or -1 when out of memory. The caller has
 * already checked that the cheapest forms fit. */
static int64_t place_protected(const plan_unit *u, size_t n, int64_t budget, plan_result *r)
{
    int64_t cost = r->verbatim_budget;
    size_t ncand = 0;

    for (size_t i = 0; i < n; i++)
        if (u[i].cls == UNIT_PROTECTED)
            set_entry(&r->entries[i], DECISION_PRESERVED, DROP_NONE, u[i].tokens);
    if (cost <= budget)
        return cost;

    saving_t *cand = malloc((n ? n : 1) * sizeof(*cand));
    if (!cand)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (u[i].cls == UNIT_PROTECTED && u[i].has_text && u[i].pointer_tokens < u[i].tokens)
            cand[ncand++] = (saving_t){u[i].tokens - u[i].pointer_tokens, i};
    qsort(cand, ncand, sizeof(*cand), by_saving_desc);

    for (size_t k = 0; k < ncand && cost > budget; k++) {
        size_t i = cand[k].index;
        set_entry(&r->entries[i], DECISION_EXTERNALIZED, DROP_NONE, u[i].pointer_tokens);
        cost -= cand[k].saving;
        r->n_externalized++;
    }
    free(cand);
    return cost;
}

/* ---- Derivable fill ---- */

/* A derivable unit alone, or every unit of one group: placed or dropped
 * whole. Members are chained through next[] in request order. */
typedef struct {
    int64_t priority; /* best member's */
    size_t position;  /* latest member's */
    size_t first;
    size_t last;
} item_t;

static int by_rank(const void *pa, const void *pb)
{
    const item_t *a = pa, *b = pb;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return a->position > b->position ? -1 : (a->position < b->position);
}

typedef struct {
    int64_t full, summarized, externalized;
    int any_summary, all_text;
} item_costs;

/* In an item's externalized form, a member whose pointer would cost at
 * least as much as the member itself stays verbatim: as for protected
 * units, a pointer never replaces what it cannot make smaller. */
static int externalizes(const plan_unit *u)
{
    return u->pointer_tokens < u->tokens;
}

static item_costs cost_item(const plan_unit *u, const size_t *next, const item_t *it)
{
    item_costs c = {0, 0, 0, 0, 1};
    for (size_t i = it->first; i != SIZE_MAX; i = next[i]) {
        c.full += u[i].tokens;
        c.summarized += u[i].has_summary ? u[i].summary_tokens : u[i].tokens;
        c.externalized += externalizes(&u[i]) ? u[i].pointer_tokens : u[i].tokens;
        c.any_summary |= u[i].has_summary;
        c.all_text &= u[i].has_text;
    }
    return c;
}

static void decide_item(const plan_unit *u, const size_t *next, const item_t *it, plan_decision how,
                        int64_t left, plan_result *r)
{
    for (size_t i = it->first; i != SIZE_MAX; i = next[i]) {
        plan_entry *e = &r->entries[i];
        switch (how) {
        case DECISION_PRESERVED:
            set_entry(e, DECISION_PRESERVED, DROP_NONE, u[i].tokens);
            break;
        case DECISION_SUMMARIZED:
            if (u[i].has_summary)
                set_entry(e, DECISION_SUMMARIZED, DROP_NONE, u[i].summary_tokens);
            else
                set_entry(e, DECISION_PRESERVED, DROP_NONE, u[i].tokens);
            break;
        case DECISION_EXTERNALIZED:
            if (externalizes(&u[i])) {
                set_entry(e, DECISION_EXTERNALIZED, DROP_NONE, u[i].pointer_tokens);
                r->n_externalized++;
            } else {
                set_entry(e, DECISION_PRESERVED, DROP_NONE, u[i].tokens);
            }
            break;
        case DECISION_DROPPED:
        case DECISION_UNSET:
            assert(how == DECISION_DROPPED);
            set_entry(e, DECISION_DROPPED, DROP_OVER_BUDGET, 0);
            e->room = left;
            break;
        }
    }
}

/* Chooses the form of one item under what is left: whole, else its cheaper
 * fallbacks in the mode's order, else dropped. Returns the tokens taken. */
static int64_t place_item(const plan_unit *u, const size_t *next, const item_t *it, int64_t left,
                          plan_mode mode, plan_result *r)
{
    item_costs c = cost_item(u, next, it);
    plan_decision how = DECISION_DROPPED;
    int64_t taken = 0;

    if (c.full <= left) {
        how = DECISION_PRESERVED;
        taken = c.full;
    } else if (mode == PLAN_DISCOVERY && c.all_text && c.externalized <= left) {
        how = DECISION_EXTERNALIZED;
        taken = c.externalized;
    } else if (c.any_summary && c.summarized <= left) {
        how = DECISION_SUMMARIZED;
        taken = c.summarized;
    }
    decide_item(u, next, it, how, left, r);
    return taken;
}

/* Builds the items, ranks them and fills. Returns 0, or -1 when out of
 * memory. The fill goes on past an item that did not fit, so no dropped
 * item would have fitted in what was finally left. */
static int fill_derivable(const plan_unit *u, size_t n, int64_t left, plan_mode mode,
                          plan_result *r)
{
    size_t nder = 0, nitems = 0;
    for (size_t i = 0; i < n; i++)
        nder += u[i].cls == UNIT_DERIVABLE;
    if (nder == 0)
        return 0;

    item_t *items = malloc(nder * sizeof(*items));
    size_t *next = malloc(n * sizeof(*next));
    bytemap groups = {0};
    if (!items || !next || bytemap_init(&groups, nder) != 0) {
        free(items);
        free(next);
        return -1;
    }

    for (size_t i = 0; i < n; i++) {
        if (u[i].cls != UNIT_DERIVABLE)
            continue;
        next[i] = SIZE_MAX;
        size_t *found = NULL;
        if (u[i].group)
            found = bytemap_put_new(&groups, u[i].group, u[i].group_len, nitems);
        if (found) {
            item_t *it = &items[*found];
            next[it->last] = i;
            it->last = i;
            it->position = i;
            if (u[i].priority > it->priority)
                it->priority = u[i].priority;
        } else {
            items[nitems++] = (item_t){u[i].priority, i, i, i};
        }
    }
    bytemap_free(&groups);

    qsort(items, nitems, sizeof(*items), by_rank);
    for (size_t k = 0; k < nitems; k++)
        left -= place_item(u, next, &items[k], left, mode, r);

    free(items);
    free(next);
    return 0;
}

/* ---- The group rule ---- */

int plan_apply_groups(plan_unit *u, size_t n)
{
    size_t ngrouped = 0;
    for (size_t i = 0; i < n; i++)
        ngrouped += u[i].group != NULL;
    if (ngrouped == 0)
        return 0;
    /* Each group's strongest class, kept in the first member's slot. */
    bytemap groups = {0};
    if (bytemap_init(&groups, ngrouped) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!u[i].group)
            continue;
        size_t *first = bytemap_put_new(&groups, u[i].group, u[i].group_len, i);
        if (first && u[i].cls < u[*first].cls)
            u[*first].cls = u[i].cls;
    }
    for (size_t i = 0; i < n; i++)
        if (u[i].group)
            u[i].cls = u[*bytemap_get(&groups, u[i].group, u[i].group_len)].cls;
    bytemap_free(&groups);
    return 0;
}

/* ---- Entry point ---- */

int plan_run(const plan_unit *u, size_t n, int64_t budget, plan_mode mode, plan_result *r)
{
    memset(r, 0, sizeof(*r));
    r->budget = budget;
    r->n = n;
    r->entries = calloc(n ? n : 1, sizeof(*r->entries));
    if (!r->entries)
        return PLAN_NOMEM;

    int64_t cheapest = 0;
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (u[i].cls == UNIT_REDUNDANT)
            set_entry(&r->entries[i], DECISION_DROPPED, DROP_REDUNDANT, 0);
        if (u[i].cls != UNIT_PROTECTED)
            continue;
        r->verbatim_budget += u[i].tokens;
        cheapest += u[i].has_text ? min64(u[i].tokens, u[i].pointer_tokens) : u[i].tokens;
        if (cheapest > budget && !failed) {
            failed = 1;
            r->failed_index = i;
        }
    }
    r->required_budget = cheapest;
    /* A budget below nothing (a caller's search may go there) fits no plan,
     * even one without protected units: there is then none to name. */
    if (!failed && cheapest > budget) {
        failed = 1;
        r->failed_index = SIZE_MAX;
    }
    if (failed)
        return PLAN_FAILED;

    int64_t used = place_protected(u, n, budget, r);
    if (used < 0 || fill_derivable(u, n, budget - used, mode, r) != 0)
        return PLAN_NOMEM;

    r->used_tokens = 0;
    for (size_t i = 0; i < n; i++) {
        /* Every unit has exactly one decision, and no form costs less than
         * nothing. */
        assert(r->entries[i].decision != DECISION_UNSET);
        assert(r->entries[i].cost >= 0);
        r->used_tokens += r->entries[i].cost;
    }
    assert(r->used_tokens <= budget);
    return PLAN_OK;
}

void plan_result_free(plan_result *r)
{
    free(r->entries);
    r->entries = NULL;
}
