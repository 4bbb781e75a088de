/* Upper bounds on what an image costs a provider, from its own header's
 * dimensions where its bytes are inline (base64 PNG, JPEG, GIF or WebP) by
 * the provider's published formula, else the largest that formula gives. */
#ifndef COMPACTD_CHAT_MEDIA_H
#define COMPACTD_CHAT_MEDIA_H

#include <stddef.h>
#include <stdint.h>

/* Anthropic (docs.anthropic.com, build-with-claude/vision): an image is
 * scaled down until its long edge is at most 1568 px and it is at most
 * about 1600 tokens; it costs width * height / 750 tokens. */
#define CHAT_ANTHROPIC_IMAGE_MAX 1600
/* OpenAI (platform.openai.com, guides/images-vision, the 512 px tile
 * models): detail low is 85 tokens; else the image is fit into 2048 x
 * 2048, its short side scaled to 768, and it costs 85 + 170 per 512 px
 * tile; at most 85 + 170 * 8. */
#define CHAT_OPENAI_IMAGE_LOW 85
#define CHAT_OPENAI_IMAGE_MAX 1445

/* Width and height from the image's first bytes (PNG, JPEG, GIF, WebP):
 * 0, or -1 when they are not one of those or hold no dimensions. */
int chat_image_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h);

/* The dimensions of a base64 image (data[0..len), no data: prefix): 0, or
 * -1 when not decodable or not one of the formats above. */
int chat_image_size_base64(const char *data, size_t len, uint32_t *w, uint32_t *h);

/* The bound for an image of w x h (known) or of unknown size (w == 0). */
int64_t chat_anthropic_image_tokens(uint32_t w, uint32_t h);
int64_t chat_openai_image_tokens(uint32_t w, uint32_t h, int low_detail);

#endif
