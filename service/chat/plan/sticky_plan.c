/* Sticky plans: the last plan's decisions applied again. See
 * sticky_plan.h. */
#include "sticky_plan.h"

#include "least_budget.h"
#include "loss_markers.h"
#include "chat_own.h"

#include <stdlib.h>
#include <string.h>

int chat_sticky_externalized(const chat_prior *prior, size_t i)
{
    return prior && i < prior->n && prior->decision[i] == DECISION_EXTERNALIZED;
}

int chat_sticky_extends(const chat_plan *p, size_t n, const chat_prior *prior)
{
    /* Another budget is another plan: a larger one may bring back what the
     * last one dropped. */
    if (!prior || prior->n == 0 || prior->n > n || prior->budget != p->req.budget)
        return 0;
    for (size_t i = 0; i < prior->n; i++)
        if (p->ident[i] != prior->digest[i])
            return 0;
    return 1;
}

/* Whether message i is reasoning of a turn that has finished since prior
 * kept it (it was the turn in flight then): the provider drops it unread
 * now, so its cache holds nothing past it, and the plan drops it too. */
static int now_stale(const chat_request *req, const chat_prior *prior, size_t i)
{
    return req->m[i].stale && prior->decision[i] != DECISION_DROPPED;
}

/* The decision message i keeps from prior. */
static plan_decision kept_decision(const chat_request *req, const chat_prior *prior, size_t i)
{
    return now_stale(req, prior, i) ? DECISION_DROPPED : (plan_decision)prior->decision[i];
}

/* Message i's entry under prior's decision: 1 when the message may still
 * take it (the policy or the annotations may have changed since), else 0. */
static int prior_entry(const chat_request *req, const chat_plan *p, const chat_prior *prior,
                       size_t i, plan_entry *e)
{
    const plan_unit *u = &p->units[i];
    if (now_stale(req, prior, i)) {
        /* A run of its own (boundaries()), which needs no marker where
         * turns need not alternate; where they must, the plan ends here. */
        *e = (plan_entry){DECISION_DROPPED, DROP_REDUNDANT, 0, 0};
        return !req->rules->alternating;
    }
    int fixed = req->m[i].pinned || p->classes.own[i] != CHAT_OWN_NONE;
    *e = (plan_entry){(plan_decision)prior->decision[i], DROP_NONE, 0, 0};
    switch (e->decision) {
    case DECISION_PRESERVED:
        e->cost = u->tokens;
        return 1;
    case DECISION_SUMMARIZED:
        e->cost = u->summary_tokens;
        return u->has_summary && !fixed;
    case DECISION_EXTERNALIZED:
        e->cost = u->pointer_tokens;
        /* Its pointer is priced (chat_sticky_externalized()), whatever its
         * class is now: a message that was protected as one of the last
         * stays behind its pointer rather than change its rendering. */
        return !fixed && u->has_text;
    case DECISION_DROPPED:
        e->reason = (plan_drop_reason)prior->reason[i];
        return (e->reason == DROP_REDUNDANT || e->reason == DROP_OVER_BUDGET) &&
               !req->m[i].pinned &&
               (u->cls != UNIT_PROTECTED || p->classes.own[i] == CHAT_OWN_MARKER);
    default:
        return 0;
    }
}

/* A new message is kept, unless redundant. */
static plan_entry new_entry(const plan_unit *u)
{
    if (u->cls == UNIT_REDUNDANT)
        return (plan_entry){DECISION_DROPPED, DROP_REDUNDANT, 0, 0};
    return (plan_entry){DECISION_PRESERVED, DROP_NONE, u->tokens, 0};
}

/* The entries of the old messages as prior decided them and of the new ones
 * kept. Returns 1, or 0 when an old message may no longer take its
 * decision, or when an exchange running on into the new messages was not
 * kept whole (its new part would be kept beside an old part replaced). */
static int fill_entries(const chat_request *req, const chat_plan *p, const chat_prior *prior,
                        plan_entry *e)
{
    size_t old = prior ? prior->n : 0;
    for (size_t i = 0; i < req->n; i++) {
        if (i >= old)
            e[i] = new_entry(&p->units[i]);
        else if (!prior_entry(req, p, prior, i, &e[i]))
            return 0;
    }
    if (old == 0 || old == req->n)
        return 1;
    /* The last old message went: the marker of its run would be placed by
     * what comes after it, which is new. */
    if (e[old - 1].decision == DECISION_DROPPED)
        return 0;
    size_t own = p->classes.owner[old - 1];
    return own == SIZE_MAX || p->classes.owner[old] != own ||
           e[old - 1].decision == DECISION_PRESERVED;
}

