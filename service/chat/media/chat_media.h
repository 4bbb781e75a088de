/* Upper bounds on what an image, a document or a file, and audio cost a
 * provider. An image: from its own header's dimensions where its bytes are
 * inline (base64 PNG, JPEG, GIF or WebP) by the provider's published
 * formula, else the largest that formula gives (chat_image.c). A PDF: its
 * page count read from its bytes times a page's bound (chat_document.c).
 * Audio: its length from its bytes (chat_audio.c). Whatever compactd cannot
 * bound tighter costs CHAT_PART_MAX_TOKENS. */
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

/* More than any current model's context window (Claude's 1,000,000,
 * GPT-4.1's 1,047,576): no request holding a part of more tokens reaches a
 * model, so no part costs more. */
#define CHAT_PART_MAX_TOKENS 1048576
/* A PDF page's extracted text: the top of the range Anthropic's PDF support
 * page gives for a page (1,500 to 3,000 tokens, by content density). */
#define CHAT_PDF_PAGE_TEXT_TOKENS 3000
/* OpenAI audio input: 1 token per 100 ms (the Realtime cost guide). */
#define CHAT_AUDIO_TOKENS_PER_SECOND 10
/* The fewest bytes a second of input audio takes: MP3's lowest bitrate,
 * 8 kbit/s (a WAV says its own rate in its header). */
#define CHAT_AUDIO_MIN_BYTES_PER_SECOND 1000

typedef enum { CHAT_MEDIA_ANTHROPIC, CHAT_MEDIA_OPENAI } chat_media_provider;

/* Width and height from the image's first bytes (PNG, JPEG, GIF, WebP):
 * 0, or -1 when they are not one of those or hold no dimensions. */
int chat_image_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h);

/* The bound for an image of w x h (known) or of unknown size (w == 0). */
int64_t chat_anthropic_image_tokens(uint32_t w, uint32_t h);
int64_t chat_openai_image_tokens(uint32_t w, uint32_t h, int low_detail);

/* The page count of the PDF b[0..n): 0 with *pages set, or -1 when b is no
 * PDF or its page tree may be out of sight (in a compressed object
 * stream). */
int chat_pdf_pages(const unsigned char *b, size_t n, uint64_t *pages);

/* The bound for a document or file whose bytes are b[0..n) (b NULL: not
 * inline, a URL or a file id): a PDF whose pages can be counted costs its
 * pages times (the provider's largest image + CHAT_PDF_PAGE_TEXT_TOKENS),
 * anything else CHAT_PART_MAX_TOKENS. */
int64_t chat_file_tokens(chat_media_provider p, const unsigned char *b, size_t n);

/* The bound for audio of bytes b[0..n): its seconds (a WAV's data bytes
 * over its header's byte rate; any other file's bytes at
 * CHAT_AUDIO_MIN_BYTES_PER_SECOND) times CHAT_AUDIO_TOKENS_PER_SECOND,
 * rounded up, at most CHAT_PART_MAX_TOKENS. */
int64_t chat_audio_tokens(const unsigned char *b, size_t n);

#endif
