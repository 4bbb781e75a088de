/* The provider's rules over a history; see chat_check.h. */
#include "chat_check.h"

#include "bytemap.h"

#include <stdlib.h>
#include <string.h>

const char *chat_check_describe(chat_check_problem p)
{
    switch (p) {
    case CHECK_OK:
        return "valid";
    case CHECK_ORPHAN_RESULT:
        return "answers no call of the message before it";
    case CHECK_DUPLICATE_ANSWER:
        return "answers a call that was already answered";
    case CHECK_UNANSWERED_CALL:
        return "is a call that no result answers";
    case CHECK_DUPLICATE_CALL_ID:
        return "repeats the id of another call of the same message";
    case CHECK_REUSED_CALL_ID:
        return "repeats the id of a call of an earlier message: call ids must be unique in the "
               "history";
    case CHECK_ALTERNATION:
        return "breaks the alternation of turns (user first, then assistant and user in turn)";
    case CHECK_LEADER_ALONE:
        return "is not followed by the item of its response that it came before";
    case CHECK_OOM:
        return "could not be checked: out of memory";
    }
    return "unknown";
}

int chat_check_item_is_call(chat_check_problem p)
{
    return p == CHECK_UNANSWERED_CALL || p == CHECK_DUPLICATE_CALL_ID || p == CHECK_REUSED_CALL_ID;
}

static chat_check_result result(chat_check_problem p, size_t message, size_t item)
{
    chat_check_result r = {p, message, item};
    return r;
}

/* ---- The open caller ---- */

/* The calls being answered: those of one message, or of a run of messages
 * of one turn (chat_check_msg.joins). Their ids are in a map to their slot,
 * each slot naming its message and index there. Ids come from the request,
 * so the map's hash is the process's keyed one: every lookup is O(1)
 * whatever ids a client chooses. */
typedef struct {
    size_t at; /* the first caller; SIZE_MAX: none */
    bytemap ids;
    unsigned char *answered;
    size_t *slot_msg, *slot_k;
    size_t n;
    int any_answered;
} open_calls;

static void open_close(open_calls *o)
{
    bytemap_free(&o->ids);
    o->at = SIZE_MAX;
    o->n = 0;
    o->any_answered = 0;
}

/* Adds m[i]'s calls to the open ones. Returns CHECK_OK, or
 * CHECK_DUPLICATE_CALL_ID when an id is open already. */
static chat_check_result add_calls(open_calls *o, const chat_check_msg *m, size_t i)
{
    for (size_t k = 0; k < m[i].n_calls; k++) {
        if (bytemap_put_new(&o->ids, m[i].calls[k].id.s, m[i].calls[k].id.len, o->n))
            return result(CHECK_DUPLICATE_CALL_ID, i, k);
        o->answered[o->n] = 0;
        o->slot_msg[o->n] = i;
        o->slot_k[o->n++] = k;
    }
    return result(CHECK_OK, 0, 0);
}

/* Opens m[i]'s calls, with room for those of the messages that join its
 * turn. Returns CHECK_OK, CHECK_DUPLICATE_CALL_ID or CHECK_OOM. */
static chat_check_result open_calls_of(open_calls *o, const chat_check_msg *m, size_t n, size_t i)
{
    size_t room = m[i].n_calls;
    for (size_t j = i + 1; j < n && m[j].joins; j++)
        room += m[j].n_calls;
    open_close(o);
    if (bytemap_init(&o->ids, room) != 0)
        return result(CHECK_OOM, 0, 0);
    o->at = i;
    return add_calls(o, m, i);
}

/* 1 when id answers an open call (marked answered), 0 when it answers
 * none, -1 when its call was answered already. */
static int mark_answered(open_calls *o, const chat_str *id)
{
    size_t *k = bytemap_get(&o->ids, id->s, id->len);
    if (!k)
        return 0;
    if (o->answered[*k])
        return -1;
    o->answered[*k] = 1;
    o->any_answered = 1;
    return 1;
}

