/* Property test: the planner against brute-force and independent oracles
 * on many random small instances, plus invariants read off every plan.
 *
 * COMPACTD_PLAN_SEED=<number> replays a run; COMPACTD_PLAN_INSTANCES=<n>
 * changes how many small instances are drawn. */
#include "check.h"
#include "plan.h"
#include "pointer.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SEED 0x5eed2026c0ffeeULL
#define DEFAULT_INSTANCES 100000
#define LARGE_INSTANCES 2000
#define MAX_UNITS 64
#define SMALL_UNITS 10 /* at most 2^10 subsets of protected units */
#define MAX_REPORTS 10

/* ---- Random instances ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rnd(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

static int chance(int percent)
{
    return rnd(0, 99) < percent;
}

/* Group names are byte strings: the empty name, names that are prefixes of
 * each other and names that differ only after a NUL byte are all distinct. */
static const struct {
    const char *s;
    size_t len;
} group_names[] = {
    {"g", 1}, {"h", 1}, {"g1", 2}, {"", 0}, {"a\0b", 3}, {"a\0c", 3}, {"tool:call-7", 11},
};
#define N_GROUP_NAMES (sizeof(group_names) / sizeof(group_names[0]))

typedef struct {
    plan_unit u[MAX_UNITS];
    char keys[MAX_UNITS][8];
    size_t n;
    int64_t budget;
    plan_mode mode;
} instance;

/* Two scales. "Real" units have the pointer cost compactd computes for
 * 1-4 byte keys (40-43 tokens) and tokens around it. "Tiny" units set
 * pointer_tokens directly to small numbers: the planner takes the cost as
 * given, and tiny numbers make ties, zero savings and exact fits common. */
static void gen_units(instance *in, size_t n, int tiny, int ngroups)
{
    in->n = n;
    memset(in->u, 0, sizeof(in->u));
    for (size_t i = 0; i < n; i++) {
        plan_unit *u = &in->u[i];
        int key_len = (int)rnd(1, 4);
        for (int k = 0; k < key_len; k++)
            in->keys[i][k] = (char)('a' + (i + (size_t)k) % 26);
        in->keys[i][key_len] = '\0';
        u->key = in->keys[i];
        u->key_len = (size_t)key_len;

        int64_t c = rnd(0, 99);
        u->cls = c < 40 ? UNIT_PROTECTED : c < 85 ? UNIT_DERIVABLE : UNIT_REDUNDANT;
        if (tiny) {
            u->tokens = rnd(0, 12);
            u->pointer_tokens = rnd(0, 8);
        } else {
            u->tokens = chance(10) ? rnd(0, 3) : rnd(20, 130);
            u->pointer_tokens = (int64_t)pointer_length(u->key, u->key_len);
        }
        u->has_text = u->cls == UNIT_PROTECTED || chance(70);
        u->text = u->has_text ? "text" : NULL;
        u->text_len = u->has_text ? 4 : 0;
        if (u->cls != UNIT_DERIVABLE)
            continue;
        u->priority = chance(50) ? 0 : rnd(-2, 2);
        if (chance(45)) {
            size_t g = (size_t)rnd(0, ngroups - 1);
            u->group = group_names[g].s;
            u->group_len = group_names[g].len;
        }
        if (chance(50)) {
            u->has_summary = 1;
            u->summary_tokens = rnd(0, u->tokens + (tiny ? 3 : 20));
        }
    }
}

static void sums(const instance *in, int64_t *verbatim, int64_t *cheapest, int64_t *derivable)
{
    *verbatim = *cheapest = *derivable = 0;
    for (size_t i = 0; i < in->n; i++) {
        const plan_unit *u = &in->u[i];
        if (u->cls == UNIT_PROTECTED) {
            *verbatim += u->tokens;
            *cheapest += u->tokens < u->pointer_tokens ? u->tokens : u->pointer_tokens;
        } else if (u->cls == UNIT_DERIVABLE) {
            *derivable += u->tokens;
        }
    }
}

/* Budgets cluster where decisions change: around the least and the
 * verbatim budgets, and anywhere up to everything verbatim. */
