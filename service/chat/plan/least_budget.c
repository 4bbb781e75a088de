/* The search for the least plan of a chat history. See least_budget.h.
 *
 * The history is a row of slots: protected messages (always kept, in their
 * cheapest form), derivable items (kept in their cheapest kept form, or
 * dropped) and redundant messages (always dropped). Between two kept slots
 * every slot is dropped and one marker stands for the run, so the cheapest
 * plan is a shortest path over the kept slots. Where that is cheap enough,
 * each run's marker is priced exactly and the plan found is the least;
 * else marker costs are estimates (a header, plus each item's hint). Either
 * way the plan found is then priced exactly with the markers it gets. */
#include "least_budget.h"

#include "least_budget_parts.h"
#include "loss_markers.h"
#include "chat_price.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PLAN (INT64_MAX / 4)
/* Exact pricing tokenizes marker texts; it runs while what it would
 * tokenize stays under WORK_MAX_BYTES (a few milliseconds of BPE). Where the
 * exact search would take more, the estimates' search runs instead, then
 * exact pricing of one change at a time if that fits the same bound. */
#define WORK_MAX_BYTES (128 * 1024)
#define MARKER_HEADER_BYTES 100 /* what a marker holds besides its hints */
#define REFINE_ROUNDS 2

void chat_plan_recount(plan_result *r)
{
    r->used_tokens = 0;
    r->n_externalized = 0;
    for (size_t i = 0; i < r->n; i++) {
        r->used_tokens += r->entries[i].cost;
        r->n_externalized += r->entries[i].decision == DECISION_EXTERNALIZED;
    }
}

void chat_items_apply(const plan_unit *u, const chat_item *items, size_t nitems,
                      const unsigned char *drop, plan_result *r)
{
    for (size_t k = 0; k < nitems; k++)
        for (size_t j = items[k].first; j <= items[k].last; j++) {
            plan_entry *e = &r->entries[j];
            plan_decision how = !drop     ? items[k].how
                                : drop[k] ? DECISION_DROPPED
                                          : items[k].keep_how;
            if (how == DECISION_SUMMARIZED && !u[j].has_summary)
                how = DECISION_PRESERVED;
            e->decision = how;
            e->reason = how == DECISION_DROPPED ? DROP_OVER_BUDGET : DROP_NONE;
            e->room = 0;
            e->cost = how == DECISION_PRESERVED      ? u[j].tokens
                      : how == DECISION_SUMMARIZED   ? u[j].summary_tokens
                      : how == DECISION_EXTERNALIZED ? u[j].pointer_tokens
                                                     : 0;
        }
    chat_plan_recount(r);
}

typedef enum { SLOT_KEPT = 0, SLOT_ITEM, SLOT_GONE } slot_kind;

typedef struct {
    size_t first, last; /* its messages */
    slot_kind kind;
    int64_t keep;      /* tokens when kept */
    int64_t hint;      /* tokens its hints add to a marker */
    size_t hint_bytes; /* and their bytes */
    size_t item;       /* SLOT_ITEM: its index in items */
} slot;

/* The estimated marker headers: for a run that lost something (its hints
 * come on top) and for a run of redundant messages only. */
typedef struct {
    int64_t lost, redundant;
} marker_base;

static int64_t price_header(const chat_request *req, const chat_counter *cnt, const char *tail)
{
    char t[200];
    int len =
        snprintf(t, sizeof(t), "[compactd: messages %zu-%zu were dropped%s]", req->n, req->n, tail);
    return chat_price_text_message(chat_role_name(req->rules->marker_role), t, (size_t)len, cnt);
}

/* Tokens that message i's hint adds to a marker ("; " and the hint), once
 * per exchange as the marker text writes it. */
static int64_t hint_tokens(const chat_plan *p, const chat_counter *cnt, size_t first, size_t last,
                           size_t *bytes)
{
    int64_t total = 0;
    const char *prev = NULL;
    *bytes = 0;
    for (size_t i = first; i <= last; i++) {
        const chat_str *h = &p->classes.hint[i];
        if (h->len == 0 || h->s == prev)
            continue;
        int64_t t = chat_count_remembered(h->s, h->len, cnt);
        if (t < 0)
            return -1;
        total += t + 1;
        *bytes += h->len + 2;
        prev = h->s;
    }
    return total;
}

