/* Loss markers: their text, their place and their price. See
 * chat_markers.h. */
#include "chat_markers.h"

#include "chat_price.h"

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

/* The marker's text: which messages went, why, and the hints of those
 * dropped over budget (each exchange's once). */
char *chat_marker_text(const chat_plan *p, const plan_entry *e, size_t first, size_t last,
                       int lost, size_t *len)
{
    size_t room = 200;
    for (size_t i = first; i <= last; i++)
        room += p->classes.hint[i].len + 2;
    char *t = malloc(room), *end = t;
    if (!t)
        return NULL;
    if (!e) /* priced alone: the longest header any run could have */
        end += sprintf(end, "[compactd: messages %zu-%zu were dropped", p->c.plan.n, p->c.plan.n);
    else if (first == last)
        end += sprintf(end, "[compactd: message %zu was dropped", first);
    else
        end += sprintf(end, "[compactd: messages %zu-%zu were dropped", first, last);
    if (!lost) {
        end += sprintf(end, " as redundant]");
        *len = (size_t)(end - t);
        return t;
    }
    end += sprintf(end, " to fit the token budget");
    const char *prev = NULL;
    int any = 0;
    for (size_t i = first; i <= last; i++) {
        const chat_str *h = &p->classes.hint[i];
        if ((e && e[i].reason != DROP_OVER_BUDGET) || h->len == 0 || h->s == prev)
            continue;
        end += sprintf(end, any ? "; " : ". Re-acquire before relying on them: ");
        memcpy(end, h->s, h->len);
        end += h->len;
        prev = h->s;
        any = 1;
    }
    if (!any)
        end += sprintf(end, "; no re-acquire hint was given");
    *end++ = ']';
    *len = (size_t)(end - t);
    return t;
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

int chat_markers_build(const chat_request *req, const chat_plan *p, const plan_entry *e,
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
        chat_placement pl = chat_marker_place_run(req, first, last, lost, at_start, prev);
        if (!pl.need)
            continue;
        if (n == cap) {
            chat_marker *more = realloc(mk, 2 * cap * sizeof(*mk));
            if (!more)
                goto fail;
            mk = more;
            cap *= 2;
        }
        chat_marker *m = &mk[n];
        *m = (chat_marker){first, last, pl.place, pl.at, pl.role, NULL, 0, 0};
        if (!(m->text = chat_marker_text(p, e, first, last, lost, &m->len)))
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
    *out = mk;
    *nout = n;
    return 0;
fail:
    chat_markers_free(mk, n);
    return -1;
}
