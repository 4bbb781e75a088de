/* Media parts' bytes found where a request carries them inline: base64
 * decoded, data URLs taken apart, and handed to the pricing of
 * service/chat/media (chat_media.h). */
#ifndef COMPACTD_MEDIA_BYTES_H
#define COMPACTD_MEDIA_BYTES_H

#include "chat_media.h"

#include <stddef.h>
#include <stdint.h>

/* Decodes base64 (the standard or the URL-safe alphabet; spaces and line
 * breaks skipped; padding optional). Returns a new buffer of *n bytes that
 * the caller frees with free(), or NULL when out of memory; *bad is set
 * when data holds anything else (a character outside the alphabet, data
 * after the padding). */
unsigned char *chat_base64_decode(const char *data, size_t len, size_t *n, int *bad);

/* The base64 payload of a data URL ("data:<type>;base64,<payload>"):
 * borrowed from s, *n bytes long; NULL when s is no base64 data URL. */
const char *chat_data_url_base64(const char *s, size_t len, size_t *n);

/* The dimensions of a base64 image (data[0..len), no data: prefix): 0, or
 * -1 when not decodable or not an image chat_image_size() reads. */
int chat_image_size_base64(const char *data, size_t len, uint32_t *w, uint32_t *h);

/* chat_file_tokens() (audio 0) or chat_audio_tokens() (audio 1) of base64
 * data: 0 with *tokens set, -1 when data is not base64, -2 when out of
 * memory. */
int chat_media_tokens_base64(chat_media_provider p, int audio, const char *data, size_t len,
                             int64_t *tokens);

#endif
