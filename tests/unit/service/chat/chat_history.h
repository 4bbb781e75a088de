/* A chat history built in memory for the chat tests: messages of a fixed
 * shape (a role, a text long enough that dropping it is worth a marker,
 * tool calls and their results), as a decoder would produce them. */
#ifndef COMPACTD_TEST_CHAT_HISTORY_H
#define COMPACTD_TEST_CHAT_HISTORY_H

#include "chat.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_MSGS 160

typedef struct {
    chat_request req;
    chat_message m[MAX_MSGS];
    chat_str kept[MAX_MSGS][4], payload[MAX_MSGS][4];
    chat_call calls[MAX_MSGS][2];
    chat_str answers[MAX_MSGS][2];
    char text[MAX_MSGS][400];
    char args[MAX_MSGS][64]; /* each call's own copy, so that counting can tell them apart */
    size_t pad; /* the dots after each message's words, at most 350 */
} history;

static inline chat_message *add(history *h, chat_role role, const char *text)
{
    size_t i = h->req.n++;
    chat_message *m = &h->m[i];
    memset(m, 0, sizeof(*m));
    /* Long enough that dropping it (for a loss marker) is worth it. */
    int n = snprintf(h->text[i], sizeof(h->text[i]), "%s #%zu ", text, i);
    memset(h->text[i] + n, '.', h->pad);
    h->text[i][n + h->pad] = '\0';
    m->role = role;
    m->json = (chat_str){h->text[i], strlen(h->text[i])};
    m->kept = h->kept[i];
    m->payload = h->payload[i];
    m->calls = h->calls[i];
    m->answers = h->answers[i];
    m->kept[m->n_kept++] = (chat_str){chat_role_name(role), strlen(chat_role_name(role))};
    m->payload[m->n_payload++] = m->json;
    m->text_slots = 1;
    return m;
}

/* A tool call and its result, the result in a message of role result_role. */
static inline chat_message *add_exchange_as(history *h, chat_role result_role, const char *tool,
                                     const char *args, const char *id)
{
    chat_message *call = add(h, ROLE_ASSISTANT, "calling");
    char *own_args = h->args[h->req.n - 1];
    snprintf(own_args, sizeof(h->args[0]), "%s", args);
    call->calls[0] = (chat_call){{id, strlen(id)}, {tool, strlen(tool)}, {own_args, strlen(args)}};
    call->n_calls = 1;
    call->payload[0] = call->calls[0].args; /* no text of its own: its payload is the call's */
    call->text_slots = 0;
    call->json_slots = 1;
    chat_message *result = add(h, result_role, "result");
    result->answers[0] = (chat_str){id, strlen(id)};
    result->n_answers = 1;
    result->results_only = 1;
    return result;
}

static inline void add_exchange(history *h, const char *tool, const char *args, const char *id)
{
    add_exchange_as(h, ROLE_TOOL, tool, args, id);
}

static inline void history_init(history *h, const chat_rules *rules)
{
    memset(h, 0, sizeof(*h));
    h->req.rules = rules;
    h->req.m = h->m;
    h->req.budget = 100000;
    h->req.policy.keep_last = 2;
    h->pad = 300;
}

/* Counts bytes, as the bytes tokenizer does. */
static inline int64_t count_bytes(const void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)len;
}

#endif