/* Whether every marker stands where it stood: a run of old messages before
 * the new ones, a run of new messages after the old ones; and none is
 * appended to a message that is dropped. */
static int markers_in_place(const chat_marker *mk, size_t nmk, size_t old, const plan_entry *e)
{
    for (size_t k = 0; k < nmk; k++) {
        if (mk[k].last < old)
            continue;
        if (mk[k].first < old || (mk[k].place == MARKER_APPEND && mk[k].at < old))
            return 0;
    }
    return chat_markers_attached(mk, nmk, e);
}

/* The run boundaries of a plan that keeps prior's decisions for its first k
 * messages: prior's among them, one at k where prior's run ended at k - 1
 * (a marker already sent stands for that run as it was), and a run of its
 * own for each message dropped now that prior kept. */
static void boundaries(const chat_request *req, const chat_prior *prior, size_t k,
                       unsigned char *run_start)
{
    size_t n = req->n;
    memset(run_start, 0, n ? n : 1);
    if (!prior)
        return;
    memcpy(run_start, prior->run_start, k);
    if (k > 0 && k < n && prior->decision[k - 1] == DECISION_DROPPED)
        run_start[k] = 1;
    for (size_t i = 0; i < k; i++)
        if (now_stale(req, prior, i)) {
            run_start[i] = 1;
            if (i + 1 < n)
                run_start[i + 1] = 1;
        }
}

int chat_sticky_plan(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                     const chat_prior *prior, int64_t room, plan_result *r, chat_marker **mk,
                     size_t *nmk, unsigned char *run_start)
{
    size_t old = prior ? prior->n : 0;
    boundaries(req, prior, old, run_start);
    int64_t mtok = 0;
    memset(r, 0, sizeof(*r));
    *mk = NULL;
    *nmk = 0;
    r->n = req->n;
    r->failed_index = SIZE_MAX;
    if (!(r->entries = calloc(req->n ? req->n : 1, sizeof(*r->entries))))
        return -1;
    int ok = fill_entries(req, p, prior, r->entries);
    if (ok && chat_markers_merge_own(p, req->n, r->entries)) {
        /* A marker sent back went with a new run beside it: it would not
         * stay as it was. */
        for (size_t i = 0; i < old && ok; i++)
            ok = r->entries[i].decision == kept_decision(req, prior, i);
    }
    if (!ok) {
        plan_result_free(r);
        return 0;
    }
    chat_plan_recount(r);
    if (chat_markers_build_runs(req, p, r->entries, run_start, cnt, mk, nmk, &mtok) != 0) {
        plan_result_free(r);
        return -1;
    }
    if (r->used_tokens + mtok <= room && markers_in_place(*mk, *nmk, old, r->entries))
        return 1;
    plan_result_free(r);
    chat_markers_free(*mk, *nmk);
    *mk = NULL;
    *nmk = 0;
    return 0;
}

/* ---- Recompaction that keeps a prefix ---- */

#define SHRINK_ROUNDS 8

/* How many leading messages may keep prior's decisions: those that still
 * may take them. */
static size_t valid_prefix(const chat_request *req, const chat_plan *p, const chat_prior *prior)
{
    plan_entry e;
    size_t k = 0;
    while (k < prior->n && prior_entry(req, p, prior, k, &e))
        k++;
    return k;
}

/* Whether the first k messages can keep their decisions while the rest are
 * planned anew: k ends a whole exchange and a whole turn (a finished turn's
 * reasoning is in no exchange, yet must stay before the item it led to;
 * narration is rendered with its calls or without them as their results
 * go), and where its last message was dropped, its run ended there in the
 * last plan too, before an old message (so that its marker, placed by
 * what follows, stays as it was sent). */
static int cut_allowed(const chat_request *req, const chat_plan *p, const chat_prior *prior,
                       size_t k)
{
    if (k == 0)
        return 0;
    if (kept_decision(req, prior, k - 1) == DECISION_DROPPED &&
        (k >= prior->n ||
         (kept_decision(req, prior, k) == DECISION_DROPPED && !prior->run_start[k] &&
          !now_stale(req, prior, k) && !now_stale(req, prior, k - 1))))
        return 0;
    if (k == req->n)
        return 1;
    if (p->classes.calls_with[k - 1] != SIZE_MAX)
        return 0;
    size_t own = p->classes.owner[k - 1];
    return !req->m[k].same_turn && (own == SIZE_MAX || p->classes.owner[k] != own);
}

