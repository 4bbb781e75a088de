/* Loss markers: their text, their place and their price. See
 * loss_markers.h. */
#include "loss_markers.h"

#include "chat_own.h"
#include "chat_price.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void chat_markers_free(chat_marker *mk, size_t n)
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
char *chat_marker_text(const chat_plan *p, const plan_entry *e, size_t first, size_t last,
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
        end += sprintf(end, CHAT_MARKER_RUN, p->c.plan.n, p->c.plan.n);
    else if (first == last)
        end += sprintf(end, CHAT_MARKER_ONE, first);
    else
        end += sprintf(end, CHAT_MARKER_RUN, first, last);
    if (!lost && absorb == SIZE_MAX) {
        end += sprintf(end, CHAT_MARKER_REDUNDANT);
        *len = (size_t)(end - t);
        return t;
    }
    end += sprintf(end, CHAT_MARKER_LOST);
    char *lists = end;
    end = marker_list(end, c->hint, c->tail_hint, e, first, last, absorb, CHAT_MARKER_REACQUIRE);
    end = marker_list(end, c->ran, c->tail_ran, e, first, last, absorb, CHAT_MARKER_RAN);
    if (end == lists)
        end += sprintf(end, CHAT_MARKER_NO_HINT);
    *end++ = ']';
    *len = (size_t)(end - t);
    return t;
}

/* A marker compactd wrote, fed back and kept, beside messages dropped now
 * goes with them: its lists join the new run's marker, so markers never
 * stack. Returns whether a decision changed. */
int chat_markers_merge_own(const chat_plan *p, size_t n, plan_entry *e)
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

chat_placement chat_marker_place_run(const chat_request *req, size_t first, size_t last, int lost,
                                     int at_start, chat_role prev)
{
    int whole = at_start && last + 1 == req->n;
    chat_placement pl = {lost || whole, MARKER_STANDALONE, last + 1, req->rules->marker_role};
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

int chat_markers_attached(const chat_marker *mk, size_t n, const plan_entry *e)
{
    for (size_t k = 0; k < n; k++)
        if (mk[k].place == MARKER_APPEND && dropped(&e[mk[k].at]))
            return 0;
    return 1;
}

int chat_markers_build(const chat_request *req, const chat_plan *p, const plan_entry *e,
                       const chat_counter *cnt, chat_marker **out, size_t *nout, int64_t *tokens)
{
    return chat_markers_build_runs(req, p, e, NULL, cnt, out, nout, tokens);
}

int chat_markers_build_runs(const chat_request *req, const chat_plan *p, const plan_entry *e,
                            const unsigned char *run_start, const chat_counter *cnt,
                            chat_marker **out, size_t *nout, int64_t *tokens)
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
        for (; i < req->n && dropped(&e[i]) && !(i > first && run_start && run_start[i]); i++)
            lost |= e[i].reason == DROP_OVER_BUDGET;
        size_t last = --i;
        chat_placement pl = chat_marker_place_run(req, first, last, lost, at_start, prev);
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
        if (!(m->text = chat_marker_text(p, e, first, last, absorb, lost, &m->len)))
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
    chat_markers_free(mk, n);
    return -1;
}
