/* Chat histories as compactd sees them, whatever the provider's format: each
 * message reduced to what classification, pricing and rendering need (its
 * role, the texts it renders, the tool calls it makes and answers), so that
 * an OpenAI and an Anthropic history become the same compaction request.
 * Pure: no HTTP, JSON or Redis. Strings are borrowed from the decoder. */
#ifndef COMPACTD_CHAT_H
#define COMPACTD_CHAT_H

#include "plan.h"
#include "sha256.h"
#include "tokenizer.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { ROLE_SYSTEM = 0, ROLE_DEVELOPER, ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL } chat_role;

/* How a provider pairs a message's tool calls with their answers. */
typedef enum {
    /* Each answer is a message of its own (role result_role) in the run
     * right after the caller; any other message closes the caller's calls. */
    CHAT_PAIR_RESULT_RUN = 0,
    /* The one message right after the caller answers all of its calls. */
    CHAT_PAIR_NEXT_MESSAGE
} chat_pairing;

/* What a provider's format says about the shape of a history, handed to
 * the format-neutral planner and checker as data by the format's codec, so
 * that neither has a branch per provider. */
typedef struct {
    /* Turns alternate user, assistant, user, ... from the first. A loss
     * marker then takes whichever role keeps the alternation, or is appended
     * to a neighbouring turn when no role does. */
    int alternating;
    /* The role of a loss marker where turns need not alternate; where they
     * must, the role a marker is priced as before its place is known. */
    chat_role marker_role;
    chat_pairing pairing;
    chat_role result_role; /* CHAT_PAIR_RESULT_RUN: the role of an answer */
    int unique_call_ids;   /* no two calls of the history share an id */
    /* A call's args reach the model as the text they are (a string of
     * JSON), not only as the values inside them. */
    int args_are_text;
    /* What the provider adds to a request that carries tools, besides their
     * definitions (Anthropic's tool-use system prompt); 0 where none is
     * documented. */
    int64_t tools_prompt_tokens;
} chat_rules;

const char *chat_role_name(chat_role r);

typedef struct {
    const char *s;
    size_t len;
} chat_str;

/* A tool call a message makes. args is what identifies the call besides
 * its tool: the arguments string (OpenAI) or the compact JSON of the input
 * (Anthropic). */
typedef struct {
    chat_str id, name, args;
} chat_call;

/* What an annotation may override for one message. */
typedef struct {
    int has_class, has_priority, has_reacquire, has_summary, has_summary_tokens, has_tokens;
    unit_class cls;
    int64_t priority;
    chat_str reacquire;
    chat_str summary;
    int64_t summary_tokens;
    int64_t tokens; /* the tokens of the parts priced by a bound */
} chat_annotation;

typedef struct {
    chat_role role;
    /* The message as sent, as compact JSON: what a preserved message renders
     * as and what its spill holds, byte for byte. */
    chat_str json;
    /* Where json is not the request's bytes (a finished turn read without
     * what the provider drops from it unread): the message as the request
     * sent it, by which a session's last plan knows it again
     * (sticky_plan.h); else empty. */
    chat_str sent;
    /* Texts every form of the message renders (role, name, call ids, tool
     * names), and texts only the preserved form renders (text, arguments,
     * results). Pricing counts each. */
    chat_str *kept;
    size_t n_kept;
    chat_str *payload;
    size_t n_payload;
    /* Where a summarized or externalized form carries its replacement text:
     * as text (a content string, a text block, a tool result), and as a JSON
     * value {"compactd": "<text>"} (tool-call arguments, tool_use input). */
    size_t text_slots, json_slots;
    chat_call *calls;
    size_t n_calls;
    chat_str *answers; /* ids of the calls this message answers */
    size_t n_answers;
    int results_only; /* a tool message, or an Anthropic user turn of tool results only */
    int opaque;       /* has parts priced by a bound: images, audio, files, documents */
    /* Tokens of the parts priced by a stated bound instead of the tokenizer
     * (images by their dimensions, PDFs by their pages, audio by its length,
     * files by the fixed bound, thinking and unknown blocks by their bytes);
     * an annotation's tokens stand for them instead. */
    int64_t bound_tokens;
    /* Reasoning state the model reads and compactd cannot: a Responses
     * reasoning item, its encrypted_content priced by its bound (in
     * bound_tokens), or, stored by the provider, by nothing compactd sees.
     * An annotation's tokens stand for it. */
    int sealed_state;
    int protect; /* holds a block kept whole (an unknown type): protected */
    /* Must reach the provider as sent (the thinking of the turn whose tool
     * results are being answered): protected, never replaced nor dropped. */
    int pinned;
    int thinking; /* holds thinking or redacted_thinking blocks */
    /* Reasoning state of a finished turn (before the last user message):
     * the provider drops it from the context unread, so it is redundant,
     * stands in no tool exchange and goes without a loss marker. */
    int stale;
    /* The thinking blocks a finished Anthropic turn was sent with and is
     * read without (the API strips them unread). */
    int thinking_dropped;
    /* How many of its last blocks are loss markers compactd appended to it
     * (chat_own.h), not something the message states: held in tail (joined
     * one a line when more than one), not in payload (so not priced with
     * the message), and always rendered again as a marker appended to it,
     * never as a part of it. */
    int tail_marker;
    chat_str tail;
    /* Tokens of parts the format prices by their bytes (opaque state such as
     * encrypted reasoning): every form of the message keeps them as sent. */
    int64_t fixed_tokens;
    /* Continues the turn of the message before it (items of one model
     * response, as formats with one item per call send them): the two share
     * a tool exchange, and its calls join the ones still being answered. */
    int same_turn;
    /* Must reach the provider right before the next message of its turn
     * (a Responses reasoning item, which the API refuses "without its
     * required following item"): whatever keeps it keeps that one after it. */
    int leads;
    /* Renders the same one text without the response it came from (a
     * Responses assistant message of one output_text or refusal part, or
     * of a string): it may stay while the reasoning before it goes, sent
     * then without its id. */
    int one_text;
    chat_annotation note;
} chat_message;

