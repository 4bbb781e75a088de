/* Chat compaction planning: units from messages, then the planner and the
 * loss markers until both fit. See chat_plan.h. */
#include "chat_plan.h"

#include "chat_own.h"
#include "chat_price.h"
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

/* ---- Units ---- */

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
    if (!p->keys || chat_classify(req, &p->classes) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &req->m[i];
        plan_unit *u = &p->units[i];
        int klen = snprintf(p->keys[i], CHAT_KEY_MAX, "msg%zu", i);
        sha256_hex(m->json.s, m->json.len, p->sha256[i]);
        u->key = p->keys[i];
        u->key_len = (size_t)klen;
        u->cls = p->classes.cls[i];
        u->has_text = 1;
        u->text = m->json.s;
        u->text_len = m->json.len;
        u->priority = m->note.has_priority ? m->note.priority : 0;
        size_t own = p->classes.owner[i];
        if (own != SIZE_MAX) {
            u->group = p->keys[own];
            u->group_len = strlen(p->keys[own]);
        }
        chat_costs costs;
        size_t plen = chat_pointer(p, i, ptr);
        if (chat_price_message(m, p->sha256[i], ptr, plen, cnt, &costs) != 0)
            return -1;
        u->tokens = costs.full;
        /* compactd's own marker or pointer is never spilled again: a
         * pointer to it would be no smaller than it. */
        u->pointer_tokens = p->classes.own[i] ? costs.full : costs.externalized;
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
        int64_t t = cnt->count(cnt->ctx, req->system[k].s, req->system[k].len);
        if (t < 0)
            return -1;
        p->system_tokens += t;
    }
    if (req->n_system > 0)
        p->system_tokens += CHAT_MESSAGE_FRAME_TOKENS;
    return 0;
}

/* ---- Loss markers ---- */

static void markers_free(chat_marker *mk, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(mk[i].text);
    free(mk);
}

static int dropped(const plan_entry *e)
{
    return e->decision == DECISION_DROPPED;
}

/* Appends one of the marker's lists after head: the items of the messages
 * dropped over budget (each exchange's once), with those of the markers
 * they ended in, and of the marker at `absorb` (SIZE_MAX: none). Returns
 * the new end. */
static char *marker_list(char *end, const chat_str *items, const chat_str *tails,
                         const plan_entry *e, size_t first, size_t last, size_t absorb,
                         const char *head)
{
    const char *prev = NULL;
    int any = 0;
    for (size_t i = first; i <= last + 1; i++) {
        size_t at = i <= last ? i : absorb;
        if (at == SIZE_MAX || (i <= last && e && e[at].reason != DROP_OVER_BUDGET))
            continue;
        const chat_str *list[2] = {i <= last ? &items[at] : NULL, &tails[at]};
        for (int k = 0; k < 2; k++) {
            const chat_str *h = list[k];
            if (!h || h->len == 0 || h->s == prev)
                continue;
            end += sprintf(end, "%s", any ? "; " : head);
            memcpy(end, h->s, h->len);
            end += h->len;
            prev = h->s;
            any = 1;
        }
    }
    return end;
}

/* The marker's text (chat_own.h has its grammar): which messages went, why,
 * the read-only calls that would re-acquire them, and the calls that
 * already ran and must not run again. */
static char *marker_text(const chat_plan *p, const plan_entry *e, size_t first, size_t last,
                         size_t absorb, int lost, size_t *len)
{
    const chat_classes *c = &p->classes;
    size_t room = 200 + strlen(CHAT_MARKER_REACQUIRE) + strlen(CHAT_MARKER_RAN);
    for (size_t i = first; i <= last; i++)
        room += c->hint[i].len + c->ran[i].len + c->tail_hint[i].len + c->tail_ran[i].len + 8;
    if (absorb != SIZE_MAX)
        room += c->tail_hint[absorb].len + c->tail_ran[absorb].len + 4;
    char *t = malloc(room), *end = t;
    if (!t)
        return NULL;
    if (!e) /* priced alone: the longest header any run could have */
        end += sprintf(end, CHAT_MARKER_OPEN "s %zu-%zu were dropped", p->c.plan.n, p->c.plan.n);
    else if (first == last)
        end += sprintf(end, CHAT_MARKER_OPEN " %zu was dropped", first);
    else
        end += sprintf(end, CHAT_MARKER_OPEN "s %zu-%zu were dropped", first, last);
    if (!lost && absorb == SIZE_MAX) {
        end += sprintf(end, " as redundant]");
        *len = (size_t)(end - t);
        return t;
    }
    end += sprintf(end, " to fit the token budget");
    char *lists = end;
    end = marker_list(end, c->hint, c->tail_hint, e, first, last, absorb, CHAT_MARKER_REACQUIRE);
    end = marker_list(end, c->ran, c->tail_ran, e, first, last, absorb, CHAT_MARKER_RAN);
    if (end == lists)
        end += sprintf(end, "; no re-acquire hint was given");
    *end++ = ']';
    *len = (size_t)(end - t);
    return t;
}