static int64_t gen_budget(const instance *in)
{
    int64_t v, c, d;
    sums(in, &v, &c, &d);
    switch (rnd(0, 6)) {
    case 0:
        return rnd(0, v + d + 5);
    case 1:
        return c > 0 ? c - 1 : 0;
    case 2:
        return c;
    case 3:
        return rnd(c, v);
    case 4:
        return v;
    case 5:
        return v + rnd(0, d);
    default:
        return rnd(0, c + 5);
    }
}

static void gen_instance(instance *in, size_t max_units, int ngroups)
{
    gen_units(in, (size_t)rnd(0, (int64_t)max_units), chance(50), ngroups);
    in->mode = chance(50) ? PLAN_STRICT : PLAN_DISCOVERY;
    in->budget = gen_budget(in);
}

/* ---- Protected oracle: every subset ---- */

typedef struct {
    int feasible;
    int64_t required;           /* least cost over all subsets */
    int64_t verbatim;           /* cost of the empty subset */
    int min_count;              /* fewest externalized among the subsets that fit */
    size_t failed_index;        /* first protected unit where the cheapest forms overflow */
    int externalize[MAX_UNITS]; /* the set the normative rule picks */
} protected_oracle;

/* Enumerates every subset of the protected units to externalize (only for
 * small instances). A unit whose pointer is not smaller than itself never
 * helps, so the minimum over all subsets is the minimum over allowed ones. */
static void oracle_subsets(const instance *in, protected_oracle *o)
{
    size_t idx[SMALL_UNITS];
    size_t np = 0;
    for (size_t i = 0; i < in->n; i++)
        if (in->u[i].cls == UNIT_PROTECTED)
            idx[np++] = i;

    o->feasible = 0;
    o->min_count = -1;
    o->required = INT64_MAX;
    for (uint32_t mask = 0; mask < (1u << np); mask++) {
        int64_t cost = 0;
        int count = 0;
        for (size_t k = 0; k < np; k++) {
            const plan_unit *u = &in->u[idx[k]];
            if (mask & (1u << k)) {
                cost += u->pointer_tokens;
                count++;
            } else {
                cost += u->tokens;
            }
        }
        if (mask == 0)
            o->verbatim = cost;
        if (cost < o->required)
            o->required = cost;
        if (cost <= in->budget) {
            o->feasible = 1;
            if (o->min_count < 0 || count < o->min_count)
                o->min_count = count;
        }
    }
}

/* The normative rule, written as a selection: repeatedly take the allowed
 * unit with the largest saving (earliest on ties) until the rest fit. Also
 * the failure index: the first protected unit at which the running sum of
 * cheapest forms passes the budget. */
static void oracle_rule(const instance *in, protected_oracle *o)
{
    int64_t cost = 0, cheapest = 0;
    int failed = 0;
    o->failed_index = 0;
    for (size_t i = 0; i < in->n; i++) {
        o->externalize[i] = 0;
        const plan_unit *u = &in->u[i];
        if (u->cls != UNIT_PROTECTED)
            continue;
        cost += u->tokens;
        cheapest += u->tokens < u->pointer_tokens ? u->tokens : u->pointer_tokens;
        if (!failed && cheapest > in->budget) {
            failed = 1;
            o->failed_index = i;
        }
    }
    if (failed)
        return;
    while (cost > in->budget) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < in->n; i++) {
            const plan_unit *u = &in->u[i];
            if (u->cls != UNIT_PROTECTED || o->externalize[i] || u->pointer_tokens >= u->tokens)
                continue;
            if (best == SIZE_MAX ||
                u->tokens - u->pointer_tokens > in->u[best].tokens - in->u[best].pointer_tokens)
                best = i;
        }
        if (best == SIZE_MAX)
            break;
        o->externalize[best] = 1;
        cost -= in->u[best].tokens - in->u[best].pointer_tokens;
    }
}

/* ---- Derivable oracle: selection by rank ---- */

static int same_group(const plan_unit *a, const plan_unit *b)
{
    return a->group && b->group && a->group_len == b->group_len &&
           memcmp(a->group, b->group, a->group_len) == 0;
}

