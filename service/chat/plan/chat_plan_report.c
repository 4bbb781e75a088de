/* What an answer and the decision log report of a chat plan, message by
 * message, where that is not the planner's unit as it is: narration's calls
 * counted with it, and reasoning that goes with the calls it led to taking
 * their class and decision. See chat_plan.h. */
#include "chat_plan.h"

int chat_plan_calls_dropped(const chat_plan *p, size_t i)
{
    size_t a = p->classes.calls_with[i];
    return a != SIZE_MAX && p->c.plan.entries[a].decision == DECISION_DROPPED;
}

void chat_plan_reported(const chat_request *req, const chat_plan *p, size_t i, unit_class *cls,
                        plan_entry *e)
{
    *cls = p->units[i].cls;
    *e = p->c.plan.entries[i];
    if (!chat_leads_calls(req, &p->classes, i))
        return;
    size_t a = p->classes.calls_with[i];
    *cls = p->units[a].cls;
    if (p->c.plan.entries[a].decision == DECISION_DROPPED)
        *e = (plan_entry){DECISION_DROPPED, p->c.plan.entries[a].reason, 0, 0};
}

void chat_plan_message_tokens(const chat_plan *p, size_t i, int64_t *tokens, int64_t *used)
{
    size_t a = p->classes.calls_with[i];
    const plan_entry *e = p->c.plan.entries;
    *tokens = p->units[i].tokens;
    *used = e[i].cost;
    if (a != SIZE_MAX) { /* narration and its reasoning: what they add is their own */
        *tokens += p->share_of[i];
        *used += e[a].decision == DECISION_DROPPED ? 0 : p->share_of[i];
    } else if (p->calls_share[i] > 0) { /* the results: they are not theirs */
        *tokens -= p->calls_share[i];
        *used -= e[i].decision == DECISION_DROPPED ? 0 : p->calls_share[i];
    }
}
