/* The REST routes' request bodies: each route's members read by a table of
 * fields (json_fields.h) after the shape guard and the parse
 * (json_shape.h); the units array is json_units.c's. The compact route's
 * plain bodies are read without a tree (json_direct.c), and by the tables
 * when that reader gives up. */
#include "json_decode.h"
#include "answer_account.h"
#include "json_direct.h"
#include "json_fields.h"
#include "json_shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The body of a units route, checked and parsed; NULL with err set.
 * front_member (or NULL) names a top-level member the front read itself
 * (MCP's "session"): no field of the request, it is left out. */
static json_t *units_document(const char *body, size_t len, const char *front_member,
                              const decode_limits *lim, compactd_error *err)
{
    json_budget b;
    json_budget_init(&b, lim);
    json_t *doc = json_parse_request(body, len, lim, SHAPE_DEPTH_UNITS, &b, err);
    if (doc && front_member)
        json_object_del(doc, front_member);
    return doc;
}

/* A route's readers see the limits and what the route decodes into. */
typedef struct {
    const decode_limits *lim;
    void *in;
} route_ctx;

#define ROUTE_IN(ctx, type) ((type *)((route_ctx *)(ctx))->in)

/* Checks and parses a units route's body into *doc (the caller's to
 * release, even on error) and reads its members by the table spec[0..n)
 * into in. 0, or -1 with err set. */
static int read_route(const char *body, size_t len, const char *front_member,
                      const decode_limits *lim, const field_spec *spec, size_t n, void *in,
                      void **doc, compactd_error *err)
{
    if (!(*doc = units_document(body, len, front_member, lim, err)))
        return -1;
    route_ctx c = {lim, in};
    return field_read_object(*doc, NULL, spec, n, &c, NULL, err);
}

/* ---- POST /v1/sessions/{session}/compact ---- */

static int compact_budget(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_int(v, at, 0, TOKENS_MAX, &ROUTE_IN(ctx, compact_input)->req.budget, err);
}

static int compact_units(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return json_decode_units(v, at->name, ((route_ctx *)ctx)->lim, 0,
                             &ROUTE_IN(ctx, compact_input)->req, err);
}

static int compact_mode(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    static const char *const modes[] = {[PLAN_STRICT] = "strict", [PLAN_DISCOVERY] = "discovery"};
    int mode = 0;
    if (field_read_enum(v, at, modes, 2, &mode, err) != 0)
        return -1;
    ROUTE_IN(ctx, compact_input)->req.mode = (plan_mode)mode;
    return 0;
}

static int compact_dry_run(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_bool(v, at, &ROUTE_IN(ctx, compact_input)->req.dry_run, err);
}

static int compact_tokenizer(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_tokenizer(v, at, &ROUTE_IN(ctx, compact_input)->req.tokenizer, err);
}

static const field_spec compact_fields[] = {
    {"budget", FIELD_REQUIRED_HERE, 0, compact_budget},
    {"units", FIELD_REQUIRED_HERE, 0, compact_units},
    {"mode", FIELD_OPTIONAL, 0, compact_mode},
    {"dry_run", FIELD_OPTIONAL, 0, compact_dry_run},
    {"tokenizer", FIELD_OPTIONAL, 0, compact_tokenizer},
};

int json_decode_compact(const char *body, size_t len, const decode_limits *lim, compact_input *in,
                        compactd_error *err)
{
    return json_decode_compact_args(body, len, NULL, lim, in, err);
}

int json_decode_compact_args(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, compact_input *in, compactd_error *err)
{
    if (!front_member) {
        int rc = json_direct_compact(body, len, lim, in, err);
        if (rc != DIRECT_GAVE_UP)
            return rc;
    }
    return json_decode_compact_tree(body, len, front_member, lim, in, err);
}

int json_decode_compact_tree(const char *body, size_t len, const char *front_member,
                             const decode_limits *lim, compact_input *in, compactd_error *err)
{
    memset(in, 0, sizeof(*in));
    in->req.tokenizer = field_default_tokenizer(NULL);
    if (read_route(body, len, front_member, lim, compact_fields, NFIELDS(compact_fields), in,
                   &in->doc, err) != 0) {
        compact_input_free(in);
        return -1;
    }
    return 0;
}

void compact_input_free(compact_input *in)
{
    json_units_free(&in->req);
    json_region_release(in->doc);
    free(in->strings);
    /* As a tree's region gives its price back (json_region.c): on another
     * account, or once the request is done, the account settles it. */
    if (in->held && answer_current() == in->held_from)
        answer_give(in->held);
    memset(in, 0, sizeof(*in));
}

/* ---- POST /v1/sessions/{session}/verify ---- */

static int verify_context(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    verify_input *in = ROUTE_IN(ctx, verify_input);
    return field_read_string(v, at, 0, (size_t)-1, NULL, &in->context, &in->context_len, err);
}

static int verify_units(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return json_decode_units(v, at->name, ((route_ctx *)ctx)->lim, 1,
                             &ROUTE_IN(ctx, verify_input)->set, err);
}

static int verify_context_tokens(const json_t *v, const field_ref *at, void *ctx,
                                 compactd_error *err)
{
    verify_input *in = ROUTE_IN(ctx, verify_input);
    in->has_context_tokens = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &in->context_tokens, err);
}

static int verify_budget(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    verify_input *in = ROUTE_IN(ctx, verify_input);
    in->has_budget = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &in->budget, err);
}

static int verify_dry_run(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_bool(v, at, &ROUTE_IN(ctx, verify_input)->dry_run, err);
}

