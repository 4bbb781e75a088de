/* libFuzzer target over what compactd does with a request body before and
 * after the store: strict decoding (compact and verify), planning, the
 * truncation audit, chat histories (decoded, planned with their loss markers,
 * rendered), and every response and log document built from them.
 * No I/O: no store is set up (session_store_init() is never called), so a
 * pointer the audit finds is "store unavailable" rather than a Redis call.
 * Besides the sanitizers' findings it aborts when a document compactd would
 * send is not valid JSON (UTF-8 included), when a decode error names no JSON
 * path, or when a plan breaks its contract: a unit in no list or in two,
 * more tokens used than the budget. The same bytes are also counted by every
 * tokenizer, which must give at least one token for a non-empty text and at
 * most one per byte (fuzz_json_read and fuzz_tokenizer hold the JSON reader
 * and the counts to references of their own). */
#include "chat_codec.h"
#include "compaction.h"
#include "json_decode.h"
#include "json_encode.h"
#include "tokenizer.h"
#include "verify.h"

#include <jansson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Small limits, so that inputs of a few kilobytes reach them. */
static const decode_limits limits = {16, 256, 4096, 8192, 75};

static void fail(const char *what, const char *doc, size_t len)
{
    fprintf(stderr, "fuzz_request: %s\n%.*s\n", what, (int)(len > 2000 ? 2000 : len), doc);
    abort();
}

/* Every document compactd writes must parse back as strict JSON. Frees doc. */
static void check_document(char *doc, size_t len, const char *what)
{
    if (!doc)
        fail("encoder returned NULL (out of memory?)", what, strlen(what));
    json_error_t e;
    json_t *v = json_loadb(doc, len, JSON_ALLOW_NUL, &e);
    if (!v || !json_is_object(v)) {
        fprintf(stderr, "%s: %s\n", what, e.text);
        fail("not a JSON object", doc, len);
    }
    json_decref(v);
    free(doc);
}

static void check_decode_error(const compactd_error *err)
{
    size_t len;
    if (err->kind != ERR_INVALID_REQUEST)
        fail("a decode error that is not InvalidRequest", err->message, strlen(err->message));
    if (err->path[0] != '$')
        fail("an InvalidRequest without a JSON path", err->message, strlen(err->message));
    check_document(json_encode_error(err, &len), len, "error");
}

static void check_plan(const compaction_request *req, const compaction *c)
{
    const plan_result *p = &c->plan;
    size_t externalized = 0;
    if (p->n != req->n)
        fail("plan entries differ from units", "", 0);
    if (p->used_tokens > req->budget || p->used_tokens < 0)
        fail("plan uses more than its budget", "", 0);
    for (size_t i = 0; i < p->n; i++) {
        const plan_unit *u = &req->units[i];
        plan_decision d = p->entries[i].decision;
        if (d == DECISION_EXTERNALIZED)
            externalized++;
        if (u->cls == UNIT_PROTECTED && d != DECISION_PRESERVED && d != DECISION_EXTERNALIZED)
            fail("a protected unit neither preserved nor externalized", u->key, u->key_len);
        if (u->cls == UNIT_REDUNDANT && d != DECISION_DROPPED)
            fail("a redundant unit kept", u->key, u->key_len);
    }
    if (externalized != p->n_externalized)
        fail("externalized count is off", "", 0);
}

static void fuzz_compact(const char *data, size_t size)
{
    compact_input in;
    compactd_error err = {0};
    size_t len;
    if (json_decode_compact(data, size, &limits, &in, &err) != 0) {
        check_decode_error(&err);
        return;
    }
    compaction c;
    compactd_error perr = {0};
    if (compaction_plan(&in.req, &c, &perr) == 0) {
        check_plan(&in.req, &c);
        check_document(json_encode_plan("fuzz", &in, &c, &len), len, "plan");
        check_document(json_encode_compaction_event(&in, &c, 0, &len), len, "event");
    } else if (perr.kind == ERR_COMPACTION_FAILURE) {
        const plan_unit *u = &in.req.units[c.plan.failed_index];
        if (u->cls != UNIT_PROTECTED)
            fail("a failure names a unit that is not protected", u->key, u->key_len);
        check_document(
            json_encode_compaction_failure(&perr, in.req.budget, c.plan.required_budget, u, &len),
            len, "failure");
        check_document(json_encode_compaction_event(&in, &c, 1, &len), len, "failure event");
    } else {
        fail("planning failed without a compaction failure", perr.message, strlen(perr.message));
    }
    compaction_free(&c);
    compact_input_free(&in);
}