/* A marker compactd wrote, fed back and kept, beside messages dropped now
 * goes with them: its lists join the new run's marker, so markers never
 * stack. Returns whether a decision changed. */
static int merge_own_markers(const chat_plan *p, size_t n, plan_entry *e)
{
    int changed = 0, again = 1;
    while (again) {
        again = 0;
        for (size_t i = 0; i < n; i++) {
            if (p->classes.own[i] != CHAT_OWN_MARKER || dropped(&e[i]))
                continue;
            if ((i > 0 && dropped(&e[i - 1])) || (i + 1 < n && dropped(&e[i + 1]))) {
                e[i].decision = DECISION_DROPPED;
                e[i].reason = DROP_OVER_BUDGET;
                e[i].cost = 0;
                again = changed = 1;
            }
        }
    }
    return changed;
}

/* Where a marker goes. Where turns need not alternate, a message of the
 * rules' marker role goes anywhere. Where they alternate from user, a
 * marker is a turn of its own when that keeps the alternation, else a text
 * block at the end of the neighbouring user turn; a run of redundant
 * messages needs one only to keep the alternation, or when it is the whole
 * history (an empty history is no history). */
typedef struct {
    int need;
    chat_marker_place place;
    size_t at;
    chat_role role;
} placement;

static placement place_marker(const chat_request *req, size_t first, size_t last, int lost,
                              int at_start, chat_role prev)
{
    int whole = at_start && last + 1 == req->n;
    placement pl = {lost || whole, MARKER_STANDALONE, last + 1, req->rules->marker_role};
    if (!req->rules->alternating)
        return pl;
    int has_next = last + 1 < req->n;
    chat_role next = has_next ? req->m[last + 1].role : ROLE_USER;
    chat_role own = at_start || prev == ROLE_ASSISTANT ? ROLE_USER : ROLE_ASSISTANT;
    int breaks = has_next && (at_start ? next == ROLE_ASSISTANT : next == prev);
    pl.need = lost || whole || breaks;
    pl.role = own;
    if (!has_next || next != own)
        return pl;
    /* A turn of role `own` would meet a turn of the same role. */
    pl.place = MARKER_APPEND;
    pl.at = own == ROLE_USER ? last + 1 : first - 1;
    return pl;
}

/* Room for one more marker. Returns 0 or -1. */
static int markers_grow(chat_marker **mk, size_t n, size_t *cap)
{
    if (n < *cap)
        return 0;
    chat_marker *more = realloc(*mk, 2 * *cap * sizeof(**mk));
    if (!more)
        return -1;
    *mk = more;
    *cap *= 2;
    return 0;
}

/* A kept turn that ended in one of compactd's markers, which no new marker
 * took the place of, gets that marker again, as it was: appended after its
 * blocks and priced as a marker, never as part of the turn. Markers stay in
 * order of position. Returns 0 or -1. */
static int reappend_tails(const chat_request *req, const plan_entry *e, const chat_counter *cnt,
                          chat_marker **mk, size_t *n, size_t *cap, int64_t *tokens)
{
    for (size_t i = 0, j = 0; i < req->n; i++) {
        while (j < *n && (*mk)[j].at <= i)
            j++;
        if (!req->m[i].tail_marker || dropped(&e[i]))
            continue;
        int taken = 0;
        for (size_t k = 0; k < j; k++)
            taken |= (*mk)[k].at == i && (*mk)[k].absorbs_tail;
        if (taken)
            continue;
        if (markers_grow(mk, *n, cap) != 0)
            return -1;
        chat_marker m = {i, i, MARKER_APPEND, i, req->m[i].role, 1, NULL, req->m[i].tail.len, 0};
        if (!(m.text = malloc(m.len ? m.len : 1)))
            return -1;
        memcpy(m.text, req->m[i].tail.s, m.len);
        m.tokens = chat_price_text_message(chat_role_name(m.role), m.text, m.len, cnt);
        if (m.tokens < 0) {
            free(m.text);
            return -1;
        }
        *tokens += m.tokens;
        memmove(&(*mk)[j + 1], &(*mk)[j], (*n - j) * sizeof(**mk));
        (*mk)[j++] = m;
        (*n)++;
    }
    return 0;
}