static int verify_tokenizer(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_tokenizer(v, at, &ROUTE_IN(ctx, verify_input)->set.tokenizer, err);
}

static const field_spec verify_fields[] = {
    {"context", FIELD_REQUIRED_HERE, 0, verify_context},
    {"units", FIELD_REQUIRED_HERE, 0, verify_units},
    {"context_tokens", FIELD_OPTIONAL, 0, verify_context_tokens},
    {"budget", FIELD_OPTIONAL, 0, verify_budget},
    {"dry_run", FIELD_OPTIONAL, 0, verify_dry_run},
    {"tokenizer", FIELD_OPTIONAL, 0, verify_tokenizer},
};

int json_verify_pairing(const verify_input *in, compactd_error *err)
{
    if (in->has_budget == in->has_context_tokens)
        return 0;
    return field_invalid(err, in->has_budget ? "$.context_tokens" : "$.budget",
                         "budget and context_tokens come together: repair needs both");
}

int json_decode_verify(const char *body, size_t len, const decode_limits *lim, verify_input *in,
                       compactd_error *err)
{
    return json_decode_verify_args(body, len, NULL, lim, in, err);
}

int json_decode_verify_args(const char *body, size_t len, const char *front_member,
                            const decode_limits *lim, verify_input *in, compactd_error *err)
{
    memset(in, 0, sizeof(*in));
    in->set.tokenizer = field_default_tokenizer(NULL);
    if (read_route(body, len, front_member, lim, verify_fields, NFIELDS(verify_fields), in,
                   &in->doc, err) != 0)
        goto fail;
    size_t text_bytes = 0;
    for (size_t i = 0; i < in->set.n; i++)
        text_bytes += in->set.units[i].text_len;
    if (text_bytes > lim->max_verify_text_bytes) {
        field_invalid(err, "$.units",
                      "the units' texts take %zu bytes together; one verify audits at most %zu "
                      "(COMPACTD_MAX_VERIFY_TEXT_BYTES)",
                      text_bytes, lim->max_verify_text_bytes);
        goto fail;
    }
    if (json_verify_pairing(in, err) != 0)
        goto fail;
    return 0;
fail:
    verify_input_free(in);
    return -1;
}

void verify_input_free(verify_input *in)
{
    json_units_free(&in->set);
    json_region_release(in->doc);
    memset(in, 0, sizeof(*in));
}

/* ---- POST /v1/tokens ---- */

static int tokens_tokenizer(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    return field_read_tokenizer(v, at, &ROUTE_IN(ctx, tokens_input)->tokenizer, err);
}

static int tokens_texts(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    const decode_limits *lim = ((route_ctx *)ctx)->lim;
    tokens_input *in = ROUTE_IN(ctx, tokens_input);
    if (!json_is_array(v))
        return field_invalid_at(err, at, "must be an array of strings, not %s", json_type_name(v));
    size_t n = json_array_size(v);
    if (n > lim->max_units)
        return field_invalid_at(err, at, "has %zu texts; the limit is %zu (COMPACTD_MAX_UNITS)", n,
                                lim->max_units);
    in->texts = malloc((n ? n : 1) * sizeof(*in->texts));
    in->lens = malloc((n ? n : 1) * sizeof(*in->lens));
    if (!in->texts || !in->lens)
        return error_set(err, ERR_INTERNAL, "out of memory decoding %zu texts", n);
    for (size_t i = 0; i < n; i++) {
        field_ref elem = {at, NULL, i, NULL};
        if (field_read_string(json_array_get(v, i), &elem, 0, lim->max_text_bytes, NULL,
                              &in->texts[i], &in->lens[i], err) != 0)
            return -1;
    }
    in->n = n;
    return 0;
}

static const field_spec tokens_fields[] = {
    {"tokenizer", FIELD_OPTIONAL, 0, tokens_tokenizer},
    {"texts", FIELD_REQUIRED_HERE, 0, tokens_texts},
};

int json_decode_tokens(const char *body, size_t len, const decode_limits *lim, tokens_input *in,
                       compactd_error *err)
{
    memset(in, 0, sizeof(*in));
    in->tokenizer = field_default_tokenizer(NULL);
    if (read_route(body, len, NULL, lim, tokens_fields, NFIELDS(tokens_fields), in, &in->doc,
                   err) != 0) {
        tokens_input_free(in);
        return -1;
    }
    return 0;
}

void tokens_input_free(tokens_input *in)
{
    free(in->texts);
    free(in->lens);
    json_region_release(in->doc);
    memset(in, 0, sizeof(*in));
}

static void copy_member(const json_t *e, const char *name, char *out, size_t size)
{
    const char *v = json_string_value(json_object_get(e, name));
    snprintf(out, size, "%s", v ? v : "");
}

int json_decode_error_answer(const char *body, size_t len, error_answer *out)
{
    memset(out, 0, sizeof(*out));
    json_t *doc = json_loadb(body, len, 0, NULL);
    json_t *e = json_object_get(doc, "error");
    int rc = json_is_object(e) ? 0 : -1;
    if (rc == 0) {
        copy_member(e, "type", out->type, sizeof(out->type));
        copy_member(e, "path", out->path, sizeof(out->path));
        copy_member(e, "message", out->message, sizeof(out->message));
        /* A cut may end inside a character; the log line must stay UTF-8. */
        json_sanitize_text(out->path);
        json_sanitize_text(out->message);
    }
    json_decref(doc);
    return rc;
}
