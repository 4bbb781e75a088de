/* What fills a chat plan's required budget, by kind of message (whatever
 * form the least plan keeps each in): the breakdown a
 * CompactionFailure carries, so that its reader sees what to change (a
 * policy, an annotation, the budget) rather than one total. */
#ifndef COMPACTD_REQUIRED_BUDGET_H
#define COMPACTD_REQUIRED_BUDGET_H

#include "chat.h"
#include "chat_plan.h"

#include <stdint.h>

typedef enum {
    REQUIRED_SYSTEM = 0, /* the system prompt and system or developer messages */
    REQUIRED_TOOLS,      /* the tool definitions */
    REQUIRED_RESERVE,    /* reserve_tokens */
    REQUIRED_MARKERS,    /* the loss markers */
    REQUIRED_USER,       /* user messages */
    REQUIRED_PROSE,      /* assistant prose */
    REQUIRED_EXCHANGES,  /* tool calls and results kept */
    REQUIRED_THINKING,   /* thinking of the tool loop in flight */
    REQUIRED_OPAQUE,     /* opaque state priced by its bytes (reasoning items) */
    REQUIRED_MEDIA,      /* media at its stated bound */
    REQUIRED_WHOLE,      /* blocks kept whole: types compactd does not know */
    REQUIRED_DERIVABLE,  /* derivable messages in their cheapest form */
    REQUIRED_KINDS
} chat_required_kind;

typedef struct {
    chat_required_kind kind;
    int64_t tokens;
} chat_required_share;

/* The kinds of p's least plan (a CompactionFailure's), largest first, ties
 * in the enum's order, those of no tokens left out: out holds
 * REQUIRED_KINDS entries, the count is returned. Their tokens add up to
 * p->required_budget. */
size_t chat_required_shares(const chat_request *req, const chat_plan *p,
                            chat_required_share out[REQUIRED_KINDS]);

/* Its name ("assistant prose") and what would lower it, one sentence. */
const char *chat_required_kind_name(chat_required_kind k);
const char *chat_required_kind_advice(chat_required_kind k);

#endif