/* head[i]: the first derivable unit of i's group, or i itself. */
static void item_heads(const instance *in, size_t *head)
{
    for (size_t i = 0; i < in->n; i++) {
        head[i] = i;
        if (in->u[i].cls != UNIT_DERIVABLE || !in->u[i].group)
            continue;
        for (size_t j = 0; j < i; j++) {
            if (in->u[j].cls == UNIT_DERIVABLE && same_group(&in->u[i], &in->u[j])) {
                head[i] = head[j];
                break;
            }
        }
    }
}

typedef struct {
    int64_t full, summarized, pointers;
    int all_text, any_summary;
    int64_t priority;
    size_t position;
} item_view;

static item_view view_item(const instance *in, const size_t *head, size_t h)
{
    item_view v = {0, 0, 0, 1, 0, INT64_MIN, 0};
    for (size_t i = h; i < in->n; i++) {
        const plan_unit *u = &in->u[i];
        if (u->cls != UNIT_DERIVABLE || head[i] != h)
            continue;
        v.full += u->tokens;
        v.summarized += u->has_summary ? u->summary_tokens : u->tokens;
        /* A member whose pointer saves nothing stays verbatim. */
        v.pointers += u->pointer_tokens < u->tokens ? u->pointer_tokens : u->tokens;
        v.all_text = v.all_text && u->has_text;
        v.any_summary = v.any_summary || u->has_summary;
        if (u->priority > v.priority)
            v.priority = u->priority;
        v.position = i;
    }
    return v;
}

/* The cheapest form the mode allows for an item; INT64_MAX never fits. */
static int64_t cheapest_form(const item_view *v, plan_mode mode)
{
    int64_t best = v->full;
    if (mode == PLAN_DISCOVERY && v->all_text && v->pointers < best)
        best = v->pointers;
    if (v->any_summary && v->summarized < best)
        best = v->summarized;
    return best;
}

/* Fills want[] (a decision per derivable unit, DECISION_DROPPED meaning
 * over_budget) by picking, again and again, the unplaced item of highest
 * priority and latest position. */
static void oracle_fill(const instance *in, int64_t left, plan_decision *want)
{
    size_t head[MAX_UNITS];
    int placed[MAX_UNITS] = {0};
    item_heads(in, head);

    for (;;) {
        size_t best = SIZE_MAX;
        item_view bv = {0};
        for (size_t h = 0; h < in->n; h++) {
            if (in->u[h].cls != UNIT_DERIVABLE || head[h] != h || placed[h])
                continue;
            item_view v = view_item(in, head, h);
            if (best == SIZE_MAX || v.priority > bv.priority ||
                (v.priority == bv.priority && v.position > bv.position)) {
                best = h;
                bv = v;
            }
        }
        if (best == SIZE_MAX)
            return;
        placed[best] = 1;

        int form; /* 0 whole, 1 pointers, 2 summaries, 3 dropped */
        if (bv.full <= left) {
            form = 0;
            left -= bv.full;
        } else if (in->mode == PLAN_DISCOVERY && bv.all_text && bv.pointers <= left) {
            form = 1;
            left -= bv.pointers;
        } else if (bv.any_summary && bv.summarized <= left) {
            form = 2;
            left -= bv.summarized;
        } else {
            form = 3;
        }
        for (size_t i = best; i < in->n; i++) {
            const plan_unit *u = &in->u[i];
            if (u->cls != UNIT_DERIVABLE || head[i] != best)
                continue;
            switch (form) {
            case 0:
                want[i] = DECISION_PRESERVED;
                break;
            case 1:
                want[i] =
                    u->pointer_tokens < u->tokens ? DECISION_EXTERNALIZED : DECISION_PRESERVED;
                break;
            case 2:
                want[i] = u->has_summary ? DECISION_SUMMARIZED : DECISION_PRESERVED;
                break;
            default:
                want[i] = DECISION_DROPPED;
                break;
            }
        }
    }
}

/* ---- Checks ---- */

