/* What a chat request's budget means: the refusal when the encoding its
 * format counts with (chat_format.h) is not loaded, what the answer says
 * its counts are (budget_basis), and the request members that take room
 * before any message (tools, reserve_tokens). */
#ifndef COMPACTD_CHAT_BUDGET_H
#define COMPACTD_CHAT_BUDGET_H

#include "chat_codec.h"
#include "json_fields.h"
#include "json_writer.h"
#include "tokenizer.h"

/* The 400 for a request that names no tokenizer when its format's encoding
 * is not loaded: names the encoding, the rank file and what to send
 * instead. Returns -1. */
int chat_format_tokenizer_missing(const chat_format *f, compactd_error *err);

/* Writes "budget_basis": {"tokenizer", "exact", "upper_bound"} for a request
 * of this format counted with t: exact when t is the encoding the
 * provider's current models bill by, upper_bound when no count the provider
 * bills can be higher (exact, or bytes). A history holding encrypted
 * reasoning state (sealed) is never exact: that state is priced by its
 * bound, which the member encrypted_state names. */
void chat_budget_basis(jw *w, const chat_format *f, const tokenizer *t, int sealed);

/* The members: tools (an array of tool definitions, objects, kept opaque)
 * and reserve_tokens (an integer, 0 to TOKENS_MAX). 0, or -1 with an
 * InvalidRequest at `at` (or Internal). */
int chat_read_tools(chat_input *in, const json_t *v, const field_ref *at, compactd_error *err);
int chat_read_reserve_tokens(chat_input *in, const json_t *v, const field_ref *at,
                             compactd_error *err);

#endif
