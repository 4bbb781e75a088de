/* Media part readers shared by the chat codecs (see chat_media_parts.h). */
#include "chat_media_parts.h"

#include <string.h>

static int add_bound(chat_msg_ctx *c, int64_t tokens)
{
    c->m->opaque = 1;
    c->m->bound_tokens += tokens;
    return 0;
}

/* Whose formulas price the request's media: its format's provider's. */
static chat_media_provider provider(const chat_msg_ctx *c)
{
    return c->in->codec->format->media;
}

int chat_price_base64(chat_msg_ctx *c, int audio, const char *data, size_t len, const field_ref *at,
                      compactd_error *err)
{
    int64_t tokens = 0;
    int rc = chat_media_tokens_base64(provider(c), audio, data, len, &tokens);
    if (rc == -2)
        return chat_out_of_memory(err);
    if (rc == -1)
        return field_invalid_at(err, at, "is not base64");
    return add_bound(c, tokens);
}

/* A string member, when present. */
static int optional_string(const json_t *v, const char *name, const field_ref *at,
                           compactd_error *err)
{
    const json_t *m = json_object_get(v, name);
    field_ref sub = {at, name, 0, NULL};
    if (m && !json_is_string(m) && !json_is_null(m))
        return field_invalid_at(err, &sub, "must be a string");
    return 0;
}

int chat_price_openai_image(chat_msg_ctx *c, const json_t *url, const json_t *detail,
                            const field_ref *at, compactd_error *err)
{
    uint32_t w = 0, h = 0;
    size_t n = 0;
    const char *s = json_string_value(url);
    const char *data = s ? chat_data_url_base64(s, json_string_length(url), &n) : NULL;
    if (data && chat_image_size_base64(data, n, &w, &h) != 0)
        w = h = 0;
    const char *d = json_string_value(detail);
    (void)at;
    (void)err;
    return add_bound(c, chat_openai_image_tokens(w, h, d && strcmp(d, "low") == 0));
}

int chat_price_openai_file(chat_msg_ctx *c, const json_t *v, const field_ref *at,
                           compactd_error *err)
{
    static const char *const strings[] = {"file_id", "file_url", "filename"};
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object");
    for (size_t k = 0; k < sizeof(strings) / sizeof(strings[0]); k++)
        if (optional_string(v, strings[k], at, err) != 0)
            return -1;
    const json_t *name = json_object_get(v, "filename");
    if (json_is_string(name)) /* the model may read the name: its bytes bound it */
        c->m->bound_tokens += (int64_t)json_string_length(name);
    const json_t *data = json_object_get(v, "file_data");
    field_ref data_at = {at, "file_data", 0, NULL};
    if (!data || json_is_null(data)) /* by id or URL: nothing to read */
        return add_bound(c, chat_file_tokens(provider(c), NULL, 0));
    if (!json_is_string(data))
        return field_invalid_at(err, &data_at, "must be a string of base64 data");
    const char *s = json_string_value(data);
    size_t n = json_string_length(data);
    if (strncmp(s, "data:", 5) == 0 && !(s = chat_data_url_base64(s, n, &n)))
        return field_invalid_at(err, &data_at, "must be base64 data or a base64 data URL");
    return chat_price_base64(c, 0, s, n, &data_at, err);
}

int chat_price_openai_audio(chat_msg_ctx *c, const json_t *v, const field_ref *at,
                            compactd_error *err)
{
    if (!json_is_object(v))
        return field_invalid_at(err, at, "must be an object with data and format");
    if (optional_string(v, "format", at, err) != 0)
        return -1;
    const json_t *data = json_object_get(v, "data");
    field_ref data_at = {at, "data", 0, NULL};
    if (!json_is_string(data))
        return field_invalid_at(err, &data_at, "is required: the audio, a string of base64");
    return chat_price_base64(c, 1, json_string_value(data), json_string_length(data), &data_at,
                             err);
}
