/* The history an answer renders, in its order: each kept message with the
 * markers appended to it and each marker of its own, walked once for the
 * JSON (chat_render.c), the provider's rules (chat_output_valid()) and the
 * order of the output's items (chat_output_keys()). */
#include "chat_output.h"

#include "chat_check.h"

#include <stdint.h>
#include <stdlib.h>

#define APPENDED_MAX 2 /* a turn can take a marker from each side */

void chat_output_walk(const chat_input *in, const chat_plan *p, chat_emit_fn emit, void *ctx)
{
    size_t j = 0;
    for (size_t i = 0; i <= in->req.n; i++) {
        const chat_marker *extra[APPENDED_MAX];
        size_t n_extra = 0;
        for (; j < p->n_markers && p->markers[j].at == i; j++) {
            if (p->markers[j].place == MARKER_STANDALONE)
                emit(ctx, in, p, SIZE_MAX, &p->markers[j], NULL, 0);
            else if (n_extra < APPENDED_MAX)
                extra[n_extra++] = &p->markers[j];
        }
        /* Reasoning that goes with the calls it led to is not sent
         * without them. */
        if (i == in->req.n || p->c.plan.entries[i].decision == DECISION_DROPPED ||
            (chat_leads_calls(&in->req, &p->classes, i) && chat_plan_calls_dropped(p, i)))
            continue;
        emit(ctx, in, p, i, NULL, extra, n_extra);
    }
}

typedef struct {
    chat_check_msg *out;
    size_t n;
    size_t last; /* the message emitted last, or SIZE_MAX */
} check_ctx;

static void emit_check(void *ctx, const chat_input *in, const chat_plan *p, size_t i,
                       const chat_marker *standalone, const chat_marker *const *extra,
                       size_t n_extra)
{
    check_ctx *c = ctx;
    (void)extra;
    (void)n_extra;
    if (standalone) {
        c->last = SIZE_MAX;
        c->out[c->n++] = (chat_check_msg){standalone->role, NULL, 0, NULL, 0, 0, 0};
        return;
    }
    const chat_message *m = &in->req.m[i];
    /* Every form keeps the message's call ids and the ids it answers; a
     * message joins its turn only behind the message it follows there. */
    int joins = m->same_turn && i > 0 && c->last == i - 1;
    size_t n_calls = chat_plan_calls_dropped(p, i) ? 0 : m->n_calls;
    c->last = i;
    c->out[c->n++] =
        (chat_check_msg){m->role, m->calls, n_calls, m->answers, m->n_answers, joins, m->leads};
}

typedef struct {
    size_t *keys;
    size_t n;
} keys_ctx;

static void emit_key(void *ctx, const chat_input *in, const chat_plan *p, size_t i,
                     const chat_marker *standalone, const chat_marker *const *extra, size_t n_extra)
{
    keys_ctx *c = ctx;
    (void)in;
    (void)p;
    (void)extra;
    (void)n_extra;
    c->keys[c->n++] = standalone ? 2 * standalone->at : 2 * i + 1;
}

size_t chat_output_keys(const chat_input *in, const chat_plan *p, size_t *keys)
{
    keys_ctx c = {keys, 0};
    chat_output_walk(in, p, emit_key, &c);
    return c.n;
}

int chat_output_valid(const chat_input *in, const chat_plan *p)
{
    check_ctx c = {malloc((in->req.n + p->n_markers + 1) * sizeof(chat_check_msg)), 0, SIZE_MAX};
    if (!c.out)
        return -1;
    chat_output_walk(in, p, emit_check, &c);
    /* No provider takes an empty history. */
    int ok = c.n > 0 && chat_check(in->req.rules, c.out, c.n).problem == CHECK_OK;
    free(c.out);
    return ok ? 0 : -1;
}