static long instance_id;

/* How often the interesting paths came up, printed so a generator that
 * stops reaching them shows. */
static struct {
    long failed, protected_ext, tie_ext, summarized, derivable_ext, dropped_items, dropped_groups;
} seen;

static void dump_instance(const instance *in)
{
    fprintf(stderr, "  instance %ld: budget %" PRId64 ", mode %s, %zu units\n", instance_id,
            in->budget, in->mode == PLAN_STRICT ? "strict" : "discovery", in->n);
    for (size_t i = 0; i < in->n; i++) {
        const plan_unit *u = &in->u[i];
        fprintf(stderr, "    [%zu] %-9s tokens %3" PRId64 " pointer %3" PRId64, i,
                unit_class_name(u->cls), u->tokens, u->pointer_tokens);
        if (u->cls == UNIT_DERIVABLE) {
            fprintf(stderr, " prio %2" PRId64 " text %d", u->priority, u->has_text);
            if (u->has_summary)
                fprintf(stderr, " summary %" PRId64, u->summary_tokens);
            if (u->group) {
                fputs(" group \"", stderr);
                for (size_t k = 0; k < u->group_len; k++) {
                    if (u->group[k])
                        fputc(u->group[k], stderr);
                    else
                        fputs("\\0", stderr);
                }
                fputc('"', stderr);
            }
        }
        fputc('\n', stderr);
    }
}

static int64_t entry_cost(const plan_unit *u, plan_decision d)
{
    switch (d) {
    case DECISION_PRESERVED:
        return u->tokens;
    case DECISION_SUMMARIZED:
        return u->summary_tokens;
    case DECISION_EXTERNALIZED:
        return u->pointer_tokens;
    case DECISION_DROPPED:
        return 0;
    case DECISION_UNSET:
        break;
    }
    return -1;
}