static void fuzz_verify(const char *data, size_t size)
{
    verify_input in;
    compactd_error err = {0};
    size_t len;
    if (json_decode_verify(data, size, &limits, &in, &err) != 0) {
        check_decode_error(&err);
        return;
    }
    verify_request vr = {in.context, in.context_len,  in.set.units, in.set.detail,
                         in.set.n,   in.has_budget,   in.budget,    in.context_tokens,
                         in.dry_run, in.set.tokenizer};
    verify_result r;
    compactd_error verr = {0};
    if (verify_run("fuzz:fuzz", &vr, &r, &verr) == 0) {
        check_document(json_encode_verify(&in, &r, &len), len, "verify");
        check_document(json_encode_verify_event(&in, &r, OUTCOME_REPAIRED, &len), len,
                       "verify event");
    } else if (verr.kind == ERR_COMPACTION_FAILURE) {
        check_document(json_encode_verify_event(&in, &r, OUTCOME_FAILURE, &len), len,
                       "verify failure event");
    } else if (verr.kind != ERR_STORE_UNAVAILABLE) {
        fail("verify failed for another reason than the store or the budget", verr.message,
             strlen(verr.message));
    }
    verify_result_free(&r);
    verify_input_free(&in);
}

static void fuzz_tokenizers(const char *data, size_t size)
{
    static const char *const names[] = {"bytes", "o200k_base", "cl100k_base"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const tokenizer *t = tokenizer_find(names[i], strlen(names[i]));
        if (!t)
            fail("a tokenizer is missing", names[i], strlen(names[i]));
        int64_t n = tokenizer_count(t, data, size);
        if (n < 0)
            fail("tokenizer_count failed", names[i], strlen(names[i]));
        if ((size > 0 && n < 1) || n > (int64_t)size)
            fail("a count below 1 or above the byte length", data, size);
    }
}

static int64_t count_bytes(const void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)len;
}

/* A history compactd accepts is answered with one the provider accepts,
 * within the budget; a refusal names what did not fit. */
static void fuzz_messages(const char *data, size_t size)
{
    chat_input in;
    chat_plan p;
    compactd_error err = {0};
    size_t len;
    if (chat_decode_compact(data, size, &limits, &in, &err) != 0) {
        if (err.kind != ERR_INTERNAL)
            check_decode_error(&err);
        chat_input_free(&in);
        return;
    }
    chat_counter cnt = {count_bytes, NULL, 1};
    compactd_error perr = {0};
    if (chat_plan_run(&in.req, &cnt, &p, &perr) == 0) {
        if (p.used_tokens > in.req.budget)
            fail("a history over its budget", "", 0);
        if (chat_output_valid(&in, &p) != 0)
            fail("a compacted history the provider would refuse", data, size);
        check_document(chat_encode_answer("fuzz", &in, &p, &len), len, "messages answer");
    } else if (perr.kind == ERR_COMPACTION_FAILURE) {
        if (in.req.budget >= p.required_budget)
            fail("refused at or above the required budget", data, size);
        check_document(chat_encode_failure(&perr, &in, &p, &len), len, "messages failure");
    } else {
        fail("chat planning failed for another reason than the budget", perr.message,
             strlen(perr.message));
    }
    chat_plan_free(&p);
    chat_input_free(&in);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_object_seed(1); /* as compactd does before its threads start */
    char err[600];
    if (tokenizer_load(COMPACTD_RANKS_DIR, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_request: %s\n", err);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The decoders get the bytes as the HTTP layer hands them over: not
     * NUL-terminated beyond size. A copy lets ASan see any overread. */
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    fuzz_compact(body, size);
    fuzz_verify(body, size);
    fuzz_tokenizers(body, size);
    fuzz_messages(body, size);
    free(body);
    return 0;
}
