/* The answer of messages/compact: the compacted history in the request's
 * format, one decision per input message, and the figures of the plan. */
#include "chat_codec.h"

#include "chat_budget.h"
#include "chat_cache.h"
#include "chat_output.h"
#include "required_budget.h"
#include "identifiers.h"
#include "json_encode.h"
#include "pointer.h"

#include <stdlib.h>
#include <string.h>

/* ---- The history ---- */

static void emit_json(void *ctx, const chat_input *in, const chat_plan *p, size_t i,
                      const chat_marker *standalone, const chat_marker *const *extra,
                      size_t n_extra)
{
    jw *w = ctx;
    char ptr[CHAT_KEY_MAX + POINTER_OVERHEAD + 1];
    if (standalone) {
        in->codec->render_marker(w, standalone);
        return;
    }
    const chat_message *m = &in->req.m[i];
    plan_decision d = p->c.plan.entries[i].decision;
    if (p->classes.calls_with[i] != SIZE_MAX &&
        (chat_plan_calls_dropped(p, i) || d == DECISION_EXTERNALIZED)) {
        /* Narration: its calls go with their results, or stay as sent
         * beside its pointer. */
        size_t plen = chat_pointer(p, i, ptr);
        in->codec->render_narration(w, in, i, d == DECISION_EXTERNALIZED ? ptr : NULL, plen,
                                    !chat_plan_calls_dropped(p, i));
        return;
    }
    switch (p->c.plan.entries[i].decision) {
    case DECISION_PRESERVED:
        if (n_extra)
            in->codec->render_appended(w, in, i, extra, n_extra);
        else
            jw_raw(w, m->json.s, m->json.len);
        break;
    case DECISION_SUMMARIZED:
        in->codec->render_replaced(w, in, i, m->note.summary.s, m->note.summary.len, extra,
                                   n_extra);
        break;
    case DECISION_EXTERNALIZED: {
        size_t plen = chat_pointer(p, i, ptr);
        in->codec->render_replaced(w, in, i, ptr, plen, extra, n_extra);
        break;
    }
    case DECISION_DROPPED:
    case DECISION_UNSET:
        break;
    }
}

/* ---- Decisions ---- */

static void lost_identifiers(jw *w, const chat_message *m)
{
    identifiers_result lost = {0};
    jw_member(w, "lost_identifiers");
    jw_array_open(w);
    /* Identifiers are looked for in the texts the summary replaces. */
    for (size_t k = 0; k < m->n_payload && !w->oom; k++) {
        if (identifiers_lost(m->payload[k].s, m->payload[k].len, m->note.summary.s,
                             m->note.summary.len, &lost) != 0)
            w->oom = 1;
        for (size_t j = 0; j < lost.n; j++)
            jw_string(w, m->payload[k].s + lost.spans[j].off, lost.spans[j].len);
    }
    jw_array_close(w);
}

static void decisions(jw *w, const char *session, const chat_input *in, const chat_plan *p)
{
    char ptr[CHAT_KEY_MAX + POINTER_OVERHEAD + 1];
    jw_member(w, "decisions");
    jw_array_open(w);
    for (size_t i = 0; i < in->req.n; i++) {
        const plan_unit *u = &p->units[i];
        unit_class cls;
        plan_entry shown;
        chat_plan_reported(&in->req, p, i, &cls, &shown);
        const plan_entry *e = &shown;
        jw_object_open(w);
        jw_member_int(w, "index", (int64_t)i);
        jw_member_cstring(w, "class", unit_class_name(cls));
        jw_member_cstring(w, "decision", plan_decision_name(e->decision));
        int64_t tokens, used;
        chat_plan_message_tokens(p, i, &tokens, &used);
        jw_member_int(w, "tokens", tokens);
        jw_member_int(w, "used_tokens", used);
        if (in->req.m[i].thinking_dropped)
            jw_member_int(w, "thinking_dropped", in->req.m[i].thinking_dropped);
        if (chat_plan_calls_dropped(p, i) && in->req.m[i].n_calls > 0)
            jw_member_int(w, "calls_dropped", (int64_t)in->req.m[i].n_calls);
        if (e->decision == DECISION_DROPPED) {
            jw_member_cstring(w, "reason", plan_reason_name(e->reason));
            const chat_str *h = &p->classes.hint[i];
            if (h->len)
                jw_member_string(w, "reacquire", h->s, h->len);
        } else if (e->decision == DECISION_EXTERNALIZED) {
            size_t plen = chat_pointer(p, i, ptr);
            jw_member_string(w, "key", u->key, u->key_len);
            jw_member_string(w, "pointer", ptr, plen);
            jw_member_cstring(w, "sha256", p->sha256[i]);
            char *href = spill_href(session, u->key, u->key_len, p->sha256[i]);
            if (href)
                jw_member_cstring(w, "href", href);
            else
                w->oom = 1;
            free(href);
        } else if (e->decision == DECISION_SUMMARIZED) {
            lost_identifiers(w, &in->req.m[i]);
        }
        jw_object_close(w);
    }
    jw_array_close(w);
}

/* ---- Documents ---- */

