/* Images and documents in Anthropic Messages histories: the source check
 * the two share, their pricing (chat_media.h's bounds; a document's texts
 * by the tokenizer), and the texts the model reads of a document, for the
 * audit. For chat_anthropic.c. */
#ifndef COMPACTD_CHAT_ANTHROPIC_MEDIA_H
#define COMPACTD_CHAT_ANTHROPIC_MEDIA_H

#include "chat_codec.h"

/* An image or document source at the block b (suffix: the block's path
 * after the message's): an object naming its kind ("base64", "url",
 * "file", ...), whose other members the API checks itself. 0, or -1 with
 * err set. */
int chat_anthropic_check_source(chat_msg_ctx *c, const json_t *b, const char *suffix,
                                compactd_error *err);

/* Prices an image block (its source checked already): from its own header
 * when its source is base64, else the largest. */
void chat_anthropic_price_image(chat_msg_ctx *c, const json_t *b);

/* Prices a document block (its source checked already). 0, or -1 with err
 * set (a text member that is no string, data that is not base64). */
int chat_anthropic_price_document(chat_msg_ctx *c, const json_t *b, const char *suffix,
                                  compactd_error *err);

/* The codec's opaque_texts: a document's title and context and the text of
 * a plain-text or content source. */
void chat_anthropic_opaque_texts(const chat_input *in, size_t i,
                                 void (*put)(void *ctx, const char *s, size_t len), void *ctx);

#endif