/* The row of slots; returns their number, or SIZE_MAX when out of memory. */
static size_t build_slots(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                          const plan_result *base, const chat_item *items, size_t nitems, slot *s)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < req->n; i++, n++) {
        s[n] = (slot){i, i, SLOT_GONE, 0, 0, 0, 0};
        if (p->units[i].cls == UNIT_PROTECTED) {
            s[n].kind = SLOT_KEPT;
            s[n].keep = base->entries[i].cost;
        } else if (p->units[i].cls == UNIT_DERIVABLE && k < nitems && items[k].first == i) {
            s[n] = (slot){i, items[k].last, SLOT_ITEM, items[k].keep_cost, 0, 0, k};
            if ((s[n].hint = hint_tokens(p, cnt, i, items[k].last, &s[n].hint_bytes)) < 0)
                return SIZE_MAX;
            i = items[k++].last;
        }
    }
    return n;
}

/* The shortest path over nodes 0 (before the history), 1..ns (the slots)
 * and ns + 1 (after it); from[v] is the kept node before node v. */
static void shortest(const chat_request *req, const slot *s, size_t ns, marker_base mb, int64_t *dp,
                     int64_t *hint, int64_t *best, size_t *best_at, size_t *from)
{
    size_t last_kept = 0, last_item = SIZE_MAX, gone_from = SIZE_MAX;
    dp[0] = hint[0] = best[0] = 0;
    best_at[0] = 0;
    for (size_t v = 1; v <= ns + 1; v++) {
        const slot *sl = v <= ns ? &s[v - 1] : NULL;
        int64_t d = dp[v - 1]; /* (a) right after a kept node: no marker */
        from[v] = v - 1;
        if (gone_from != SIZE_MAX && dp[gone_from - 1] < NO_PLAN) {
            /* (b) after a run of redundant messages only */
            size_t u = gone_from - 1;
            chat_role prev = u == 0 ? ROLE_USER : req->m[s[u - 1].last].role;
            chat_placement pl =
                chat_marker_place_run(req, s[gone_from - 1].first, s[v - 2].last, 0, u == 0, prev);
            int64_t c = dp[u] + (pl.need ? mb.redundant : 0);
            if (c < d) {
                d = c;
                from[v] = u;
            }
        }
        if (last_item != SIZE_MAX && last_item > last_kept && best[last_item - 1] < NO_PLAN) {
            /* (c) after a run that drops at least one item */
            int64_t c = best[last_item - 1] + hint[v - 1] + mb.lost;
            if (c < d) {
                d = c;
                from[v] = best_at[last_item - 1];
            }
        }
        int keepable = !sl || sl->kind != SLOT_GONE;
        dp[v] = keepable && d < NO_PLAN ? d + (sl ? sl->keep : 0) : NO_PLAN;
        hint[v] = hint[v - 1] + (sl && sl->kind == SLOT_ITEM ? sl->hint : 0);
        int64_t here = dp[v] < NO_PLAN ? dp[v] - hint[v] : NO_PLAN;
        if (sl && sl->kind == SLOT_KEPT) {
            best[v] = here;
            best_at[v] = v;
            last_kept = v;
        } else {
            int better = here < best[v - 1];
            best[v] = better ? here : best[v - 1];
            best_at[v] = better ? v : best_at[v - 1];
        }
        if (sl && sl->kind == SLOT_ITEM)
            last_item = v;
        if (sl && sl->kind == SLOT_GONE) {
            if (gone_from == SIZE_MAX)
                gone_from = v;
        } else {
            gone_from = SIZE_MAX;
        }
    }
}

/* Whether the exact search would tokenize at most WORK_MAX_BYTES of marker
 * text: every run between two kept slots, each run's header and hints. */
static int exact_affordable(const slot *s, size_t ns)
{
    size_t work = 0;
    for (size_t v = 1; v <= ns + 1; v++) {
        size_t run = 0;
        for (size_t u = v - 1; u-- > 0;) {
            run += s[u].hint_bytes;
            work += MARKER_HEADER_BYTES + run;
            if (work > WORK_MAX_BYTES)
                return 0;
            if (u > 0 && s[u - 1].kind == SLOT_KEPT)
                break;
        }
    }
    return 1;
}

