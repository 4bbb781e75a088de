/* What fills a chat plan's required budget, by kind. */
#include "required_budget.h"

#include <stdlib.h>

static const struct {
    const char *name, *advice;
} kinds[REQUIRED_KINDS] = {
    [REQUIRED_SYSTEM] = {"system prompt",
                         "the system prompt and system or developer messages are always kept"},
    [REQUIRED_TOOLS] = {"tool definitions", "send only the tools the next call may use"},
    [REQUIRED_RESERVE] = {"reserve_tokens", "the reply's room comes first: lower reserve_tokens"},
    [REQUIRED_MARKERS] = {"loss markers",
                          "each run of dropped messages costs a marker that says how to get it "
                          "back"},
    [REQUIRED_USER] = {"user messages",
                       "user turns state constraints once and are protected: give one "
                       "annotations[].class \"derivable\" when it is stated elsewhere"},
    [REQUIRED_PROSE] = {"assistant prose",
                        "assistant text is protected by default: set policy.assistant_text "
                        "to \"derivable\" when plans and conclusions are kept elsewhere"},
    [REQUIRED_EXCHANGES] = {"tool calls and results",
                            "a tool in no policy list is taken to have side effects: list "
                            "tools whose output can be read again in policy.read_only_tools"},
    [REQUIRED_THINKING] = {"thinking of the tool loop in flight",
                           "the provider needs it back as sent: raise the budget for this "
                           "loop, or compact after the next user turn"},
    [REQUIRED_OPAQUE] = {"opaque state priced by its bytes",
                         "reasoning items go back with the items they led to: those of "
                         "earlier responses go with them, so policy.assistant_text "
                         "\"derivable\" and policy.read_only_tools let them go"},
    [REQUIRED_MEDIA] = {"media at its stated bound",
                        "give the message annotations[].tokens with its real count, or send "
                        "a smaller file"},
    [REQUIRED_WHOLE] = {"blocks kept whole",
                        "a block of a type compactd does not know is protected as sent"},
    [REQUIRED_DERIVABLE] = {"derivable messages",
                            "kept in their cheapest form: a summary, a pointer or a marker"},
};

const char *chat_required_kind_name(chat_required_kind k)
{
    return k < REQUIRED_KINDS ? kinds[k].name : "unknown";
}

const char *chat_required_kind_advice(chat_required_kind k)
{
    return k < REQUIRED_KINDS ? kinds[k].advice : "";
}

/* The kind a kept message's own tokens are (what is left once its opaque
 * state and media are counted apart), in whatever form it is kept: a
 * pointer to a tool result costs what it does because the result is
 * protected, and the advice is the same. */
static chat_required_kind message_kind(const chat_message *m, unit_class cls)
{
    if (m->pinned)
        return REQUIRED_THINKING;
    if (m->protect)
        return REQUIRED_WHOLE;
    if (cls != UNIT_PROTECTED)
        return REQUIRED_DERIVABLE;
    switch (m->role) {
    case ROLE_SYSTEM:
    case ROLE_DEVELOPER:
        return REQUIRED_SYSTEM;
    case ROLE_USER:
        return m->results_only ? REQUIRED_EXCHANGES : REQUIRED_USER;
    case ROLE_TOOL:
        return REQUIRED_EXCHANGES;
    case ROLE_ASSISTANT:
        break;
    }
    return chat_has_prose(m) ? REQUIRED_PROSE : REQUIRED_EXCHANGES;
}

static int64_t take(int64_t *left, int64_t want)
{
    int64_t t = want < 0 ? 0 : want < *left ? want : *left;
    *left -= t;
    return t;
}

static int larger_first(const void *a, const void *b)
{
    const chat_required_share *x = a, *y = b;
    if (x->tokens != y->tokens)
        return x->tokens > y->tokens ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

size_t chat_required_shares(const chat_request *req, const chat_plan *p,
                            chat_required_share out[REQUIRED_KINDS])
{
    int64_t t[REQUIRED_KINDS] = {0};
    t[REQUIRED_SYSTEM] = p->system_tokens;
    t[REQUIRED_TOOLS] = p->tools_tokens;
    t[REQUIRED_RESERVE] = p->reserve_tokens;
    for (size_t k = 0; k < p->n_markers; k++)
        t[REQUIRED_MARKERS] += p->markers[k].tokens;
    for (size_t i = 0; p->c.plan.entries && i < p->c.plan.n && i < req->n; i++) {
        const plan_entry *e = &p->c.plan.entries[i];
        const chat_message *m = &req->m[i];
        if (e->decision == DECISION_DROPPED)
            continue;
        int64_t left = e->cost;
        chat_required_kind own = message_kind(m, p->units[i].cls);
        /* Opaque state stays in every form; media only where the message
         * is kept as it is. A pinned message is the loop's, whole. */
        if (own != REQUIRED_THINKING) {
            t[REQUIRED_OPAQUE] += take(&left, m->fixed_tokens);
            if (m->sealed_state) /* in every form, as its bound or its annotation */
                t[REQUIRED_OPAQUE] += take(&left, m->note.has_tokens ? m->note.tokens : m->bound_tokens);
            else if (e->decision == DECISION_PRESERVED && !m->note.has_tokens)
                t[REQUIRED_MEDIA] += take(&left, m->bound_tokens);
        }
        t[own] += left;
    }
    size_t n = 0;
    for (int k = 0; k < REQUIRED_KINDS; k++)
        if (t[k] > 0)
            out[n++] = (chat_required_share){(chat_required_kind)k, t[k]};
    qsort(out, n, sizeof(*out), larger_first);
    return n;
}
