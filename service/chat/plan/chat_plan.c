/* Chat compaction planning: units from messages, then the planner and the
 * loss markers until both fit. See chat_plan.h. */
#include "chat_plan.h"

#include "least_budget.h"
#include "loss_markers.h"
#include "chat_own.h"
#include "chat_price.h"
#include "required_budget.h"
#include "sticky_plan.h"
#include "pointer.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARKER_ROUNDS 8

size_t chat_pointer(const chat_plan *p, size_t i, char *out)
{
    return pointer_format(out, p->units[i].key, p->units[i].key_len, p->sha256[i]);
}

/* Prices narration that makes calls (chat_classes.calls_with) without
 * them, and what they add when kept (their ids, names and arguments, in
 * either form of the message: behind its pointer they stay as sent) onto
 * the first of their results. Returns 0 or -1. */
static int price_narration(const chat_message *m, chat_plan *p, size_t i, const char *ptr,
                           size_t plen, const chat_counter *cnt, chat_costs *costs)
{
    chat_costs bare;
    if (chat_price_without_calls(m, p->sha256[i], ptr, plen, cnt, &bare) != 0)
        return -1;
    p->share_of[i] = costs->full - bare.full;
    p->calls_share[p->classes.calls_with[i]] += p->share_of[i];
    *costs = bare;
    return 0;
}

/* Reasoning that goes with the calls it led to (chat_leads_calls()): all
 * of it onto their first result, sent and priced with them. */
static void price_lead(chat_plan *p, size_t i, chat_costs *costs)
{
    p->share_of[i] = costs->full;
    p->calls_share[p->classes.calls_with[i]] += costs->full;
    *costs = (chat_costs){0};
}

/* ---- Units ---- */

