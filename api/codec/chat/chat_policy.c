/* A chat request's policy (keep_last, the tool lists and their wildcards,
 * assistant_text) and its annotations, read from their field tables into
 * the chat input. See chat_policy.h. */
#include "chat_policy.h"

#include "chat_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_names(chat_input *in, const json_t *v, const field_ref *at, chat_names *out,
                      compactd_error *err)
{
    char path[ERROR_PATH_MAX], sub[ERROR_PATH_MAX];
    field_path(at, path, sizeof(path));
    if (!json_is_array(v))
        return chat_invalid(err, path, "must be an array of tool names, not %s", json_type_name(v));
    out->n = json_array_size(v);
    out->names = chat_alloc(in, out->n * sizeof(*out->names));
    if (!out->names)
        return chat_out_of_memory(err);
    for (size_t i = 0; i < out->n; i++) {
        chat_pathf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (chat_text(in, json_array_get(v, i), sub, &out->names[i], err) != 0)
            return -1;
        const char *problem = chat_tool_pattern_problem(out->names[i].s, out->names[i].len);
        if (problem)
            return chat_invalid(err, sub, "%s", problem);
    }
    return 0;
}

static int policy_keep_last(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    int64_t keep = 0;
    if (field_read_int(v, at, 0, TOKENS_MAX, &keep, err) != 0)
        return -1;
    ((chat_ctx *)ctx)->in->req.policy.keep_last = (size_t)keep;
    return 0;
}

static int policy_protect(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_input *in = ((chat_ctx *)ctx)->in;
    return read_names(in, v, at, &in->req.policy.protect_tools, err);
}

static int policy_redundant(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_input *in = ((chat_ctx *)ctx)->in;
    return read_names(in, v, at, &in->req.policy.redundant_tools, err);
}

static int policy_read_only(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_input *in = ((chat_ctx *)ctx)->in;
    return read_names(in, v, at, &in->req.policy.read_only_tools, err);
}

static int policy_assistant_text(const json_t *v, const field_ref *at, void *ctx,
                                 compactd_error *err)
{
    chat_policy *pol = &((chat_ctx *)ctx)->in->req.policy;
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if (strcmp(s, "protected") == 0)
        pol->assistant_text = CHAT_PROSE_PROTECTED;
    else if (strcmp(s, "derivable") == 0)
        pol->assistant_text = CHAT_PROSE_DERIVABLE;
    else
        return field_invalid_at(err, at, "must be \"protected\" or \"derivable\"");
    return 0;
}

static const field_spec policy_fields[] = {
    {"keep_last", FIELD_OPTIONAL, 0, policy_keep_last},
    {"protect_tools", FIELD_OPTIONAL, 0, policy_protect},
    {"redundant_tools", FIELD_OPTIONAL, 0, policy_redundant},
    {"read_only_tools", FIELD_OPTIONAL, 0, policy_read_only},
    {"assistant_text", FIELD_OPTIONAL, 0, policy_assistant_text},
};

/* Re-running a read-only tool is safe and re-running a protected one is
 * what protection prevents: a tool cannot be both. */
static int policy_conflict(const chat_policy *pol, const field_ref *at, compactd_error *err)
{
    size_t j, i = chat_tools_overlap(&pol->read_only_tools, &pol->protect_tools, &j);
    if (i == SIZE_MAX)
        return 0;
    char at_path[ERROR_PATH_MAX], path[ERROR_PATH_MAX];
    field_path(at, at_path, sizeof(at_path));
    chat_pathf(path, sizeof(path), "%s.read_only_tools[%zu]", at_path, i);
    return chat_invalid(err, path,
                        "\"%.*s\" overlaps policy.protect_tools[%zu] (\"%.*s\"): a tool "
                        "is read-only or protected, not both",
                        (int)pol->read_only_tools.names[i].len, pol->read_only_tools.names[i].s, j,
                        (int)pol->protect_tools.names[j].len, pol->protect_tools.names[j].s);
}

int chat_read_policy(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object, not %s", json_type_name(v));
    if (field_read_object(v, at, policy_fields, NFIELDS(policy_fields), ctx, NULL, err) != 0)
        return -1;
    return policy_conflict(&((chat_ctx *)ctx)->in->req.policy, at, err);
}

static int summary_text(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_ctx *c = ctx;
    c->a->has_summary = 1;
    return field_read_string(v, at, 0, c->in->lim->max_text_bytes, "COMPACTD_MAX_TEXT_BYTES",
                             &c->a->summary.s, &c->a->summary.len, err);
}