/* Builds the markers for the decisions in e. Returns 0 with *tokens their
 * total, or -1 when out of memory. */
static int build_markers(const chat_request *req, const chat_plan *p, const plan_entry *e,
                         const chat_counter *cnt, chat_marker **out, size_t *nout, int64_t *tokens)
{
    size_t cap = 8, n = 0;
    chat_marker *mk = malloc(cap * sizeof(*mk));
    int at_start = 1;
    chat_role prev = ROLE_USER;
    *tokens = 0;
    if (!mk)
        return -1;
    for (size_t i = 0; i < req->n; i++) {
        if (!dropped(&e[i])) {
            at_start = 0;
            prev = req->m[i].role;
            continue;
        }
        size_t first = i;
        int lost = 0;
        for (; i < req->n && dropped(&e[i]); i++)
            lost |= e[i].reason == DROP_OVER_BUDGET;
        size_t last = --i;
        placement pl = place_marker(req, first, last, lost, at_start, prev);
        if (!pl.need)
            continue;
        if (markers_grow(&mk, n, &cap) != 0)
            goto fail;
        chat_marker *m = &mk[n];
        *m = (chat_marker){first, last, pl.place, pl.at, pl.role, 0, NULL, 0, 0};
        /* The first marker appended to a turn that ends in one of compactd's
         * takes that one's place. */
        m->absorbs_tail = pl.place == MARKER_APPEND && req->m[pl.at].tail_marker &&
                          !(n > 0 && mk[n - 1].at == pl.at && mk[n - 1].absorbs_tail);
        size_t absorb = m->absorbs_tail ? pl.at : SIZE_MAX;
        if (!(m->text = marker_text(p, e, first, last, absorb, lost, &m->len)))
            goto fail;
        n++;
        m->tokens = chat_price_text_message(chat_role_name(pl.role), m->text, m->len, cnt);
        if (m->tokens < 0)
            goto fail;
        *tokens += m->tokens;
        if (pl.place == MARKER_STANDALONE) {
            at_start = 0;
            prev = pl.role;
        }
    }
    if (reappend_tails(req, e, cnt, &mk, &n, &cap, tokens) != 0)
        goto fail;
    *out = mk;
    *nout = n;
    return 0;
fail:
    markers_free(mk, n);
    return -1;
}

/* ---- The plan ---- */

static void recount(plan_result *r)
{
    r->used_tokens = 0;
    r->n_externalized = 0;
    for (size_t i = 0; i < r->n; i++) {
        r->used_tokens += r->entries[i].cost;
        r->n_externalized += r->entries[i].decision == DECISION_EXTERNALIZED;
    }
}

static int fail_oom(compactd_error *err)
{
    return error_set(err, ERR_INTERNAL, "out of memory while planning");
}

/* A derivable message alone, or a derivable tool exchange: placed or
 * dropped whole, messages [first, last]. */
typedef struct {
    size_t first, last;
    plan_decision how; /* its cheapest form */
    int64_t cheapest;
} item_t;

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
                             item_t *items)
{
    size_t k = 0;
    for (size_t i = 0; i < req->n; i++) {
        if (p->units[i].cls != UNIT_DERIVABLE)
            continue;
        item_t *it = &items[k++];
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
        char *t = marker_text(p, NULL, it->first, it->last, SIZE_MAX, 1, &len);
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
        if (drop < it->cheapest) {
            it->how = DECISION_DROPPED;
            it->cheapest = drop;
        }
        i = it->last;
    }
    return k;
}