/* The tokens of protected messages from k on that e keeps in full. */
static int64_t protected_in_full(const chat_plan *p, const plan_entry *e, size_t k, size_t n)
{
    int64_t t = 0;
    for (size_t i = k; i < n; i++)
        if (p->units[i].cls == UNIT_PROTECTED && e[i].decision == DECISION_PRESERVED)
            t += p->units[i].tokens;
    return t;
}

/* Whether r, which keeps prior's first k decisions, keeps less of the
 * protected messages after them in full than the fresh plan does: keeping
 * an old prefix must not put more of what follows it behind pointers (the
 * turn in flight's newest output, say). The prefix itself is as the last
 * answer had it. */
static int worse_than_fresh(const chat_plan *p, const plan_result *r, const plan_entry *fresh,
                            size_t k)
{
    return protected_in_full(p, r->entries, k, r->n) < protected_in_full(p, fresh, k, r->n);
}

/* Drops each derivable message after k that r keeps where a newer one
 * after k went: the rest keeps its newest reads only. One kept behind a
 * dropped one would stay in the prefix of the plans after this one until
 * a recompaction needs its room, and rewrite the context from where it
 * stands then; dropped now, where the context is rewritten anyway, it
 * costs the cache nothing. */
static void keep_newest_only(const chat_plan *p, size_t k, plan_result *r)
{
    int newer_dropped = 0;
    for (size_t i = r->n; i-- > k;) {
        plan_entry *e = &r->entries[i];
        /* compactd's own markers fed back go by the runs beside them. */
        if (p->units[i].cls != UNIT_DERIVABLE || p->classes.own[i] != CHAT_OWN_NONE)
            continue;
        if (e->decision == DECISION_DROPPED)
            newer_dropped = 1;
        else if (newer_dropped)
            *e = (plan_entry){DECISION_DROPPED, DROP_OVER_BUDGET, 0, 0};
    }
}

/* Messages after k that the last plan dropped over budget, and that a
 * later identical call has made redundant since, go over budget still:
 * their marker, sent with their re-run hints, stays as it was sent rather
 * than lose them (or go, where a redundant run needs none). */
static void keep_sent_reasons(const chat_prior *prior, size_t k, plan_result *r)
{
    for (size_t i = k; i < prior->n && i < r->n; i++)
        if (prior->decision[i] == DECISION_DROPPED && prior->reason[i] == DROP_OVER_BUDGET &&
            r->entries[i].decision == DECISION_DROPPED && r->entries[i].reason == DROP_REDUNDANT)
            r->entries[i].reason = DROP_OVER_BUDGET;
}

/* Plans the messages from k on within room, the first k frozen in prior's
 * decisions (units fu, the caller's scratch copy). Returns 1 with the plan
 * in r, mk, nmk; 0 when it does not fit; -1 when out of memory. */