/* What every successful plan must satisfy, read off the plan alone. */
static void check_plan_invariants(const instance *in, const plan_result *r)
{
    int64_t sum = 0;
    size_t n_ext = 0;

    check(r->n == in->n, "#%ld: %zu entries for %zu units", instance_id, r->n, in->n);
    for (size_t i = 0; i < in->n; i++) {
        const plan_unit *u = &in->u[i];
        const plan_entry *e = &r->entries[i];
        sum += e->cost;
        n_ext += e->decision == DECISION_EXTERNALIZED;
        check(e->cost == entry_cost(u, e->decision), "#%ld: unit %zu cost %" PRId64 " for %s",
              instance_id, i, e->cost, plan_decision_name(e->decision));
        check((e->decision == DECISION_DROPPED) == (e->reason != DROP_NONE),
              "#%ld: unit %zu %s with reason %s", instance_id, i, plan_decision_name(e->decision),
              plan_reason_name(e->reason));
        switch (u->cls) {
        case UNIT_PROTECTED:
            /* Never silent truncation: protected state is kept or spilled. */
            check(e->decision == DECISION_PRESERVED || e->decision == DECISION_EXTERNALIZED,
                  "#%ld: protected unit %zu %s", instance_id, i, plan_decision_name(e->decision));
            check(e->decision != DECISION_EXTERNALIZED || u->pointer_tokens < u->tokens,
                  "#%ld: protected unit %zu externalized, pointer %" PRId64 " >= tokens %" PRId64,
                  instance_id, i, u->pointer_tokens, u->tokens);
            break;
        case UNIT_REDUNDANT:
            check(e->decision == DECISION_DROPPED && e->reason == DROP_REDUNDANT,
                  "#%ld: redundant unit %zu %s/%s", instance_id, i, plan_decision_name(e->decision),
                  plan_reason_name(e->reason));
            break;
        case UNIT_DERIVABLE:
            check(e->decision != DECISION_DROPPED || e->reason == DROP_OVER_BUDGET,
                  "#%ld: derivable unit %zu dropped as %s", instance_id, i,
                  plan_reason_name(e->reason));
            check(e->decision != DECISION_SUMMARIZED || u->has_summary,
                  "#%ld: derivable unit %zu summarized without a summary", instance_id, i);
            check(e->decision != DECISION_EXTERNALIZED ||
                      (in->mode == PLAN_DISCOVERY && u->has_text),
                  "#%ld: derivable unit %zu externalized (mode %d, text %d)", instance_id, i,
                  (int)in->mode, u->has_text);
            check(e->decision != DECISION_EXTERNALIZED || u->pointer_tokens < u->tokens,
                  "#%ld: derivable unit %zu externalized, pointer %" PRId64 " >= tokens %" PRId64,
                  instance_id, i, u->pointer_tokens, u->tokens);
            break;
        }
    }
    check(r->used_tokens == sum, "#%ld: used_tokens %" PRId64 ", costs add up to %" PRId64,
          instance_id, r->used_tokens, sum);
    check(r->used_tokens <= in->budget, "#%ld: used_tokens %" PRId64 " over budget %" PRId64,
          instance_id, r->used_tokens, in->budget);
    check(r->n_externalized == n_ext, "#%ld: n_externalized %zu, counted %zu", instance_id,
          r->n_externalized, n_ext);

    /* Items: one form for the whole group, and a dropped item never fits
     * in what the plan finally leaves. */
    size_t head[MAX_UNITS];
    item_heads(in, head);
    int64_t left = in->budget - r->used_tokens;
    for (size_t h = 0; h < in->n; h++) {
        if (in->u[h].cls != UNIT_DERIVABLE || head[h] != h)
            continue;
        size_t count[PLAN_DECISIONS] = {0};
        int summary_form_ok = 1, pointer_form_ok = 1;
        for (size_t i = h; i < in->n; i++) {
            if (in->u[i].cls != UNIT_DERIVABLE || head[i] != h)
                continue;
            plan_decision d = r->entries[i].decision;
            count[d]++;
            if ((d == DECISION_SUMMARIZED) != (in->u[i].has_summary != 0))
                summary_form_ok = 0;
            /* In the pointer form, exactly the members a pointer shrinks. */
            if ((d == DECISION_EXTERNALIZED) != (in->u[i].pointer_tokens < in->u[i].tokens))
                pointer_form_ok = 0;
        }
        size_t members = count[DECISION_UNSET] + count[DECISION_PRESERVED] +
                         count[DECISION_SUMMARIZED] + count[DECISION_EXTERNALIZED] +
                         count[DECISION_DROPPED];
        int whole = count[DECISION_PRESERVED] == members;
        int pointers = count[DECISION_EXTERNALIZED] > 0 && pointer_form_ok &&
                       count[DECISION_EXTERNALIZED] + count[DECISION_PRESERVED] == members;
        int dropped = count[DECISION_DROPPED] == members;
        int summarized = count[DECISION_SUMMARIZED] > 0 && summary_form_ok;
        check(whole || pointers || dropped || summarized,
              "#%ld: item at %zu split: %zu preserved, %zu summarized, %zu externalized, "
              "%zu dropped",
              instance_id, h, count[DECISION_PRESERVED], count[DECISION_SUMMARIZED],
              count[DECISION_EXTERNALIZED], count[DECISION_DROPPED]);
        if (dropped) {
            item_view v = view_item(in, head, h);
            int64_t cheapest = cheapest_form(&v, in->mode);
            check(cheapest > left,
                  "#%ld: item at %zu dropped, its cheapest form %" PRId64 " fits the %" PRId64
                  " left",
                  instance_id, h, cheapest, left);
        }
    }
}

/* The externalized protected set is the top of the ranking: no unit left
 * verbatim outranks one that was externalized. */
static void check_ranking(const instance *in, const plan_result *r)
{
    for (size_t i = 0; i < in->n; i++) {
        const plan_unit *a = &in->u[i];
        if (a->cls != UNIT_PROTECTED || r->entries[i].decision != DECISION_EXTERNALIZED)
            continue;
        for (size_t j = 0; j < in->n; j++) {
            const plan_unit *b = &in->u[j];
            if (b->cls != UNIT_PROTECTED || r->entries[j].decision != DECISION_PRESERVED ||
                b->pointer_tokens >= b->tokens)
                continue;
            int64_t sa = a->tokens - a->pointer_tokens, sb = b->tokens - b->pointer_tokens;
            check(sa > sb || (sa == sb && i < j),
                  "#%ld: unit %zu (saving %" PRId64
                  ") externalized before unit %zu (saving %" PRId64 ")",
                  instance_id, i, sa, j, sb);
        }
    }
}