/* The exact price of the marker a run of dropped messages [first, last]
 * gets (0 when it needs none), as chat_markers_build() would place it;
 * gone has every non-protected message dropped. -1 when out of memory. */
static int64_t run_price(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                         const plan_entry *gone, size_t first, size_t last, int lost, size_t u,
                         const slot *s)
{
    chat_role prev = u == 0 ? ROLE_USER : req->m[s[u - 1].last].role;
    chat_placement pl = chat_marker_place_run(req, first, last, lost, u == 0, prev);
    if (!pl.need)
        return 0;
    size_t len;
    char *t = chat_marker_text(p, gone, first, last, SIZE_MAX, lost, &len);
    if (!t)
        return -1;
    int64_t c = chat_price_text_message(chat_role_name(pl.role), t, len, cnt);
    free(t);
    return c;
}

/* The shortest path with every run's marker priced exactly: quadratic in
 * the slots between two protected messages, so only for short histories.
 * Returns 0, or -1 when out of memory. */
static int shortest_exact(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                          const slot *s, size_t ns, int64_t *dp, size_t *from)
{
    plan_entry *gone = calloc(req->n ? req->n : 1, sizeof(*gone));
    if (!gone)
        return -1;
    for (size_t i = 0; i < req->n; i++)
        if (p->units[i].cls != UNIT_PROTECTED)
            gone[i] = (plan_entry){.decision = DECISION_DROPPED,
                                   .reason = p->units[i].cls == UNIT_REDUNDANT ? DROP_REDUNDANT
                                                                               : DROP_OVER_BUDGET};
    dp[0] = 0;
    for (size_t v = 1; v <= ns + 1; v++) {
        const slot *sl = v <= ns ? &s[v - 1] : NULL;
        int64_t d = NO_PLAN;
        int lost = 0;
        for (size_t u = v; u-- > 0;) {
            if (u + 1 < v)
                lost |= s[u].kind == SLOT_ITEM; /* node u + 1 joins the run */
            if (dp[u] < NO_PLAN) {
                int64_t c = u + 1 == v ? 0
                                       : run_price(req, p, cnt, gone, s[u].first, s[v - 2].last,
                                                   lost, u, s);
                if (c < 0) {
                    free(gone);
                    return -1;
                }
                if (dp[u] + c < d) {
                    d = dp[u] + c;
                    from[v] = u;
                }
            }
            if (u > 0 && s[u - 1].kind == SLOT_KEPT)
                break; /* a protected message ends every run */
        }
        dp[v] = (!sl || sl->kind != SLOT_GONE) && d < NO_PLAN ? d + (sl ? sl->keep : 0) : NO_PLAN;
    }
    free(gone);
    return 0;
}

/* Marks in drop[] the items the shortest path does not keep. */
static void choose(const slot *s, size_t ns, const size_t *from, unsigned char *drop, size_t nitems)
{
    memset(drop, 1, nitems);
    for (size_t v = from[ns + 1]; v > 0; v = from[v])
        if (s[v - 1].kind == SLOT_ITEM)
            drop[s[v - 1].item] = 0;
}

/* What the plan with these drops costs, messages and markers priced
 * exactly; r->entries is set from base. Returns -1 when out of memory. */
static int64_t priced(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                      const plan_result *base, const chat_item *items, size_t nitems,
                      const unsigned char *drop, plan_result *r)
{
    chat_marker *mk = NULL;
    size_t nmk = 0;
    int64_t mtok = 0;
    memcpy(r->entries, base->entries, req->n * sizeof(*r->entries));
    chat_items_apply(p->units, items, nitems, drop, r);
    if (chat_markers_merge_own(p, req->n, r->entries))
        chat_plan_recount(r);
    if (chat_markers_build(req, p, r->entries, cnt, &mk, &nmk, &mtok) != 0)
        return -1;
    chat_markers_free(mk, nmk);
    return r->used_tokens + mtok;
}

/* Where the search's costs were estimates (search set), keep or drop one
 * item or two neighbours at a time where the exact price says it pays,
 * until none does, on histories of few items. Leaves r with the final drops
 * applied. Returns 0, or -1 when out of
 * memory. */