typedef struct {
    chat_str *names;
    size_t n;
} chat_names;

/* What assistant prose (the text of an assistant message, as opposed to its
 * tool calls) is: protected by default, since plans, conclusions and
 * branches ruled out are stated there once. */
typedef enum { CHAT_PROSE_PROTECTED = 0, CHAT_PROSE_DERIVABLE } chat_prose_class;

/* Tool lists hold names or wildcards (chat_tools.h). A tool in none of
 * read_only_tools, redundant_tools and protect_tools has side effects. */
typedef struct {
    size_t keep_last;
    chat_names protect_tools, redundant_tools, read_only_tools;
    chat_prose_class assistant_text;
} chat_policy;

/* A session's last plan, as the next compaction starts from it (sticky
 * plans, docs/chat.md): each message of the history it planned, by the
 * first 64 bits of the SHA-256 of its JSON as sent (chat_plan.ident), with
 * the decision it got and why (plan_decision, plan_drop_reason), and
 * whether a loss marker's run began at it though the message before it
 * was dropped too (run_start: that marker was sent, and stands for its run
 * as it was); and the budget it was made for. */
typedef struct {
    int64_t budget;
    size_t n;
    uint64_t *digest;
    unsigned char *decision;
    unsigned char *reason;
    unsigned char *run_start;
} chat_prior;

/* The format-neutral request both decoders produce. */
typedef struct {
    const chat_rules *rules; /* static: the format's */
    chat_message *m;
    size_t n;
    /* Anthropic's top-level system prompt: always kept as sent; its texts
     * are priced like a message's. n_system == 0 when there is none. */
    chat_str *system;
    size_t n_system;
    int64_t budget;
    /* The tool definitions sent with the call, as their compact JSON (kept
     * opaque; has_tools when the request gave them), and the room kept for
     * the reply: both are taken from the budget before any message. */
    int has_tools;
    chat_str tools;
    int64_t reserve_tokens;
    plan_mode mode;
    int dry_run;
    /* The low-water mark: a history that does not fit the budget whole is
     * planned down to this many tokens (at least its required budget), so
     * that the next turns can append again. 0: the budget. */
    int64_t compact_to;
    /* The session's last plan, or NULL: a history that extends it keeps its
     * decisions while they fit. */
    const chat_prior *prior;
    /* Some message holds encrypted reasoning state (a signature, a
     * redacted_thinking's data, an encrypted_content), priced by its bound
     * (chat_encrypted_tokens()) rather than counted. */
    int sealed;
    const tokenizer *tokenizer;
    chat_policy policy;
} chat_request;

/* ---- Pricing ---- */

/* Counts the tokens of text as the request's tokenizer does: >= 0, or -1
 * when out of memory. */
typedef struct {
    int64_t (*count)(const void *ctx, const char *text, size_t len);
    const void *ctx;
    /* 1 when count adds up over the parts of a text cut where
     * tokenizer_counts_by_parts() says (every encoding compactd has): the
     * search for the least plan then prices each loss marker exactly from
     * counts of its parts (least_budget_parts.c). 0: a counter known only by
     * its answers. */
    int by_parts;
} chat_counter;

/* Framing tokens of one message beyond its texts (role markers, separators):
 * OpenAI documents 3 per message and 1 more for a name; 4 covers both. */
#define CHAT_MESSAGE_FRAME_TOKENS 4

/* The key of the replacement text in a JSON carrier. */
#define CHAT_CARRIER_KEY "compactd"

#endif
