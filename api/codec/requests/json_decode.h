/* Strict decoding of request bodies: every field checked for type, range and
 * class, unknown fields refused, the first offending field named by its JSON
 * path. Nothing is decoded partially: on error the output holds nothing. */
#ifndef COMPACTD_JSON_DECODE_H
#define COMPACTD_JSON_DECODE_H

#include "compaction.h"
#include "error.h"

#include <stddef.h>

#include "json_limits.h"

typedef struct {
    void *doc;              /* the parsed document, or NULL: read without a tree (json_direct.h) */
    char *strings;          /* without a tree: the request's strings, copied here */
    compaction_request req; /* its strings borrowed from doc or strings */
    /* Without a tree: the tree's price held from the answer account the
     * tree would have been held from (given back on release there). */
    size_t held;
    const void *held_from;
} compact_input;

/* Decodes a compact request. Returns 0, or -1 with an InvalidRequest (or
 * Internal) error in err. On success release in with compact_input_free().
 * A request that names no tokenizer gets the configured default
 * (field_default_tokenizer()) here, so that no later step resolves it again. */
int json_decode_compact(const char *body, size_t len, const decode_limits *lim, compact_input *in,
                        compactd_error *err);
void compact_input_free(compact_input *in);

/* The same for a document that also carries a member a front reads itself
 * (MCP's tool arguments carry "session"): front_member, when not NULL, is
 * no field of the request and is left out. */
int json_decode_compact_args(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, compact_input *in, compactd_error *err);

/* json_decode_compact_args() through the parse tree and the field tables
 * only: what the direct reader (json_direct.h) falls back to, and its
 * oracle in tests. */
int json_decode_compact_tree(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, compact_input *in, compactd_error *err);

typedef struct {
    void *doc;
    const char *context;
    size_t context_len;
    compaction_request set; /* the units (protected only); budget and mode unused */
    int has_budget, has_context_tokens;
    int64_t budget, context_tokens;
    int dry_run;
} verify_input;

/* Decodes a units array (a json_t *), the member `member` of a request
 * body, as json_decode_verify() (protected_only) or json_decode_compact()
 * reads its units, into out (prepared here; release it with
 * compaction_request_free()). For other routes that take units. */
int json_decode_units(const void *array, const char *member, const decode_limits *lim,
                      int protected_only, compaction_request *out, compactd_error *err);

/* Frees what json_decode_units() put into r (the metadata texts, then the
 * request's arrays). */
void json_units_free(compaction_request *r);

/* Decodes a verify request; units must all be protected. Same contract as
 * json_decode_compact(); release with verify_input_free(). */
int json_decode_verify(const char *body, size_t len, const decode_limits *lim, verify_input *in,
                       compactd_error *err);
void verify_input_free(verify_input *in);
int json_decode_verify_args(const char *body, size_t len, const char *front_member,
                            const decode_limits *lim, verify_input *in, compactd_error *err);

/* 0 when the verify input has both budget and context_tokens or neither,
 * else -1 with an InvalidRequest naming the one missing. */
int json_verify_pairing(const verify_input *in, compactd_error *err);

typedef struct {
    void *doc;
    const tokenizer *tokenizer; /* never NULL once decoded */
    const char **texts;         /* n texts, borrowed from doc */
    size_t *lens;
    size_t n;
} tokens_input;

/* Decodes a token-count request {"tokenizer"?, "texts": [string, ...]}: at
 * most max_units texts of at most max_text_bytes each. Same contract as
 * json_decode_compact(); release with tokens_input_free(). */
int json_decode_tokens(const char *body, size_t len, const decode_limits *lim, tokens_input *in,
                       compactd_error *err);
void tokens_input_free(tokens_input *in);

/* What an error answer said, read back from its body (the JSON an error
 * was written as): error.type, error.path and error.message, each empty
 * when absent, cut to fit. For the access log, which says why a request
 * was refused without every route reporting it. Returns 0, or -1 when
 * body is not an error answer. */
typedef struct {
    char type[40];
    char path[ERROR_PATH_MAX];
    char message[256];
} error_answer;
int json_decode_error_answer(const char *body, size_t len, error_answer *out);

#endif
