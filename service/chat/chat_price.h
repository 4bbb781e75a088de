/* What each form of a chat message costs in tokens, counted on exactly the
 * texts the renderer writes for that form, plus the framing every message
 * carries (CHAT_MESSAGE_FRAME_TOKENS). */
#ifndef COMPACTD_CHAT_PRICE_H
#define COMPACTD_CHAT_PRICE_H

#include "chat.h"
#include "json_escape.h"

typedef struct {
    int64_t full;         /* preserved: framing, kept texts, payload, annotated tokens */
    int64_t externalized; /* framing, kept texts, the pointer in every carrier */
    int64_t summarized;   /* framing, kept texts, the summary in every carrier */
} chat_costs;

/* Writes {"compactd":"<text>"} with text JSON-escaped into out, which has
 * room for chat_carrier_room(len) bytes; returns its length. What a
 * summarized or externalized form puts in tool-call arguments and inputs. */
size_t chat_carrier_json(const char *text, size_t len, char *out);
static inline size_t chat_carrier_room(size_t len)
{
    return json_escape_room(len) + sizeof(CHAT_CARRIER_KEY) + 8;
}

/* The bound of an encrypted or signed part of reasoning state (an
 * encrypted_content, a signature, a redacted_thinking's data) of len
 * base64 characters: one token per byte it decodes to, ceil(3 len / 4).
 * Ciphertext is never shorter than its plaintext, and a token is at least
 * one byte of whatever the provider serializes, text or token ids. */
static inline int64_t chat_encrypted_tokens(size_t len)
{
    return (int64_t)((len / 4) * 3 + ((len % 4) * 3 + 3) / 4);
}

/* Prices message m, whose digest is sha256_hex and whose pointer text is
 * pointer[0..pointer_len) (NULL for a message never externalized: that
 * form then costs what the message does). The
 * counts of its own texts come from the token
 * cache when this tokenizer has counted the same message before. Returns 0,
 * or -1 when out of memory. */
int chat_price_message(const chat_message *m, const char *sha256_hex, const char *pointer,
                       size_t pointer_len, const chat_counter *cnt, chat_costs *out);

/* The same for m rendered without its calls (narration whose results were
 * dropped, chat_classify.h): its kept texts less the calls' ids and names,
 * its payload less their arguments. Returns 0, or -1 when out of memory. */
int chat_price_without_calls(const chat_message *m, const char *digest, const char *pointer,
                             size_t pointer_len, const chat_counter *cnt, chat_costs *out);

/* Tokens of text[0..len), remembered in the token cache: for the texts
 * every request prices again (the system prompt, loss markers' hints).
 * Returns >= 0, or -1 when out of memory. */
int64_t chat_count_remembered(const char *text, size_t len, const chat_counter *cnt);

/* The ends a loss marker's list entry can have: another entry follows
 * ("; "), the other list does (". "), or the marker ends ("]"). */
enum { CHAT_ENTRY_MORE = 0, CHAT_ENTRY_LIST, CHAT_ENTRY_LAST, CHAT_ENTRY_ENDS };

/* Tokens of " " + text[0..len) + ";", "." and "]" in out[CHAT_ENTRY_MORE],
 * out[CHAT_ENTRY_LIST] and out[CHAT_ENTRY_LAST]: the part of a loss marker
 * an entry of its lists is, where a counter counts by parts. Remembered in
 * the token cache like chat_count_remembered(). Returns 0, or -1 when out of
 * memory. */
int chat_count_entry(const char *text, size_t len, const chat_counter *cnt,
                     int64_t out[CHAT_ENTRY_ENDS]);

/* Tokens of a message of role `role` that is only text[0..len), remembered
 * in the token cache like chat_count_remembered(). Returns
 * >= 0, or -1 when out of memory. */
int64_t chat_price_text_message(const char *role, const char *text, size_t len,
                                const chat_counter *cnt);

/* Tokens of the tool definitions sent with a call (their compact JSON,
 * json[0..len)): counted as one message of that text, plus what the
 * provider adds for tool use (rules->tools_prompt_tokens). Returns >= 0, or
 * -1 when out of memory. */
int64_t chat_price_tools(const chat_rules *rules, const char *json, size_t len,
                         const chat_counter *cnt);

#endif