static chat_check_result unanswered(const open_calls *o)
{
    for (size_t k = 0; k < o->n; k++)
        if (!o->answered[k])
            return result(CHECK_UNANSWERED_CALL, o->slot_msg[k], o->slot_k[k]);
    return result(CHECK_OK, 0, 0);
}

/* ---- The history ---- */

/* Every call id of m[i] not seen in an earlier message; seen maps ids to
 * the message that made them. */
static chat_check_result unique_in_history(bytemap *seen, const chat_check_msg *m, size_t i)
{
    for (size_t k = 0; k < m[i].n_calls; k++) {
        size_t *at = bytemap_put_new(seen, m[i].calls[k].id.s, m[i].calls[k].id.len, i);
        if (at && *at != i)
            return result(CHECK_REUSED_CALL_ID, i, k);
    }
    return result(CHECK_OK, 0, 0);
}

static chat_check_result check_message(const chat_rules *rules, const chat_check_msg *m, size_t n,
                                       size_t i, open_calls *o, bytemap *seen)
{
    const chat_check_msg *x = &m[i];
    chat_check_result r = result(CHECK_OK, 0, 0);
    if (rules->alternating && x->role != (i % 2 == 0 ? ROLE_USER : ROLE_ASSISTANT))
        return result(CHECK_ALTERNATION, i, 0);
    if (x->leads && (i + 1 == n || !m[i + 1].joins))
        return result(CHECK_LEADER_ALONE, i, 0);
    /* A message of the caller's turn, before any answer, adds its calls. */
    if (x->joins && o->at != SIZE_MAX && !o->any_answered && x->n_answers == 0) {
        r = add_calls(o, m, i);
        if (r.problem == CHECK_OK && rules->unique_call_ids)
            r = unique_in_history(seen, m, i);
        return r;
    }
    /* The run of answers after the caller ends at the first other message. */
    if (rules->pairing == CHAT_PAIR_RESULT_RUN && o->at != SIZE_MAX &&
        x->role != rules->result_role) {
        if ((r = unanswered(o)).problem != CHECK_OK)
            return r;
        open_close(o);
    }
    if (x->n_answers > 0 && o->at == SIZE_MAX)
        return result(CHECK_ORPHAN_RESULT, i, 0);
    for (size_t k = 0; k < x->n_answers; k++) {
        int a = mark_answered(o, &x->answers[k]);
        if (a <= 0)
            return result(a < 0 ? CHECK_DUPLICATE_ANSWER : CHECK_ORPHAN_RESULT, i, k);
    }
    /* The one message after the caller answers all of it. */
    if (rules->pairing == CHAT_PAIR_NEXT_MESSAGE && o->at != SIZE_MAX) {
        if ((r = unanswered(o)).problem != CHECK_OK)
            return r;
        open_close(o);
    }
    if (x->n_calls > 0) {
        if ((r = open_calls_of(o, m, n, i)).problem != CHECK_OK)
            return r;
        if (rules->unique_call_ids)
            r = unique_in_history(seen, m, i);
    }
    return r;
}

chat_check_result chat_check(const chat_rules *rules, const chat_check_msg *m, size_t n)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        total += m[i].n_calls;
    /* An open run never holds more calls than the history makes. */
    open_calls o = {SIZE_MAX,
                    {0},
                    calloc(total, 1),
                    malloc(total * sizeof(size_t)),
                    malloc(total * sizeof(size_t)),
                    0,
                    0};
    bytemap seen = {0};
    chat_check_result r = result(CHECK_OOM, 0, 0);
    if (!o.answered || !o.slot_msg || !o.slot_k ||
        (rules->unique_call_ids && bytemap_init(&seen, total) != 0))
        goto done;
    r = result(CHECK_OK, 0, 0);
    for (size_t i = 0; i < n && r.problem == CHECK_OK; i++)
        r = check_message(rules, m, n, i, &o, &seen);
    if (r.problem == CHECK_OK && o.at != SIZE_MAX)
        r = unanswered(&o);
done:
    open_close(&o);
    bytemap_free(&seen);
    free(o.answered);
    free(o.slot_msg);
    free(o.slot_k);
    return r;
}
