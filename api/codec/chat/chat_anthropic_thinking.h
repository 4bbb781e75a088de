/* Anthropic thinking and redacted_thinking blocks, as Anthropic's rules
 * treat them (docs/chat.md, Reasoning). For chat_anthropic.c. */
#ifndef COMPACTD_CHAT_ANTHROPIC_THINKING_H
#define COMPACTD_CHAT_ANTHROPIC_THINKING_H

#include "chat_codec.h"

/* Reads the thinking block b of the message in c (suffix: the block's path
 * after the message's), which the counts of the turn's blocks before it
 * (n_tools, n_other) must show to open its turn. 0, or -1 with err set. */
int chat_anthropic_read_thinking(chat_msg_ctx *c, const json_t *b, const char *suffix,
                                 size_t *n_tools, size_t *n_other, compactd_error *err);

/* Places the thinking of the history read into in: that of the loop in
 * flight pinned, a finished turn's taken from its turn (the turn read again
 * with read, from its JSON in messages, which loses those blocks), a
 * finished turn of thinking alone marked stale. 0, or -1 with err set. */
int chat_anthropic_place_thinking(chat_input *in, json_t *messages, chat_read_message_fn read,
                                  compactd_error *err);

#endif