char *chat_encode_answer(const char *session, const chat_input *in, const chat_plan *p, size_t *len)
{
    size_t hint = 512 + in->req.n * 160;
    for (size_t i = 0; i < in->req.n; i++)
        hint += in->req.m[i].json.len;
    jw w;
    jw_init(&w, hint);
    jw_object_open(&w);
    jw_member_cstring(&w, "format", in->codec->format->name);
    jw_member_cstring(&w, "session", session);
    jw_member(&w, "dry_run");
    jw_bool(&w, in->req.dry_run);
    jw_member(&w, "messages");
    chat_cache_placed placed = {NULL, 0};
    if (chat_cache_wanted(in)) {
        /* Rendered first, then its breakpoints put in place. */
        jw msgs;
        size_t mlen = 0;
        jw_init(&msgs, hint);
        jw_array_open(&msgs);
        chat_output_walk(in, p, emit_json, &msgs);
        jw_array_close(&msgs);
        char *m = jw_finish(&msgs, &mlen);
        if (!m || chat_cache_place(in, p, m, mlen, &w, &placed) != 0)
            w.oom = 1;
        free(m);
    } else {
        jw_array_open(&w);
        chat_output_walk(in, p, emit_json, &w);
        jw_array_close(&w);
    }
    if (in->system) {
        char *s = json_dumps(in->system, JSON_COMPACT | JSON_ENCODE_ANY);
        if (s) {
            jw_member(&w, in->codec->system_member);
            jw_raw(&w, s, strlen(s));
        } else {
            w.oom = 1;
        }
        json_text_free(s);
    }
    jw_member_int(&w, "budget", in->req.budget);
    jw_member_int(&w, "used_tokens", p->used_tokens);
    jw_member_int(&w, "remaining_tokens", in->req.budget - p->used_tokens - p->reserve_tokens);
    jw_member_int(&w, "required_budget", p->required_budget);
    jw_member_int(&w, "system_tokens", p->system_tokens);
    jw_member_int(&w, "tools_tokens", p->tools_tokens);
    jw_member_int(&w, "reserve_tokens", p->reserve_tokens);
    jw_member_int(&w, "marker_count", (int64_t)p->n_markers);
    jw_member_cstring(&w, "plan", chat_plan_kind_name(p->kind));
    jw_member_int(&w, "compact_to", in->req.compact_to);
    if (p->low_water > 0)
        jw_member_int(&w, "low_water", p->low_water);
    jw_member_cstring(&w, "tokenizer", in->tokenizer);
    chat_budget_basis(&w, in->codec->format, in->req.tokenizer, in->req.sealed);
    if (placed.w)
        chat_cache_report(&w, &placed);
    decisions(&w, session, in, p);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

/* The same by kind, largest first, each with its share in percent
 * (rounded down) and what would lower it. */
static void kinds_by_share(jw *w, const chat_input *in, const chat_plan *p)
{
    chat_required_share shares[REQUIRED_KINDS];
    size_t n = chat_required_shares(&in->req, p, shares);
    jw_member(w, "kinds");
    jw_array_open(w);
    for (size_t k = 0; k < n; k++) {
        jw_object_open(w);
        jw_member_cstring(w, "kind", chat_required_kind_name(shares[k].kind));
        jw_member_int(w, "tokens", shares[k].tokens);
        jw_member_int(w, "percent",
                      p->required_budget > 0 ? shares[k].tokens * 100 / p->required_budget : 0);
        jw_member_cstring(w, "advice", chat_required_kind_advice(shares[k].kind));
        jw_object_close(w);
    }
    jw_array_close(w);
}

/* What makes up required_budget: the system prompt, the tools, the reply's
 * room, each message the least plan keeps (in the form it keeps it) and
 * the loss markers; then the same by kind. */
static void required_by(jw *w, const chat_input *in, const chat_plan *p)
{
    int64_t markers = 0;
    for (size_t k = 0; k < p->n_markers; k++)
        markers += p->markers[k].tokens;
    jw_member(w, "required_by");
    jw_object_open(w);
    jw_member_int(w, "system_tokens", p->system_tokens);
    jw_member_int(w, "tools_tokens", p->tools_tokens);
    jw_member_int(w, "reserve_tokens", p->reserve_tokens);
    jw_member_int(w, "marker_tokens", markers);
    jw_member(w, "messages");
    jw_array_open(w);
    for (size_t i = 0; p->c.plan.entries && i < p->c.plan.n; i++) {
        unit_class cls;
        plan_entry e;
        chat_plan_reported(&in->req, p, i, &cls, &e);
        if (e.decision == DECISION_DROPPED)
            continue;
        int64_t tokens, used;
        chat_plan_message_tokens(p, i, &tokens, &used);
        jw_object_open(w);
        jw_member_int(w, "index", (int64_t)i);
        jw_member_cstring(w, "class", unit_class_name(cls));
        jw_member_cstring(w, "decision", plan_decision_name(e.decision));
        jw_member_int(w, "tokens", used);
        jw_object_close(w);
    }
    jw_array_close(w);
    kinds_by_share(w, in, p);
    jw_object_close(w);
}

char *chat_encode_failure(const compactd_error *err, const chat_input *in, const chat_plan *p,
                          size_t *len)
{
    jw w;
    jw_init(&w, 512);
    jw_object_open(&w);
    jw_member(&w, "error");
    jw_object_open(&w);
    jw_member_cstring(&w, "type", error_type(err->kind));
    jw_member_cstring(&w, "message", err->message);
    jw_member_int(&w, "budget", in->req.budget);
    jw_member_int(&w, "required_budget", p->required_budget);
    if (p->failed_index != SIZE_MAX) {
        const plan_unit *u = &p->units[p->failed_index];
        jw_member_int(&w, "index", (int64_t)p->failed_index);
        jw_member_int(&w, "tokens", u->tokens);
        jw_member_int(&w, "pointer_tokens", u->pointer_tokens);
    }
    required_by(&w, in, p);
    jw_object_close(&w);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

void chat_render_role_marker(jw *w, const chat_marker *mk)
{
    jw_object_open(w);
    jw_member_cstring(w, "role", chat_role_name(mk->role));
    jw_member_string(w, "content", mk->text, mk->len);
    jw_object_close(w);
}