static int summary_tokens(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_annotation *a = ((chat_ctx *)ctx)->a;
    a->has_summary_tokens = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &a->summary_tokens, err);
}

static const field_spec summary_fields[] = {
    {"text", FIELD_OPTIONAL, 0, summary_text}, /* required, with a message of its own */
    {"tokens", FIELD_OPTIONAL, 0, summary_tokens},
};

static int note_summary(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object {\"text\", \"tokens\"?}, not %s",
                                json_type_name(v));
    if (field_read_object(v, at, summary_fields, NFIELDS(summary_fields), ctx, NULL, err) != 0)
        return -1;
    if (!((chat_ctx *)ctx)->a->has_summary)
        return field_invalid_at(err, at, "must have \"text\"");
    return 0;
}

static int note_index(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_ctx *c = ctx;
    int rc = field_read_int(v, at, 0, (long long)c->in->req.n - 1, &c->index, err);
    if (c->in->req.n == 0)
        return field_invalid_at(err, at, "there are no messages to annotate");
    return rc;
}

static int note_class(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    static const char *const names[] = {"protected", "derivable", "redundant"};
    chat_annotation *a = ((chat_ctx *)ctx)->a;
    int k = 0;
    a->has_class = 1;
    if (field_read_enum(v, at, names, UNIT_CLASSES, &k, err) != 0)
        return -1;
    a->cls = (unit_class)k;
    return 0;
}

static int note_priority(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_annotation *a = ((chat_ctx *)ctx)->a;
    a->has_priority = 1;
    return field_read_int(v, at, -TOKENS_MAX - 1, TOKENS_MAX, &a->priority, err);
}

static int note_reacquire(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_ctx *c = ctx;
    c->a->has_reacquire = 1;
    return field_read_string(v, at, 0, c->in->lim->max_text_bytes, "COMPACTD_MAX_TEXT_BYTES",
                             &c->a->reacquire.s, &c->a->reacquire.len, err);
}

static int note_tokens(const json_t *v, const field_ref *at, void *ctx, compactd_error *err)
{
    chat_annotation *a = ((chat_ctx *)ctx)->a;
    a->has_tokens = 1;
    return field_read_int(v, at, 0, TOKENS_MAX, &a->tokens, err);
}

static const field_spec annotation_fields[] = {
    {"index", FIELD_REQUIRED_HERE, 0, note_index},
    {"class", FIELD_OPTIONAL, 0, note_class},
    {"priority", FIELD_OPTIONAL, 0, note_priority},
    {"reacquire", FIELD_OPTIONAL, 0, note_reacquire},
    {"summary", FIELD_OPTIONAL, 0, note_summary},
    {"tokens", FIELD_OPTIONAL, 0, note_tokens},
};

static int read_annotation(chat_input *in, const json_t *v, const field_ref *at,
                           unsigned char *seen, compactd_error *err)
{
    chat_annotation a = {0};
    chat_ctx c = {in, NULL, &a, -1};
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object, not %s", json_type_name(v));
    if (field_read_object(v, at, annotation_fields, NFIELDS(annotation_fields), &c, NULL, err) != 0)
        return -1;
    field_ref index = {at, "index", 0, NULL};
    if (seen[c.index])
        return field_invalid_at(err, &index, "annotates message %lld a second time",
                                (long long)c.index);
    seen[c.index] = 1;
    chat_message *msg = &in->req.m[c.index];
    if (a.has_tokens && !msg->opaque && !msg->sealed_state) {
        field_ref tokens = {at, "tokens", 0, NULL};
        return field_invalid_at(err, &tokens,
                                "is for parts compactd prices by a bound (images, audio, files, "
                                "documents, reasoning) and message %lld has none: compactd "
                                "counts its text itself",
                                (long long)c.index);
    }
    msg->note = a;
    return 0;
}

int chat_read_annotations(chat_input *in, const json_t *v, compactd_error *err)
{
    field_ref at = {NULL, "annotations", 0, NULL};
    if (!json_is_array(v))
        return field_invalid_at(err, &at, "must be an array, not %s", json_type_name(v));
    unsigned char *seen = chat_alloc(in, in->req.n);
    if (!seen)
        return chat_out_of_memory(err);
    for (size_t k = 0; k < json_array_size(v); k++) {
        field_ref elem = {&at, NULL, k, NULL};
        if (read_annotation(in, json_array_get(v, k), &elem, seen, err) != 0)
            return -1;
    }
    return 0;
}
