/* Anthropic's prompt-cache breakpoints (cache_control) through compaction:
 * read from the request and held to the API's limit of four (tool
 * definitions, system blocks and message blocks together), kept on the
 * block they were on in the compacted history or moved to the nearest kept
 * block before it, never dropped without the answer saying so; and, on
 * request (cache_prefix), one more placed at the end of the answer's
 * messages, the prefix the session's next request repeats while its plan
 * is extended. */
#ifndef COMPACTD_CHAT_CACHE_H
#define COMPACTD_CHAT_CACHE_H

#include "chat_codec.h"
#include "json_writer.h"

/* The API's limit on blocks marked cache_control in one request. */
#define CHAT_CACHE_BREAKPOINTS_MAX 4

/* Where a breakpoint went: from message from_msg's block from_block (as
 * sent; SIZE_MAX: compactd's own), to the answer's message to_msg and its
 * block to_block (SIZE_MAX: nowhere, no kept block came before it). */
typedef struct {
    size_t from_msg, from_block;
    size_t to_msg, to_block;
} chat_cache_where;

typedef struct {
    chat_cache_where *w;
    size_t n;
} chat_cache_placed;

/* Reads the breakpoints of an Anthropic request (in->cache); one over the
 * limit, or a cache_control that is not an object, is an InvalidRequest at
 * its path. Returns 0, or -1 with err set. */
int chat_cache_read(chat_input *in, compactd_error *err);

/* Whether the answer of in needs its breakpoints placed. */
int chat_cache_wanted(const chat_input *in);

/* Places the breakpoints on the answer's messages (a JSON array, out[0..len),
 * rendered from p), writes the array to w and keeps where each went for
 * chat_cache_report(). Returns 0, or -1 when out of memory or the array
 * does not parse (a bug). */
int chat_cache_place(const chat_input *in, const chat_plan *p, const char *out, size_t len,
                     jw *w, chat_cache_placed *placed);

/* Writes "cache_breakpoints": where each breakpoint went, as
 * {"from": {"index", "block"} or null (compactd's own), "to": {"message",
 * "block"} or null (no kept block before it)}. Releases placed. */
void chat_cache_report(jw *w, chat_cache_placed *placed);

#endif
