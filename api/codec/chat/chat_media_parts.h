/* The readers of media parts the chat codecs share: an OpenAI image, file
 * or audio (Chat Completions parts and Responses parts hold the same
 * members), and any base64 data priced by the bounds of chat_media.h. Each
 * checks the types of the members it reads, adds the part's bound to the
 * message (bound_tokens, which annotations[].tokens stands for) and marks
 * it opaque. 0, or -1 with an InvalidRequest at the member's path. */
#ifndef COMPACTD_CHAT_MEDIA_PARTS_H
#define COMPACTD_CHAT_MEDIA_PARTS_H

#include "chat_codec.h"
#include "media_bytes.h"
#include "json_fields.h"

/* Base64 data (data[0..len), the string at at) priced as a file (audio 0)
 * or as audio, by the formulas of the request's format's provider. */
int chat_price_base64(chat_msg_ctx *c, int audio, const char *data, size_t len, const field_ref *at,
                      compactd_error *err);

/* An OpenAI image: its URL (image_url: a URL or a base64 data URL; NULL for
 * an image by file id) and detail ("low" or not), at at. */
int chat_price_openai_image(chat_msg_ctx *c, const json_t *url, const json_t *detail,
                            const field_ref *at, compactd_error *err);

/* An OpenAI file: the object v (Chat Completions' "file" member, or a
 * Responses input_file part) with file_data (base64 or a base64 data URL),
 * file_id, file_url, filename. */
int chat_price_openai_file(chat_msg_ctx *c, const json_t *v, const field_ref *at,
                           compactd_error *err);

/* An OpenAI input_audio object v: data (base64, required) and format. */
int chat_price_openai_audio(chat_msg_ctx *c, const json_t *v, const field_ref *at,
                            compactd_error *err);

#endif
