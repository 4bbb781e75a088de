/* The rules a provider holds a chat history to, checked on what compactd is
 * given and again on what it renders, as the format's chat_rules describe
 * them: whether turns alternate from user, and how calls pair with answers
 * (OpenAI: every tool message answers a call of the assistant message
 * before it, only tool messages between, and every call is answered before
 * the next other message; Anthropic: every tool_result answers a tool_use
 * of the turn just before it, and every tool_use is answered in the next
 * turn). Linear in the number of messages, calls and answers. */
#ifndef COMPACTD_CHAT_CHECK_H
#define COMPACTD_CHAT_CHECK_H

#include "chat.h"

typedef struct {
    chat_role role;
    const chat_call *calls;
    size_t n_calls;
    const chat_str *answers;
    size_t n_answers;
    int joins; /* chat_message.same_turn: its calls join the open ones */
    int leads; /* chat_message.leads: the next message must join its turn */
} chat_check_msg;

typedef enum {
    CHECK_OK = 0,
    CHECK_ORPHAN_RESULT,     /* answers no open call: item = the answer */
    CHECK_DUPLICATE_ANSWER,  /* answers a call already answered: item = the answer */
    CHECK_UNANSWERED_CALL,   /* message = the caller, item = the call */
    CHECK_DUPLICATE_CALL_ID, /* two calls with one id: item = the second */
    CHECK_REUSED_CALL_ID,    /* unique_call_ids: a call repeats an earlier message's id */
    CHECK_ALTERNATION,       /* alternating: a role repeats, or the first is not user */
    CHECK_LEADER_ALONE,      /* leads, and what follows does not join its turn */
    CHECK_OOM
} chat_check_problem;

typedef struct {
    chat_check_problem problem;
    size_t message;
    size_t item;
} chat_check_result;

/* Checks m[0..n) against rules; returns the first problem found in message
 * order. */
chat_check_result chat_check(const chat_rules *rules, const chat_check_msg *m, size_t n);

const char *chat_check_describe(chat_check_problem p);

/* Whether a problem's item is one of the message's calls (else one of its
 * answers). */
int chat_check_item_is_call(chat_check_problem p);

#endif