/* Puts every derivable item in its cheapest form. */
static void apply_cheapest(const plan_unit *u, const item_t *items, size_t nitems, plan_result *r)
{
    for (size_t k = 0; k < nitems; k++)
        for (size_t j = items[k].first; j <= items[k].last; j++) {
            plan_entry *e = &r->entries[j];
            plan_decision how = items[k].how;
            if (how == DECISION_SUMMARIZED && !u[j].has_summary)
                how = DECISION_PRESERVED;
            e->decision = how;
            e->reason = how == DECISION_DROPPED ? DROP_OVER_BUDGET : DROP_NONE;
            e->cost = how == DECISION_PRESERVED      ? u[j].tokens
                      : how == DECISION_SUMMARIZED   ? u[j].summary_tokens
                      : how == DECISION_EXTERNALIZED ? u[j].pointer_tokens
                                                     : 0;
        }
    recount(r);
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
                      const item_t *items, size_t nitems, int64_t reserved, plan_result *r,
                      chat_marker **mk, size_t *nmk)
{
    int64_t mtok;
    int rc = plan_run(p->units, req->n, room - reserved, req->mode, r);
    if (rc != PLAN_OK)
        return rc == PLAN_NOMEM ? -1 : 1;
    apply_cheapest(p->units, items, nitems, r);
    if (merge_own_markers(p, req->n, r->entries))
        recount(r);
    if (build_markers(req, p, r->entries, cnt, mk, nmk, &mtok) != 0)
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
    if (merge_own_markers(p, req->n, r->entries))
        recount(r);
    if (build_markers(req, p, r->entries, cnt, mk, nmk, &mtok) != 0) {
        plan_result_free(r);
        return -1;
    }
    *over = r->used_tokens + mtok - room;
    if (*over <= 0)
        return 1;
    plan_result_free(r);
    markers_free(*mk, *nmk);
    return 0;
}

static void keep(chat_plan *p, plan_result *r, chat_marker *mk, size_t nmk)
{
    p->c.plan = *r;
    p->markers = mk;
    p->n_markers = nmk;
}

/* Plans within room: the planner first, shrunk by what the markers of its
 * drops take, for a few rounds; then a bisection of the planner's budget
 * for the fullest plan that fits with its markers (keeping a message can
 * split a run in two, so fitting is not monotone in the budget); else the
 * plan of the least budget. Returns 0, 1 when nothing fits, -1 when out of
 * memory. */
static int settle(const chat_request *req, const chat_counter *cnt, chat_plan *p, int64_t room,
                  const item_t *items, size_t nitems, int64_t reserved)
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
                markers_free(mk, nmk);
            } else {
                if (found) {
                    plan_result_free(&p->c.plan);
                    markers_free(p->markers, p->n_markers);
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
    return least_plan(req, cnt, p, room, items, nitems, reserved, &p->c.plan, &p->markers,
                      &p->n_markers);
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
    int rc = build_markers(req, p, e, cnt, &mk, &nmk, tokens);
    markers_free(mk, nmk);
    free(e);
    return rc;
}

int chat_plan_run(const chat_request *req, const chat_counter *cnt, chat_plan *p,
                  compactd_error *err)
{
    memset(p, 0, sizeof(*p));
    p->failed_index = SIZE_MAX;
    compaction_timestamp(p->c.created_at);
    p->c.plan.n = req->n;
    item_t *items = malloc((req->n ? req->n : 1) * sizeof(*items));
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
    int64_t reserved = derivable + redundant;
    p->required_budget = p->system_tokens + cheapest + reserved;

    int64_t room = req->budget - p->system_tokens;
    rc = req->budget < p->required_budget ? 1 : settle(req, cnt, p, room, items, nitems, reserved);
    free(items);
    if (rc < 0)
        return fail_oom(err);
    if (rc > 0) {
        /* Name the protected message that does not fit beside the rest. */
        plan_result r;
        rc = plan_run(p->units, req->n, room - reserved, req->mode, &r);
        if (rc == PLAN_FAILED)
            p->failed_index = r.failed_index;
        plan_result_free(&r);
        if (rc == PLAN_NOMEM)
            return fail_oom(err);
        return error_set(err, ERR_COMPACTION_FAILURE,
                         "the protected messages%s cannot fit with the cheapest form of the "
                         "others (a loss marker for each one dropped): budget %lld is below the "
                         "required %lld. Refusing lossy compaction.",
                         req->n_system ? " and the system prompt" : "", (long long)req->budget,
                         (long long)p->required_budget);
    }

    p->c.plan.required_budget = p->required_budget;
    p->c.plan.budget = req->budget;
    p->used_tokens =
        p->system_tokens + p->c.plan.used_tokens + total_tokens(p->markers, p->n_markers);
    assert(p->used_tokens <= req->budget);

    return 0;
}

void chat_plan_free(chat_plan *p)
{
    chat_classes_free(&p->classes);
    compaction_request_free(&p->req);
    free(p->keys);
    compaction_free(&p->c);
    markers_free(p->markers, p->n_markers);
    memset(p, 0, sizeof(*p));
}
