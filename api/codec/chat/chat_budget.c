/* The budget's basis, read off the format's descriptor, and the members
 * that take room before the messages. See chat_budget.h. */
#include "chat_budget.h"

#include "json_decode.h"

#include <stdio.h>
#include <string.h>

int chat_format_tokenizer_missing(const chat_format *f, compactd_error *err)
{
    const char *name = f->tokenizer;
    const char *file = tokenizer_missing_file(name, strlen(name));
    error_set(err, ERR_INVALID_REQUEST,
              "the %s format counts with %s, which is not available: its rank file %s was not "
              "found when compactd started; send \"tokenizer\": \"bytes\" (an upper bound) or "
              "start compactd with the rank files (scripts/run fetches them)",
              f->name, name, file ? file : "(unknown)");
    if (err)
        snprintf(err->path, sizeof(err->path), "$.tokenizer");
    return -1;
}

void chat_budget_basis(jw *w, const chat_format *f, const tokenizer *t, int sealed)
{
    const char *name = tokenizer_name(t);
    int billed = f->billed_by && strcmp(f->billed_by, name) == 0;
    jw_member(w, "budget_basis");
    jw_object_open(w);
    jw_member_cstring(w, "tokenizer", name);
    jw_member(w, "exact");
    jw_bool(w, billed && !sealed);
    jw_member(w, "upper_bound");
    jw_bool(w, billed || strcmp(name, "bytes") == 0);
    if (sealed) /* one token per byte the base64 decodes to (chat_price.h) */
        jw_member_cstring(w, "encrypted_state", "decoded_bytes");
    jw_object_close(w);
}

int chat_read_tools(chat_input *in, const json_t *v, const field_ref *at, compactd_error *err)
{
    if (!json_is_array(v))
        return field_invalid_at(err, at, "must be an array of tool definitions, not %s",
                                json_type_name(v));
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_object(json_array_get(v, i))) {
            field_ref el = {at, NULL, i, NULL};
            return field_invalid_at(err, &el, "must be a tool definition (an object), not %s",
                                    json_type_name(json_array_get(v, i)));
        }
    if (chat_dump(in, v, &in->req.tools) != 0)
        return chat_out_of_memory(err);
    in->req.has_tools = 1;
    return 0;
}

int chat_read_reserve_tokens(chat_input *in, const json_t *v, const field_ref *at,
                             compactd_error *err)
{
    return field_read_int(v, at, 0, TOKENS_MAX, &in->req.reserve_tokens, err);
}
