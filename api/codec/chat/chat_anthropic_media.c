/* Anthropic images and documents (see chat_anthropic_media.h). */
#include "chat_anthropic_media.h"
#include "chat_media_parts.h"
#include "chat_passthrough.h"

#include <string.h>

/* An image block (checked already) priced by the bound of chat_media.h:
 * from its own header when its source is base64, else the largest. */
void chat_anthropic_price_image(chat_msg_ctx *c, const json_t *b)
{
    const json_t *src = json_object_get(b, "source");
    const json_t *data = json_object_get(src, "data");
    const char *kind = json_string_value(json_object_get(src, "type"));
    uint32_t w = 0, h = 0;
    if (kind && strcmp(kind, "base64") == 0 && json_is_string(data) &&
        chat_image_size_base64(json_string_value(data), json_string_length(data), &w, &h) != 0)
        w = h = 0;
    c->m->opaque = 1;
    c->m->bound_tokens += chat_anthropic_image_tokens(w, h);
}

/* An image or document source: an object naming its kind ("base64",
 * "url", "file", ...), whose other members the API checks itself. */
int chat_anthropic_check_source(chat_msg_ctx *c, const json_t *b, const char *suffix,
                                compactd_error *err)
{
    char sub[160];
    const json_t *src = json_object_get(b, "source");
    const json_t *type = json_object_get(src, "type");
    if (!json_is_object(src)) {
        chat_path_join(sub, sizeof(sub), suffix, ".", "source");
        return chat_msg_fail(c, sub, err, "must be a source object with a \"type\"");
    }
    if (!json_is_string(type) || json_string_length(type) == 0) {
        chat_path_join(sub, sizeof(sub), suffix, ".", "source.type");
        return chat_msg_fail(c, sub, err,
                             "is required: the kind of source (\"base64\", \"url\", ...)");
    }
    return 0;
}

/* ---- Documents ---- */

/* A string member the model reads as text, when present: priced by the
 * tokenizer as a payload text. */
static int document_text(chat_msg_ctx *c, const json_t *v, const char *suffix, const char *name,
                         compactd_error *err)
{
    char sub[192];
    const json_t *m = json_object_get(v, name);
    if (!m || json_is_null(m))
        return 0;
    chat_path_join(sub, sizeof(sub), suffix, ".", name);
    return chat_msg_payload_text(c, m, sub, err);
}

/* A content source's blocks: text priced as text, images as images; any
 * other block kept whole, priced by its bytes. */
static int document_blocks(chat_msg_ctx *c, const json_t *v, const char *suffix,
                           compactd_error *err)
{
    char sub[192];
    if (json_is_string(v))
        return chat_msg_payload_text(c, v, suffix, err);
    if (!json_is_array(v))
        return chat_msg_fail(c, suffix, err,
                             "must be a string or an array of text and image blocks");
    for (size_t j = 0; j < json_array_size(v); j++) {
        const json_t *b = json_array_get(v, j);
        const char *t = json_string_value(json_object_get(b, "type"));
        chat_pathf(sub, sizeof(sub), "%s[%zu]", suffix, j);
        if (!json_is_object(b) || !t || !*t)
            return chat_msg_fail(c, sub, err, "must be a content block with a \"type\"");
        if (strcmp(t, "text") == 0) {
            if (document_text(c, b, sub, "text", err) != 0)
                return -1;
        } else if (strcmp(t, "image") == 0) {
            if (chat_anthropic_check_source(c, b, sub, err) != 0)
                return -1;
            chat_anthropic_price_image(c, b);
        } else if (chat_pass_block(c->in, c->m, b) != 0) {
            return chat_out_of_memory(err);
        }
    }
    return 0;
}

/* A document block (its source checked already): what the model reads of
 * it as text (title, context, a text source's data, a content source's
 * texts) priced by the tokenizer; a base64 source by its bytes' bound (a
 * PDF by its pages, chat_media.h); a URL or a file by the fixed bound. */
int chat_anthropic_price_document(chat_msg_ctx *c, const json_t *b, const char *suffix,
                                  compactd_error *err)
{
    char sub[192];
    const json_t *src = json_object_get(b, "source");
    const char *kind = json_string_value(json_object_get(src, "type"));
    chat_path_join(sub, sizeof(sub), suffix, ".", "source");
    if (document_text(c, b, suffix, "title", err) != 0 ||
        document_text(c, b, suffix, "context", err) != 0)
        return -1;
    if (strcmp(kind, "text") == 0) {
        if (!json_object_get(src, "data"))
            return chat_msg_fail(c, strcat(sub, ".data"), err, "is required: the document's text");
        return document_text(c, src, sub, "data", err);
    }
    if (strcmp(kind, "content") == 0) {
        strcat(sub, ".content");
        if (!json_object_get(src, "content"))
            return chat_msg_fail(c, sub, err, "is required: the document's blocks");
        return document_blocks(c, json_object_get(src, "content"), sub, err);
    }
    c->m->opaque = 1;
    if (strcmp(kind, "base64") != 0) {
        c->m->bound_tokens += chat_file_tokens(c->in->codec->format->media, NULL, 0);
        return 0;
    }
    const json_t *data = json_object_get(src, "data");
    char path[ERROR_PATH_MAX];
    chat_path_join(path, sizeof(path), c->path, "", strcat(sub, ".data"));
    field_ref at = {NULL, NULL, 0, path};
    if (!json_is_string(data))
        return field_invalid_at(err, &at, "must be a string of base64 data");
    return chat_price_base64(c, 0, json_string_value(data), json_string_length(data), &at, err);
}

/* ---- Texts inside documents ---- */

static void put_string(const json_t *v, void (*put)(void *, const char *, size_t), void *ctx)
{
    if (json_is_string(v))
        put(ctx, json_string_value(v), json_string_length(v));
}

/* A document's title and context, and the text of a plain-text source
 * ("text": its data) or a content source (a string or text blocks): what
 * the model reads of a document as text. PDFs, images and files by id are
 * not text. */
void chat_anthropic_opaque_texts(const chat_input *in, size_t i,
                                 void (*put)(void *ctx, const char *s, size_t len), void *ctx)
{
    const json_t *content = json_object_get(in->values[i], "content");
    for (size_t k = 0; k < json_array_size(content); k++) {
        const json_t *b = json_array_get(content, k);
        const json_t *src = json_object_get(b, "source");
        const char *kind = json_string_value(json_object_get(src, "type"));
        if (!json_is_string(json_object_get(b, "type")) ||
            strcmp(json_string_value(json_object_get(b, "type")), "document") != 0 || !kind)
            continue;
        put_string(json_object_get(b, "title"), put, ctx);
        put_string(json_object_get(b, "context"), put, ctx);
        if (strcmp(kind, "text") == 0)
            put_string(json_object_get(src, "data"), put, ctx);
        if (strcmp(kind, "content") != 0)
            continue;
        const json_t *inner = json_object_get(src, "content");
        put_string(inner, put, ctx);
        for (size_t j = 0; j < json_array_size(inner); j++)
            put_string(json_object_get(json_array_get(inner, j), "text"), put, ctx);
    }
}