static int has_saving_tie(const instance *in)
{
    for (size_t i = 0; i < in->n; i++)
        for (size_t j = i + 1; j < in->n; j++)
            if (in->u[i].cls == UNIT_PROTECTED && in->u[j].cls == UNIT_PROTECTED &&
                in->u[i].pointer_tokens < in->u[i].tokens &&
                in->u[i].tokens - in->u[i].pointer_tokens ==
                    in->u[j].tokens - in->u[j].pointer_tokens)
                return 1;
    return 0;
}

static void count_outcomes(const instance *in, const plan_result *r)
{
    size_t head[MAX_UNITS];
    item_heads(in, head);
    for (size_t i = 0; i < in->n; i++) {
        if (in->u[i].cls != UNIT_DERIVABLE)
            continue;
        plan_decision d = r->entries[i].decision;
        seen.summarized += d == DECISION_SUMMARIZED;
        seen.derivable_ext += d == DECISION_EXTERNALIZED;
        if (head[i] == i && d == DECISION_DROPPED) {
            seen.dropped_items++;
            for (size_t j = i + 1; j < in->n; j++)
                if (in->u[j].cls == UNIT_DERIVABLE && head[j] == i) {
                    seen.dropped_groups++;
                    break;
                }
        }
    }
}

/* Runs one instance; with_subsets enables the exhaustive oracle. */
static void check_instance(const instance *in, int with_subsets)
{
    protected_oracle o;
    oracle_rule(in, &o);
    if (with_subsets)
        oracle_subsets(in, &o);

    int64_t verbatim, cheapest, derivable;
    sums(in, &verbatim, &cheapest, &derivable);
    int feasible = with_subsets ? o.feasible : cheapest <= in->budget;
    int64_t required = with_subsets ? o.required : cheapest;
    if (with_subsets) {
        /* The oracles agree with each other before they judge the planner. */
        check(o.required == cheapest && o.verbatim == verbatim, "#%ld: oracle sums disagree",
              instance_id);
    }

    plan_result r;
    int rc = plan_run(in->u, in->n, in->budget, in->mode, &r);
    check(rc != PLAN_NOMEM, "#%ld: PLAN_NOMEM", instance_id);
    check(rc == (feasible ? PLAN_OK : PLAN_FAILED), "#%ld: plan_run %d but a plan %s", instance_id,
          rc, feasible ? "exists" : "does not exist");
    check(r.required_budget == required, "#%ld: required_budget %" PRId64 ", want %" PRId64,
          instance_id, r.required_budget, required);
    check(r.verbatim_budget == verbatim, "#%ld: verbatim_budget %" PRId64 ", want %" PRId64,
          instance_id, r.verbatim_budget, verbatim);
    check(r.budget == in->budget, "#%ld: budget not echoed", instance_id);

    if (rc == PLAN_FAILED && !feasible) {
        seen.failed++;
        check(r.failed_index == o.failed_index, "#%ld: failed_index %zu, want %zu", instance_id,
              r.failed_index, o.failed_index);
        check(r.failed_index < in->n && in->u[r.failed_index].cls == UNIT_PROTECTED,
              "#%ld: failed_index %zu is not a protected unit", instance_id, r.failed_index);
    } else if (rc == PLAN_OK && feasible) {
        check_plan_invariants(in, &r);
        check_ranking(in, &r);

        /* Protected: exactly the rule's set, and no more than the minimum. */
        int n_prot_ext = 0, n_rule = 0;
        int64_t protected_cost = 0;
        for (size_t i = 0; i < in->n; i++) {
            if (in->u[i].cls != UNIT_PROTECTED)
                continue;
            int ext = r.entries[i].decision == DECISION_EXTERNALIZED;
            n_prot_ext += ext;
            n_rule += o.externalize[i];
            protected_cost += r.entries[i].cost;
            check(ext == o.externalize[i], "#%ld: protected unit %zu %s, the rule says %s",
                  instance_id, i, plan_decision_name(r.entries[i].decision),
                  o.externalize[i] ? "externalized" : "preserved");
        }
        seen.protected_ext += n_prot_ext > 0;
        seen.tie_ext += n_prot_ext > 0 && has_saving_tie(in);
        if (with_subsets)
            check(n_prot_ext == o.min_count && n_rule == o.min_count,
                  "#%ld: %d protected externalized (rule %d), minimum is %d", instance_id,
                  n_prot_ext, n_rule, o.min_count);

        /* Derivable: exactly what the selection oracle decides. */
        plan_decision want[MAX_UNITS];
        oracle_fill(in, in->budget - protected_cost, want);
        for (size_t i = 0; i < in->n; i++) {
            if (in->u[i].cls != UNIT_DERIVABLE)
                continue;
            check(r.entries[i].decision == want[i], "#%ld: derivable unit %zu %s, want %s",
                  instance_id, i, plan_decision_name(r.entries[i].decision),
                  plan_decision_name(want[i]));
        }
        count_outcomes(in, &r);
    }
    plan_result_free(&r);

    /* required_budget is the least budget that works. */
    if (rc == PLAN_OK || rc == PLAN_FAILED) {
        rc = plan_run(in->u, in->n, required, in->mode, &r);
        check(rc == PLAN_OK, "#%ld: fails at required_budget %" PRId64, instance_id, required);
        plan_result_free(&r);
        if (required > 0) {
            rc = plan_run(in->u, in->n, required - 1, in->mode, &r);
            check(rc == PLAN_FAILED, "#%ld: succeeds below required_budget", instance_id);
            plan_result_free(&r);
        }
    }
}