static int plan_after(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                      const chat_prior *prior, size_t k, int64_t room, int64_t slack,
                      const plan_entry *fresh, plan_unit *fu, unsigned char *run_start,
                      plan_result *r, chat_marker **mk, size_t *nmk)
{
    boundaries(req, prior, k, run_start);
    plan_entry frozen;
    memcpy(fu, p->units, req->n * sizeof(*fu));
    for (size_t i = 0; i < k; i++) {
        prior_entry(req, p, prior, i, &frozen);
        /* A protected unit without text at the cost of its decision: the
         * planner keeps it as it is. */
        fu[i].cls = UNIT_PROTECTED;
        fu[i].has_text = 0;
        fu[i].tokens = fu[i].pointer_tokens = frozen.cost;
        fu[i].group = NULL;
        fu[i].group_len = 0;
    }
    int64_t b = room, mtok = 0;
    for (int round = 0; round < SHRINK_ROUNDS && b >= 0; round++) {
        int rc = plan_run(fu, req->n, b, req->mode, r);
        if (rc != PLAN_OK) {
            plan_result_free(r);
            return rc == PLAN_NOMEM ? -1 : 0;
        }
        int64_t least = r->required_budget;
        keep_newest_only(p, k, r);
        keep_sent_reasons(prior, k, r);
        for (size_t i = 0; i < k; i++)
            prior_entry(req, p, prior, i, &r->entries[i]);
        int same = 1;
        if (chat_markers_merge_own(p, req->n, r->entries))
            for (size_t i = 0; i < k; i++)
                same &= r->entries[i].decision == kept_decision(req, prior, i);
        chat_plan_recount(r);
        if (!same || worse_than_fresh(p, r, fresh, k)) {
            plan_result_free(r);
            return 0;
        }
        if (chat_markers_build_runs(req, p, r->entries, run_start, cnt, mk, nmk, &mtok) != 0) {
            plan_result_free(r);
            return -1;
        }
        int64_t over = r->used_tokens + mtok - room;
        int placed = markers_in_place(*mk, *nmk, k, r->entries);
        if (over <= slack && placed)
            return 1;
        plan_result_free(r);
        chat_markers_free(*mk, *nmk);
        *mk = NULL;
        *nmk = 0;
        if (!placed || over <= 0)
            return 0;
        /* The markers took what the planner thought was left; the rest
         * is planned no lower than the least its units take, where the
         * markers may still fit within the slack. */
        if (b == least)
            return 0;
        b = b - over > least ? b - over : least;
    }
    return 0;
}

int chat_sticky_recompact(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                          const chat_prior *prior, int64_t room, int64_t slack,
                          const plan_entry *fresh, plan_result *r, chat_marker **mk, size_t *nmk,
                          unsigned char *run_start, size_t *kept)
{
    size_t v = valid_prefix(req, p, prior), nc = 0, best = 0;
    size_t *cuts = malloc((v ? v : 1) * sizeof(*cuts));
    plan_unit *fu = malloc((req->n ? req->n : 1) * sizeof(*fu));
    int found = 0;
    if (!cuts || !fu)
        goto oom;
    for (size_t k = 1; k <= v; k++)
        if (cut_allowed(req, p, prior, k))
            cuts[nc++] = k;
    /* The longest prefix that lets the rest fit: a shorter one frees more
     * room, so the search is by halves over the cuts. */
    for (size_t lo = 0, hi = nc; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        plan_result t;
        chat_marker *tm = NULL;
        size_t tn = 0;
        int rc = plan_after(req, cnt, p, prior, cuts[mid], room, slack, fresh, fu, run_start, &t,
                            &tm, &tn);
        if (rc < 0)
            goto oom;
        if (rc == 0) {
            hi = mid;
            continue;
        }
        if (found) {
            plan_result_free(r);
            chat_markers_free(*mk, *nmk);
        }
        *r = t;
        *mk = tm;
        *nmk = tn;
        found = 1;
        best = cuts[mid];
        lo = mid + 1;
    }
    boundaries(req, found ? prior : NULL, best, run_start);
    *kept = best;
    free(cuts);
    free(fu);
    return found;
oom:
    if (found) {
        plan_result_free(r);
        chat_markers_free(*mk, *nmk);
    }
    free(cuts);
    free(fu);
    return -1;
}

int chat_prior_from_plan(const chat_plan *p, chat_prior *out)
{
    size_t n = p->c.plan.n, slots = n ? n : 1;
    out->n = n;
    out->budget = p->req.budget;
    out->digest = malloc(slots * sizeof(*out->digest));
    out->decision = malloc(slots);
    out->reason = malloc(slots);
    out->run_start = malloc(slots);
    if (!out->digest || !out->decision || !out->reason || !out->run_start) {
        chat_prior_free(out);
        return -1;
    }
    const plan_entry *e = p->c.plan.entries;
    for (size_t i = 0; i < n; i++) {
        out->digest[i] = p->ident[i];
        out->decision[i] = (unsigned char)e[i].decision;
        out->reason[i] = (unsigned char)e[i].reason;
        /* Only a boundary between two dropped messages says anything. */
        out->run_start[i] = i > 0 && p->run_start[i] && e[i - 1].decision == DECISION_DROPPED &&
                            e[i].decision == DECISION_DROPPED;
    }
    return 0;
}

void chat_prior_free(chat_prior *pr)
{
    free(pr->digest);
    free(pr->decision);
    free(pr->reason);
    free(pr->run_start);
    memset(pr, 0, sizeof(*pr));
}
