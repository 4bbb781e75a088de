/* A re-acquired text given back a page at a time, the same on every front
 * (GET .../spills/{key}, POST .../reacquire, the MCP reacquire tools):
 * "offset" is a byte offset into the text's UTF-8 (where the last page
 * ended: its next_offset), "max_tokens" the most tokens the page may hold,
 * counted with "tokenizer" (the server's COMPACTD_TOKENIZER unless named).
 * Offsets are in bytes because token counts do not add up across a cut
 * (a BPE merges across it), so a token offset would not name one place;
 * a byte offset does, and the pages put back together are the text. */
#ifndef COMPACTD_SPILL_PAGE_H
#define COMPACTD_SPILL_PAGE_H

#include "error.h"
#include "json_writer.h"
#include "store_types.h"
#include "tokenizer.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* What a call asked for. */
typedef struct {
    uint64_t offset;     /* 0 when not given */
    int64_t max_tokens;  /* 0 when not given: the rest of the text */
    const tokenizer *tk; /* never NULL once read */
    int query;           /* read from a query string: errors name no JSON path */
} spill_page_args;

/* The page given back: text[offset..end) of the spill. */
typedef struct {
    size_t offset, end, len;
    int64_t remaining_tokens; /* of text[end..len) */
    int64_t total_tokens;     /* of the whole text */
    const tokenizer *tk;
    int with_note; /* the answer goes to a model: a page not the last has a "note" */
} spill_page;

/* From a REST request's query parameters (each NULL when absent). max is
 * the largest max_tokens taken (COMPACTD_MAX_TEXT_BYTES: no page holds
 * more tokens than bytes). 0, or -1 with an InvalidRequest naming the
 * parameter. */
int spill_page_args_query(const char *offset, const char *max_tokens, const char *tokenizer_name,
                          int64_t max, spill_page_args *out, compactd_error *err);

/* From a tool call's arguments (each member NULL when absent; a JSON null
 * counts as absent, as OpenAI's strict mode sends an optional one). 0, or
 * -1 with an InvalidRequest whose path is "$.<member>". */
int spill_page_args_json(const json_t *offset, const json_t *max_tokens,
                         const json_t *tokenizer_name, int64_t max, spill_page_args *out,
                         compactd_error *err);

/* The page of text[0..len) that args ask for. 0; or -1 with an
 * InvalidRequest (path "$.offset" or "offset") when the offset is past the
 * end or inside a character, or an Internal error when out of memory. */
int spill_page_cut(const spill_page_args *args, const char *text, size_t len, spill_page *out,
                   compactd_error *err);

/* A page to cut from a spill once it is read back: ops_reacquire()'s
 * check, with a spill_page_request as its context (args in, page out),
 * so that a call refused for its page logs nothing. */
typedef struct {
    const spill_page_args *args;
    spill_page page;
} spill_page_request;

int spill_page_check(void *ctx, const store_record *spill, compactd_error *err);

/* The record with its text cut to the page (borrowing r's strings). */
store_record spill_page_record(const store_record *r, const spill_page *p);

/* Writes "offset", "next_offset" (null on the last page),
 * "remaining_tokens", "total_tokens" and "tokenizer" as members of an open
 * object, and "note" (spill_page_note()) on a page not the last when
 * with_note. */
void spill_page_members(jw *w, const spill_page *p);

/* What a model is told after a page that is not the last: how much is
 * left and the offset to call again with. NUL-terminated, into out. */
void spill_page_note(const spill_page *p, char *out, size_t size);

#endif
