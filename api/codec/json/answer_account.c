/* The per-thread answer account that JSON writers take their bytes from. */
#include "answer_account.h"

#include <stdint.h>

static _Thread_local answer_account *bound;

void answer_bind(answer_account *account)
{
    bound = account;
}

answer_refusal answer_take(size_t n)
{
    if (!bound || n == 0)
        return ANSWER_OK;
    answer_refusal why = bound->take(bound->cls, n, bound->lenient);
    if (why == ANSWER_OK)
        bound->taken += n;
    return why;
}

void answer_refuse(answer_refusal why)
{
    if (bound && bound->refused == ANSWER_OK)
        bound->refused = why;
}

void answer_give(size_t n)
{
    if (!bound || n == 0)
        return;
    if (n > bound->taken)
        n = bound->taken;
    bound->taken -= n;
    bound->give(bound->cls, n);
}

const answer_account *answer_current(void)
{
    return bound;
}

size_t answer_limit(void)
{
    return bound ? bound->limit : SIZE_MAX;
}

size_t answer_taken(void)
{
    return bound ? bound->taken : 0;
}

void answer_settle(size_t keep)
{
    if (bound && bound->taken > keep)
        answer_give(bound->taken - keep);
}

answer_refusal answer_refused(void)
{
    return bound ? bound->refused : ANSWER_OK;
}

void answer_clear_refusal(void)
{
    if (bound)
        bound->refused = ANSWER_OK;
}

int answer_set_lenient(int lenient)
{
    if (!bound)
        return 0;
    int was = bound->lenient;
    bound->lenient = lenient;
    return was;
}

static _Thread_local answer_front_fn front;

answer_front_fn answer_set_front(answer_front_fn f)
{
    answer_front_fn was = front;
    front = f;
    return was;
}

size_t answer_front_extra(const char *body, size_t len)
{
    return front ? front(body, len) : 0;
}
