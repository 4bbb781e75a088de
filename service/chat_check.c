/* The provider's rules over a history; see chat_check.h. */
#include "chat_check.h"

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
    case CHECK_ALTERNATION:
        return "breaks the alternation of turns (user first, then assistant and user in turn)";
    case CHECK_OOM:
        return "could not be checked: out of memory";
    }
    return "unknown";
}

static int same(const chat_str *a, const chat_str *b)
{
    return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

static chat_check_result result(chat_check_problem p, size_t message, size_t item)
{
    chat_check_result r = {p, message, item};
    return r;
}

/* The calls of m[open] waiting for an answer; answered[k] marks call k. A
 * message's calls are few: a linear search is the simple thing. */
static int answer(const chat_check_msg *caller, unsigned char *answered, const chat_str *id)
{
    for (size_t k = 0; k < caller->n_calls; k++)
        if (same(&caller->calls[k].id, id)) {
            if (answered[k])
                return -1;
            answered[k] = 1;
            return 1;
        }
    return 0;
}

static chat_check_result unanswered(const chat_check_msg *m, size_t open,
                                    const unsigned char *answered)
{
    for (size_t k = 0; k < m[open].n_calls; k++)
        if (!answered[k])
            return result(CHECK_UNANSWERED_CALL, open, k);
    return result(CHECK_OK, 0, 0);
}

static chat_check_result duplicate_call_id(const chat_check_msg *x, size_t i)
{
    for (size_t k = 1; k < x->n_calls; k++)
        for (size_t j = 0; j < k; j++)
            if (same(&x->calls[j].id, &x->calls[k].id))
                return result(CHECK_DUPLICATE_CALL_ID, i, k);
    return result(CHECK_OK, 0, 0);
}

chat_check_result chat_check(chat_format format, const chat_check_msg *m, size_t n)
{
    size_t most = 1;
    for (size_t i = 0; i < n; i++)
        if (m[i].n_calls > most)
            most = m[i].n_calls;
    unsigned char *answered = calloc(most, 1);
    if (!answered)
        return result(CHECK_OOM, 0, 0);
    chat_check_result r = result(CHECK_OK, 0, 0);
    size_t open = SIZE_MAX; /* the message whose calls are being answered */

    for (size_t i = 0; i < n && r.problem == CHECK_OK; i++) {
        const chat_check_msg *x = &m[i];
        if (format == CHAT_ANTHROPIC && x->role != (i % 2 == 0 ? ROLE_USER : ROLE_ASSISTANT)) {
            r = result(CHECK_ALTERNATION, i, 0);
            break;
        }
        /* OpenAI: the tool messages right after the caller answer it; any
         * other message closes its calls. */
        if (format == CHAT_OPENAI && open != SIZE_MAX && x->role != ROLE_TOOL) {
            if ((r = unanswered(m, open, answered)).problem != CHECK_OK)
                break;
            open = SIZE_MAX;
        }
        if (x->n_answers > 0 && open == SIZE_MAX) {
            r = result(CHECK_ORPHAN_RESULT, i, 0);
            break;
        }
        for (size_t k = 0; k < x->n_answers && r.problem == CHECK_OK; k++) {
            int a = answer(&m[open], answered, &x->answers[k]);
            if (a <= 0)
                r = result(a < 0 ? CHECK_DUPLICATE_ANSWER : CHECK_ORPHAN_RESULT, i, k);
        }
        if (r.problem != CHECK_OK)
            break;
        /* Anthropic: the one turn after the caller answers all of it. */
        if (format == CHAT_ANTHROPIC && open != SIZE_MAX) {
            if ((r = unanswered(m, open, answered)).problem != CHECK_OK)
                break;
            open = SIZE_MAX;
        }
        if (x->n_calls > 0) {
            if ((r = duplicate_call_id(x, i)).problem != CHECK_OK)
                break;
            open = i;
            memset(answered, 0, most);
        }
    }
    if (r.problem == CHECK_OK && open != SIZE_MAX)
        r = unanswered(m, open, answered);
    free(answered);
    return r;
}