static uint64_t env_u64(const char *name, uint64_t fallback)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end) {
        fprintf(stderr, "plan_property: %s=%s is not a number\n", name, s);
        exit(2);
    }
    return (uint64_t)v;
}

static int run_phase(const char *what, long count, size_t max_units, int ngroups, int subsets)
{
    static instance in;
    int reports = 0;
    for (long k = 0; k < count; k++, instance_id++) {
        int before = check_failures;
        gen_instance(&in, max_units, ngroups);
        check_instance(&in, subsets);
        if (check_failures != before) {
            fprintf(stderr, "  (%s phase)\n", what);
            dump_instance(&in);
            if (++reports >= MAX_REPORTS) {
                fprintf(stderr, "plan_property: stopping after %d failing instances\n", reports);
                return -1;
            }
        }
    }
    return 0;
}

int main(void)
{
    uint64_t seed = env_u64("COMPACTD_PLAN_SEED", DEFAULT_SEED);
    long count = (long)env_u64("COMPACTD_PLAN_INSTANCES", DEFAULT_INSTANCES);
    rng_state = seed;
    printf("plan_property: seed 0x%" PRIx64 " (COMPACTD_PLAN_SEED to replay), "
           "%ld small instances with every subset, %d large\n",
           seed, count, LARGE_INSTANCES);
    fflush(stdout);

    /* Small: up to 10 units, few group names, every subset enumerated. */
    if (run_phase("small", count, SMALL_UNITS, 3, 1) == 0)
        /* Large: up to 64 units and every group name, where grouping and
         * ranking have room to go wrong; the subset oracle is skipped. */
        run_phase("large", LARGE_INSTANCES, MAX_UNITS, (int)N_GROUP_NAMES, 0);
    printf("plan_property: seen %ld failures, %ld plans externalizing protected units (%ld with "
           "tied savings), %ld summarized and %ld externalized derivable units, %ld dropped "
           "items (%ld groups)\n",
           seen.failed, seen.protected_ext, seen.tie_ext, seen.summarized, seen.derivable_ext,
           seen.dropped_items, seen.dropped_groups);
    return check_done("plan_property");
}
