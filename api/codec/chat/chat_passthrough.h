/* Pass-through for the chat codecs: members and blocks of a provider's
 * message that compactd does not interpret are kept as sent and priced. A
 * member (annotations, refusal, audio, cache_control, citations, ...) is
 * priced by the request's tokenizer as the text "name":value it is in the
 * message; a block kept whole (thinking, a type compactd does not know) by
 * its bytes, a bound on any tokenizer's count. */
#ifndef COMPACTD_CHAT_PASSTHROUGH_H
#define COMPACTD_CHAT_PASSTHROUGH_H

#include "chat_codec.h"

/* Object members within depth levels of v (v's own members are level 1):
 * room for the texts chat_pass_member() may add to a message. */
size_t chat_members_within(const json_t *v, int depth);

/* Prices member name (value v) as part of m: one more payload text, for
 * which the caller made room. 0, or -1 when out of memory. */
int chat_pass_member(chat_input *in, chat_message *m, const char *name, const json_t *v);

/* Prices block b, kept whole, by the bytes of its compact JSON. 0, or -1
 * when out of memory. */
int chat_pass_block(chat_input *in, chat_message *m, const json_t *b);

#endif