/* The first 64 bits of a hex digest. */
static uint64_t digest_bits(const char *hex)
{
    uint64_t v = 0;
    for (int k = 0; k < 16; k++) {
        char c = hex[k];
        v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return v;
}

static int build_units(const chat_request *req, const chat_counter *cnt, chat_plan *p)
{
    size_t n = req->n;
    char ptr[CHAT_KEY_MAX + POINTER_OVERHEAD + 1];
    if (compaction_request_init(&p->req, n) != 0)
        return -1;
    p->req.budget = req->budget;
    p->req.mode = req->mode;
    p->req.dry_run = req->dry_run;
    p->units = p->req.units;
    p->sha256 = p->req.sha256;
    p->keys = malloc((n ? n : 1) * sizeof(*p->keys));
    p->calls_share = calloc(n ? n : 1, sizeof(*p->calls_share));
    p->share_of = calloc(n ? n : 1, sizeof(*p->share_of));
    p->run_start = calloc(n ? n : 1, 1);
    p->ident = malloc((n ? n : 1) * sizeof(*p->ident));
    if (!p->keys || !p->calls_share || !p->share_of || !p->run_start || !p->ident ||
        chat_classify(req, &p->classes) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &req->m[i];
        sha256_hex(m->json.s, m->json.len, p->sha256[i]);
        char sent[SHA256_HEX_LEN + 1];
        if (m->sent.s)
            sha256_hex(m->sent.s, m->sent.len, sent);
        p->ident[i] = digest_bits(m->sent.s ? sent : p->sha256[i]);
    }
    if (chat_keys_assign(req, (const char(*)[SHA256_HEX_LEN + 1]) p->sha256, p->keys) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &req->m[i];
        plan_unit *u = &p->units[i];
        u->key = p->keys[i];
        u->key_len = strlen(p->keys[i]);
        u->cls = p->classes.cls[i];
        int lead = chat_leads_calls(req, &p->classes, i);
        /* A pinned message is never spilled in its place, nor reasoning
         * that goes with its calls (it has no text to spill). */
        u->has_text = !m->pinned && !lead;
        u->text = m->json.s;
        u->text_len = m->json.len;
        u->priority = m->note.has_priority ? m->note.priority : 0;
        size_t own = p->classes.owner[i];
        if (own != SIZE_MAX) {
            u->group = p->keys[own];
            u->group_len = strlen(p->keys[own]);
        }
        /* Only a protected message, or any in discovery mode, is ever
         * externalized, or one the last plan externalized (it stays so
         * while the plan is extended): the others' pointers are not
         * priced. */
        int may_point = req->mode == PLAN_DISCOVERY || u->cls == UNIT_PROTECTED ||
                        chat_sticky_externalized(req->prior, i);
        chat_costs costs;
        size_t plen = may_point ? chat_pointer(p, i, ptr) : 0;
        if (chat_price_message(m, p->sha256[i], may_point ? ptr : NULL, plen, cnt, &costs) != 0)
            return -1;
        if (lead)
            price_lead(p, i, &costs);
        else if (p->classes.calls_with[i] != SIZE_MAX &&
                 price_narration(m, p, i, may_point ? ptr : NULL, plen, cnt, &costs) != 0)
            return -1;
        /* The calls of narration before it, kept while it is (always
         * later than the narration, so already priced). */
        costs.full += p->calls_share[i];
        costs.externalized += p->calls_share[i];
        costs.summarized += p->calls_share[i];
        u->tokens = costs.full;
        /* compactd's own marker or pointer is never spilled again (a pointer
         * to it would be no smaller than it), nor is a pinned message. */
        u->pointer_tokens = m->pinned || p->classes.own[i] ? costs.full : costs.externalized;
        u->has_summary = m->note.has_summary && u->cls == UNIT_DERIVABLE;
        u->summary_tokens = costs.summarized;
        unit_detail *d = &p->req.detail[i];
        d->has_tokens = d->has_summary_tokens = 1;
        if (u->has_summary) {
            d->summary = m->note.summary.s;
            d->summary_len = m->note.summary.len;
        }
        if (p->classes.hint[i].len) {
            d->reacquire = p->classes.hint[i].s;
            d->reacquire_len = p->classes.hint[i].len;
        }
    }
    for (size_t k = 0; k < req->n_system; k++) {
        int64_t t = chat_count_remembered(req->system[k].s, req->system[k].len, cnt);
        if (t < 0)
            return -1;
        p->system_tokens += t;
    }
    if (req->n_system > 0)
        p->system_tokens += CHAT_MESSAGE_FRAME_TOKENS;
    p->tools_tokens =
        req->has_tools ? chat_price_tools(req->rules, req->tools.s, req->tools.len, cnt) : 0;
    p->reserve_tokens = req->reserve_tokens;
    return p->tools_tokens < 0 ? -1 : 0;
}

/* ---- The plan ---- */

static int fail_oom(compactd_error *err)
{
    return error_set(err, ERR_INTERNAL, "out of memory while planning");
}

static size_t item_end(const chat_plan *p, size_t first, size_t n)
{
    size_t own = p->classes.owner[first], last = first;
    while (own != SIZE_MAX && last + 1 < n && p->classes.owner[last + 1] == own)
        last++;
    return last;
}

/* The cheapest form of each derivable item, a loss marker of its own
 * counting as the cost of dropping it: merged into a run, markers cost no
 * more than that. Returns the number of items, or SIZE_MAX when out of
 * memory. */
static size_t cheapest_items(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                             chat_item *items)
{
    size_t k = 0;
    for (size_t i = 0; i < req->n; i++) {
        if (p->units[i].cls != UNIT_DERIVABLE)
            continue;
        chat_item *it = &items[k++];
        it->first = i;
        it->last = item_end(p, i, req->n);
        int64_t full = 0, summarized = 0, ext = 0;
        int any_summary = 0;
        for (size_t j = it->first; j <= it->last; j++) {
            const plan_unit *u = &p->units[j];
            full += u->tokens;
            summarized += u->has_summary ? u->summary_tokens : u->tokens;
            ext += u->pointer_tokens;
            any_summary |= u->has_summary;
        }
        size_t len;
        char *t = chat_marker_text(p, NULL, it->first, it->last, SIZE_MAX, 1, &len);
        if (!t)
            return SIZE_MAX;
        int64_t drop =
            chat_price_text_message(chat_role_name(req->rules->marker_role), t, len, cnt);
        free(t);
        if (drop < 0)
            return SIZE_MAX;
        it->how = DECISION_PRESERVED;
        it->cheapest = full;
        if (any_summary && summarized < it->cheapest) {
            it->how = DECISION_SUMMARIZED;
            it->cheapest = summarized;
        }
        if (req->mode == PLAN_DISCOVERY && ext < it->cheapest) {
            it->how = DECISION_EXTERNALIZED;
            it->cheapest = ext;
        }
        it->keep_how = it->how;
        it->keep_cost = it->cheapest;
        if (drop < it->cheapest) {
            it->how = DECISION_DROPPED;
            it->cheapest = drop;
        }
        i = it->last;
    }
    return k;
}

static int64_t total_tokens(const chat_marker *mk, size_t n)
{
    int64_t t = 0;
    for (size_t k = 0; k < n; k++)
        t += mk[k].tokens;
    return t;
}

/* The plan at the least budget: protected messages in the room that the
 * derivable items' cheapest forms and the redundant runs' markers leave. */
static int least_plan(const chat_request *req, const chat_counter *cnt, chat_plan *p, int64_t room,
                      const chat_item *items, size_t nitems, int64_t reserved, plan_result *r,
                      chat_marker **mk, size_t *nmk)
{
    int64_t mtok;
    int rc = plan_run(p->units, req->n, room - reserved, req->mode, r);
    if (rc != PLAN_OK)
        return rc == PLAN_NOMEM ? -1 : 1;
    chat_items_apply(p->units, items, nitems, NULL, r);
    if (chat_markers_merge_own(p, req->n, r->entries))
        chat_plan_recount(r);
    if (chat_markers_build(req, p, r->entries, cnt, mk, nmk, &mtok) != 0)
        return -1;
    return r->used_tokens + mtok <= room ? 0 : 1;
}

/* Plans at planner budget b: 1 with the plan and its markers in r, mk and
 * nmk when together they fit room (the caller owns them), 0 when they do
 * not or the planner refuses b, -1 when out of memory. */
static int try_budget(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                      int64_t b, int64_t room, plan_result *r, chat_marker **mk, size_t *nmk,
                      int64_t *over)
{
    int64_t mtok = 0;
    *mk = NULL;
    *nmk = 0;
    *over = 0;
    int rc = plan_run(p->units, req->n, b, req->mode, r);
    if (rc != PLAN_OK) {
        plan_result_free(r);
        return rc == PLAN_NOMEM ? -1 : 0;
    }
    if (chat_markers_merge_own(p, req->n, r->entries))
        chat_plan_recount(r);
    if (chat_markers_build(req, p, r->entries, cnt, mk, nmk, &mtok) != 0) {
        plan_result_free(r);
        return -1;
    }
    *over = r->used_tokens + mtok - room;
    if (*over <= 0)
        return 1;
    plan_result_free(r);
    chat_markers_free(*mk, *nmk);
    return 0;
}

static void keep(chat_plan *p, plan_result *r, chat_marker *mk, size_t nmk)
{
    p->c.plan = *r;
    p->markers = mk;
    p->n_markers = nmk;
}

/* The least plan and what it costs, messages and markers. */
typedef struct {
    plan_result r;
    chat_marker *mk;
    size_t nmk;
    int64_t tokens;
    int taken;
} least;

static void take_least(chat_plan *p, least *l)
{
    keep(p, &l->r, l->mk, l->nmk);
    l->taken = 1;
}

static void least_free(least *l)
{
    if (!l->taken) {
        plan_result_free(&l->r);
        chat_markers_free(l->mk, l->nmk);
    }
}

/* The least plan: the cheaper of each item in its own cheapest form (a drop
 * priced as a marker of its own) and the search's choice (least_budget.h),
 * both priced with the markers they get, over the protected messages in
 * their cheapest forms (the planner at `cheapest`). Returns 0, or -1 when
 * out of memory. */
static int find_least(const chat_request *req, const chat_counter *cnt, const chat_plan *p,
                      int64_t cheapest, const chat_item *items, size_t nitems, least *out)
{
    least alone = {0};
    plan_result base;
    int64_t mtok = 0;
    memset(out, 0, sizeof(*out));
    if (plan_run(p->units, req->n, cheapest, req->mode, &base) != PLAN_OK) {
        plan_result_free(&base);
        return -1;
    }
    alone.r = base;
    alone.r.entries = malloc((req->n ? req->n : 1) * sizeof(plan_entry));
    if (!alone.r.entries)
        goto fail;
    memcpy(alone.r.entries, base.entries, req->n * sizeof(plan_entry));
    chat_items_apply(p->units, items, nitems, NULL, &alone.r);
    if (chat_markers_merge_own(p, req->n, alone.r.entries))
        chat_plan_recount(&alone.r);
    if (chat_markers_build(req, p, alone.r.entries, cnt, &alone.mk, &alone.nmk, &mtok) != 0)
        goto fail;
    alone.tokens = alone.r.used_tokens + mtok;
    if (chat_least_plan(req, p, cnt, &base, items, nitems, &out->r, &out->mk, &out->nmk,
                        &out->tokens) != 0)
        goto fail;
    plan_result_free(&base);
    if (alone.tokens < out->tokens) {
        least_free(out);
        *out = alone;
    } else {
        least_free(&alone);
    }
    return 0;
fail:
    least_free(&alone);
    plan_result_free(&base);
    return -1;
}

/* Plans within room: the planner first, shrunk by what the markers of its
 * drops take, for a few rounds; then a bisection of the planner's budget
 * for the fullest plan that fits with its markers (keeping a message can
 * split a run in two, so fitting is not monotone in the budget); else the
 * plan of the least budget, keeping protected messages verbatim where that
 * fits, or the least plan itself (l, then taken). Returns 0, or -1 when out
 * of memory. */
static int settle(const chat_request *req, const chat_counter *cnt, chat_plan *p, int64_t room,
                  const chat_item *items, size_t nitems, int64_t reserved, least *l)
{
    plan_result r;
    chat_marker *mk;
    size_t nmk;
    int64_t b = room, over = 0;
    for (int round = 0; round < MARKER_ROUNDS; round++) {
        int rc = try_budget(req, cnt, p, b, room, &r, &mk, &nmk, &over);
        if (rc != 0) {
            if (rc > 0)
                keep(p, &r, mk, nmk);
            return rc < 0 ? -1 : 0;
        }
        if (over <= 0) /* the planner refused b */
            break;
        /* The markers took what the planner thought was left: plan again
         * with that much less. */
        b -= over;
    }
    int found = 0;
    for (int64_t lo = room - reserved, hi = b; lo <= hi;) {
        int64_t mid = lo + (hi - lo) / 2;
        int rc = try_budget(req, cnt, p, mid, room, &r, &mk, &nmk, &over);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            if (found && r.used_tokens <= p->c.plan.used_tokens) {
                plan_result_free(&r);
                chat_markers_free(mk, nmk);
            } else {
                if (found) {
                    plan_result_free(&p->c.plan);
                    chat_markers_free(p->markers, p->n_markers);
                }
                keep(p, &r, mk, nmk);
                found = 1;
            }
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (found)
        return 0;
    int rc = least_plan(req, cnt, p, room, items, nitems, reserved, &p->c.plan, &p->markers,
                        &p->n_markers);
    if (rc <= 0)
        return rc;
    plan_result_free(&p->c.plan);
    chat_markers_free(p->markers, p->n_markers);
    take_least(p, l);
    return 0;
}

/* Where a history that does not fit whole is planned down to: compact_to,
 * never below the required budget. The low-water mark makes room by
 * dropping what may go and by pointers to older messages, never by a
 * pointer to the turn just sent (the last policy.keep_last messages) where
 * the budget holds it in full: those messages, newest first while the least
 * plan with them in full fits the budget, are pinned in full for the rest
 * of the planning (their units lose their text until chat_plan_run() gives
 * it back); then the other protected messages, oldest first, while the
 * budget less the slack holds them; and the mark rises by what that costs
 * over the required budget (*pinned). Returns the mark. */
static int64_t low_water(const chat_request *req, chat_plan *p, int64_t *pinned)
{
    int64_t target =
        req->compact_to > 0 && req->compact_to < req->budget ? req->compact_to : req->budget;
    if (target < p->required_budget)
        target = p->required_budget;
    *pinned = 0;
    if (target >= req->budget)
        return target;
    size_t last = req->policy.keep_last < req->n ? req->n - req->policy.keep_last : 0;
    for (size_t i = req->n; i > last; i--) {
        plan_unit *u = &p->units[i - 1];
        int64_t more = u->tokens - u->pointer_tokens;
        if (u->cls != UNIT_PROTECTED || !u->has_text || more <= 0)
            continue;
        if (p->required_budget + *pinned + more > req->budget)
            break;
        u->has_text = 0;
        *pinned += more;
    }
    /* The mark is a wish, the budget a promise: a protected message the
     * budget holds in full is not put behind a pointer to reach the mark.
     * Oldest first where not all fit: they carry the task and the
     * constraints stated once, and they head the cached prefix. The mark
     * stays the slack under the budget, for the markers a recompaction
     * keeps as sent. */
    const chat_prior *prior = p->kind == CHAT_PLAN_RECOMPACTED ? req->prior : NULL;
    int64_t ceiling = req->budget - req->budget * STICKY_MARK_SLACK_PERCENT / 100;
    for (size_t i = 0; i < last; i++) {
        plan_unit *u = &p->units[i];
        int64_t more = u->tokens - u->pointer_tokens;
        /* One the last plan put behind its pointer stays there, as sent. */
        if (u->cls != UNIT_PROTECTED || !u->has_text || more <= 0 ||
            chat_sticky_externalized(prior, i))
            continue;
        if (p->required_budget + *pinned + more > ceiling)
            break;
        u->has_text = 0;
        *pinned += more;
    }
    if (target < p->required_budget + *pinned)
        target = p->required_budget + *pinned;
    return target;
}

/* The plan within room: the session's last plan extended, when the history
 * extends it and that fits; else (a fresh plan) every message kept, when
 * that fits; else the history planned down to the low-water mark (never
 * below the required budget), so that the next turns can append again.
 * Returns 0, or -1 when out of memory. */
static int plan_within(const chat_request *req, const chat_counter *cnt, chat_plan *p,
                       int64_t fixed, int64_t cheapest, const chat_item *items, size_t nitems,
                       int64_t reserved, least *l)
{
    plan_result r;
    chat_marker *mk;
    size_t nmk;
    /* The last plan extended; else, for a fresh plan, every message kept.
     * A history that extends the last plan but outgrew it is not kept whole
     * even where that fits (the last plan dropped what it had to, or kept
     * what is now redundant): it goes to the low-water mark, from the
     * longest prefix of the last plan that allows, so that the next turns
     * append again. */
    const chat_prior *prior = p->kind == CHAT_PLAN_RECOMPACTED ? req->prior : NULL;
    int rc = chat_sticky_plan(req, cnt, p, prior, req->budget - fixed, &r, &mk, &nmk, p->run_start);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        keep(p, &r, mk, nmk);
        if (prior)
            p->kind = CHAT_PLAN_EXTENDED;
        return 0;
    }
    int64_t pinned;
    int64_t target = low_water(req, p, &pinned);
    p->low_water = target;
    /* With the turn just sent pinned in full, the least plan to fall back
     * on is the least that keeps it so. */
    least at_least;
    if (pinned > 0 && find_least(req, cnt, p, cheapest + pinned, items, nitems, &at_least) != 0)
        return -1;
    rc = settle(req, cnt, p, target - fixed, items, nitems, reserved, pinned > 0 ? &at_least : l);
    if (pinned > 0)
        least_free(&at_least);
    if (rc != 0)
        return -1;
    if (p->kind != CHAT_PLAN_RECOMPACTED)
        return 0;
    /* The fresh plan stands unless a plan that keeps a prefix of the last
     * one does as well for the protected messages. */
    int64_t slack = req->budget * STICKY_LAND_SLACK_PERCENT / 100;
    if (slack > req->budget - target)
        slack = req->budget - target;
    size_t kept = 0;
    rc = chat_sticky_recompact(req, cnt, p, req->prior, target - fixed, slack, p->c.plan.entries,
                               &r, &mk, &nmk, p->run_start, &kept);
    if (rc > 0) {
        /* The fresh plan is p's own or a least plan settle() took (taken
         * then, so least_free() frees nothing of it). */
        plan_result_free(&p->c.plan);
        chat_markers_free(p->markers, p->n_markers);
        keep(p, &r, mk, nmk);
        p->kept_prefix = kept;
        int64_t landed = fixed + p->c.plan.used_tokens + total_tokens(p->markers, p->n_markers);
        if (landed > p->low_water)
            p->low_water = landed; /* the mark, risen by the markers kept as sent */
    }
    return rc < 0 ? -1 : 0;
}

/* Markers of the redundant runs alone (alternating turns may need them
 * even with everything else kept, and a history of redundant messages
 * only needs one). */
static int redundant_markers(const chat_request *req, const chat_counter *cnt, chat_plan *p,
                             int64_t *tokens)
{
    plan_entry *e = calloc(req->n ? req->n : 1, sizeof(*e));
    chat_marker *mk = NULL;
    size_t nmk = 0;
    if (!e)
        return -1;
    for (size_t i = 0; i < req->n; i++)
        if (p->units[i].cls == UNIT_REDUNDANT)
            e[i] = (plan_entry){.decision = DECISION_DROPPED, .reason = DROP_REDUNDANT};
    int rc = chat_markers_build(req, p, e, cnt, &mk, &nmk, tokens);
    chat_markers_free(mk, nmk);
    free(e);
    return rc;
}

/* The protected message that takes most of the least plan (the first of
 * equals), or SIZE_MAX when none takes anything. */
static size_t largest_protected(const chat_plan *p)
{
    size_t at = SIZE_MAX;
    for (size_t i = 0; i < p->c.plan.n; i++)
        if (p->units[i].cls == UNIT_PROTECTED && p->c.plan.entries[i].cost > 0 &&
            (at == SIZE_MAX || p->c.plan.entries[i].cost > p->c.plan.entries[at].cost))
            at = i;
    return at;
}

/* The refusal names what fills most of the required budget, and what
 * would lower it (required_budget.h); the answer's required_by.kinds lists
 * every part with its advice. */
static int refuse(const chat_request *req, const chat_plan *p, compactd_error *err)
{
    chat_required_share shares[REQUIRED_KINDS];
    size_t n = chat_required_shares(req, p, shares);
    int64_t most = n ? shares[0].tokens : 0;
    int pct = p->required_budget > 0 ? (int)(most * 100 / p->required_budget) : 0;
    return error_set(err, ERR_COMPACTION_FAILURE,
                     "budget %lld is below the required %lld: the protected messages do not "
                     "fit in their cheapest form with the markers they need; %d%% of it is %s "
                     "(see required_by.kinds). Refusing lossy compaction.",
                     (long long)req->budget, (long long)p->required_budget, pct,
                     n ? chat_required_kind_name(shares[0].kind) : "markers");
}

int chat_plan_run(const chat_request *req, const chat_counter *cnt, chat_plan *p,
                  compactd_error *err)
{
    memset(p, 0, sizeof(*p));
    p->failed_index = SIZE_MAX;
    compaction_timestamp(p->c.created_at);
    p->c.plan.n = req->n;
    chat_item *items = malloc((req->n ? req->n : 1) * sizeof(*items));
    if (!items || build_units(req, cnt, p) != 0) {
        free(items);
        return fail_oom(err);
    }

    /* The least budget that succeeds: the system prompt, the cheapest form
     * of every protected message, of every derivable item (dropping one
     * costs a marker), and the markers redundant runs need. */
    int64_t redundant = 0, derivable = 0;
    size_t nitems = cheapest_items(req, p, cnt, items);
    plan_result probe;
    int rc = nitems == SIZE_MAX || redundant_markers(req, cnt, p, &redundant) != 0
                 ? PLAN_NOMEM
                 : plan_run(p->units, req->n, 0, req->mode, &probe);
    if (rc == PLAN_NOMEM) {
        if (nitems != SIZE_MAX)
            plan_result_free(&probe);
        free(items);
        return fail_oom(err);
    }
    int64_t cheapest = probe.required_budget;
    plan_result_free(&probe);
    for (size_t k = 0; k < nitems; k++)
        derivable += items[k].cheapest;
    int64_t reserved = derivable + redundant; /* an upper bound: where bisection starts */
    least l;
    if (find_least(req, cnt, p, cheapest, items, nitems, &l) != 0) {
        free(items);
        return fail_oom(err);
    }
    /* The system prompt, the tools and the reply's room come first. */
    int64_t fixed = p->system_tokens + p->tools_tokens + p->reserve_tokens;
    p->required_budget = fixed + l.tokens;

    if (chat_sticky_extends(p, req->n, req->prior))
        p->kind = CHAT_PLAN_RECOMPACTED; /* until the extension fits */
    rc = req->budget < p->required_budget
             ? 1
             : plan_within(req, cnt, p, fixed, cheapest, items, nitems, reserved, &l);
    free(items);
    for (size_t i = 0; i < req->n; i++) /* what low_water() pinned */
        p->units[i].has_text = !req->m[i].pinned;
    if (rc > 0) {
        /* The least plan is what the answer shows: the messages it keeps
         * are those that force the required budget. */
        take_least(p, &l);
        p->failed_index = largest_protected(p);
        return refuse(req, p, err);
    }
    least_free(&l);
    if (rc < 0)
        return fail_oom(err);

    p->c.plan.required_budget = p->required_budget;
    p->c.plan.budget = req->budget;
    p->used_tokens = p->system_tokens + p->tools_tokens + p->c.plan.used_tokens +
                     total_tokens(p->markers, p->n_markers);
    assert(p->used_tokens + p->reserve_tokens <= req->budget);

    return 0;
}

const char *chat_plan_kind_name(chat_plan_kind k)
{
    static const char *const names[] = {
        [CHAT_PLAN_FRESH] = "fresh",
        [CHAT_PLAN_EXTENDED] = "extended",
        [CHAT_PLAN_RECOMPACTED] = "recompacted",
    };
    return names[k];
}

void chat_plan_free(chat_plan *p)
{
    chat_classes_free(&p->classes);
    compaction_request_free(&p->req);
    free(p->keys);
    free(p->calls_share);
    free(p->share_of);
    free(p->run_start);
    free(p->ident);
    compaction_free(&p->c);
    chat_markers_free(p->markers, p->n_markers);
    memset(p, 0, sizeof(*p));
}