static int refine(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                  const plan_result *base, const chat_item *items, size_t nitems, int search,
                  unsigned char *drop, plan_result *r)
{
    int64_t cost = priced(req, p, cnt, base, items, nitems, drop, r);
    size_t text = MARKER_HEADER_BYTES * (nitems + 1);
    for (size_t k = 0; k < req->n; k++)
        text += p->classes.hint[k].len + 2;
    if (text * 2 * nitems * REFINE_ROUNDS > WORK_MAX_BYTES)
        search = 0; /* each move prices every marker again */
    for (int round = 0; search && cost >= 0 && round < REFINE_ROUNDS; round++) {
        int better = 0;
        /* One item, then two neighbours (a run split or joined). */
        for (size_t span = 1; span <= 2; span++)
            for (size_t k = 0; k + span <= nitems && cost >= 0; k++) {
                for (size_t j = k; j < k + span; j++)
                    drop[j] ^= 1;
                int64_t c = priced(req, p, cnt, base, items, nitems, drop, r);
                if (c >= 0 && c < cost) {
                    cost = c;
                    better = 1;
                    continue;
                }
                for (size_t j = k; j < k + span; j++)
                    drop[j] ^= 1;
                if (c < 0)
                    cost = -1;
            }
        if (!better)
            break;
    }
    if (cost < 0)
        return -1;
    return priced(req, p, cnt, base, items, nitems, drop, r) < 0 ? -1 : 0;
}

/* The search where markers are not priced by parts (least_budget_parts.h
 * does not apply): exactly where affordable, else by estimates and
 * refined. Leaves out with the drops it chose applied. Returns 0, or -1
 * when out of memory. */
static int least_by_slots(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                          const plan_result *base, const chat_item *items, size_t nitems,
                          unsigned char *drop, plan_result *out)
{
    size_t cap = req->n + 2;
    slot *s = malloc(cap * sizeof(*s));
    int64_t *num = malloc(3 * cap * sizeof(*num));
    size_t *idx = malloc(2 * cap * sizeof(*idx));
    marker_base mb = {price_header(req, cnt,
                                   " to fit the token budget. Re-acquire before relying "
                                   "on them: "),
                      price_header(req, cnt, " as redundant")};
    size_t ns = s ? build_slots(req, p, cnt, base, items, nitems, s) : SIZE_MAX;
    int rc = -1, exact = 0;
    if (!num || !idx || ns == SIZE_MAX || mb.lost < 0 || mb.redundant < 0)
        goto done;
    if ((exact = exact_affordable(s, ns)) != 0) {
        if (shortest_exact(req, p, cnt, s, ns, num, idx + cap) != 0)
            goto done;
    } else {
        shortest(req, s, ns, mb, num, num + cap, num + 2 * cap, idx, idx + cap);
    }
    choose(s, ns, idx + cap, drop, nitems);
    rc = refine(req, p, cnt, base, items, nitems, !exact, drop, out);
done:
    free(idx);
    free(num);
    free(s);
    return rc;
}

int chat_least_plan(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                    const plan_result *base, const chat_item *items, size_t nitems,
                    plan_result *out, chat_marker **mk, size_t *nmk, int64_t *tokens)
{
    size_t n = req->n;
    unsigned char *drop = malloc(nitems ? nitems : 1);
    plan_entry *entries = malloc((n ? n : 1) * sizeof(*entries));
    int rc = -1, exact = 0;
    int64_t least = 0, mtok = 0;
    if (!drop || !entries ||
        (exact = chat_least_exact(req, p, cnt, base, items, nitems, drop, &least)) < 0)
        goto done;
    *out = *base;
    out->entries = entries;
    if (exact) {
        memcpy(entries, base->entries, n * sizeof(*entries));
        chat_items_apply(p->units, items, nitems, drop, out);
    } else if (least_by_slots(req, p, cnt, base, items, nitems, drop, out) != 0) {
        goto done;
    }
    if (chat_markers_merge_own(p, req->n, out->entries))
        chat_plan_recount(out);
    if (chat_markers_build(req, p, out->entries, cnt, mk, nmk, &mtok) != 0)
        goto done;
    entries = NULL;
    *tokens = out->used_tokens + mtok;
    /* Priced by parts, the search's total is what the markers it placed cost. */
    assert(!exact || *tokens == least);
    rc = 0;
done:
    free(entries);
    free(drop);
    return rc;
}
