/* The image bounds: dimensions read from PNG, JPEG, GIF and WebP headers
 * and the providers' formulas on the examples their
 * own documentation works out. */
#include "chat_media.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static void size_is(const char *name, const unsigned char *b, size_t n, uint32_t w, uint32_t h)
{
    uint32_t gw = 0, gh = 0;
    int rc = chat_image_size(b, n, &gw, &gh);
    check(rc == 0 && gw == w && gh == h, "%s: %d %ux%u, want %ux%u", name, rc, gw, gh, w, h);
}

static void headers(void)
{
    static const unsigned char png[] = {0x89, 'P', 'N',  'G',  0x0D, 0x0A, 0x1A, 0x0A, 0,    0,
                                        0,    13,  'I',  'H',  'D',  'R',  0,    0,    0x02, 0x80,
                                        0,    0,   0x01, 0xE0, 8,    2,    0,    0,    0};
    size_is("png", png, sizeof(png), 640, 480);
    /* A 300x200 screen, no colour table, one 1x1 frame, the trailer. */
    static const unsigned char gif[] = {'G', 'I', 'F', '8',  '9', 'a', 0x2C, 0x01, 0xC8, 0x00, 0,
                                        0,   0,   0x2C, 0,   0,    0,   0,   1,    0,    1,    0,
                                        0,   2,   2,    0x4C, 0x01, 0,   0x3B};
    size_is("gif", gif, sizeof(gif), 300, 200);
    /* A 16x16 screen whose one frame, at (32, 32), is 1536x1536: a decoder
     * shows the frame, so the price is its extent, 1568x1568. */
    static const unsigned char big_frame[] = {'G',  'I', 'F', '8', '9', 'a', 16,   0, 16,  0,
                                              0,    0,   0,   0x21, 0xF9, 4,  0,   0, 0,   0,
                                              0,    0x2C, 32, 0,    32,   0,  0,   6, 0,   6,
                                              0,    2,   2,   0x4C, 0x01, 0,  0x3B};
    size_is("gif frame past its screen", big_frame, sizeof(big_frame), 1568, 1568);
    /* Cut before its trailer, or holding a block of no known kind: not
     * certain, so no size (the caller prices the fixed bound). */
    uint32_t gw, gh;
    check(chat_image_size(big_frame, sizeof(big_frame) - 1, &gw, &gh) == -1, "gif cut short");
    check(chat_image_size(gif, 13, &gw, &gh) == -1, "gif of its header only");
    unsigned char odd[sizeof(gif)];
    memcpy(odd, gif, sizeof(gif));
    odd[13] = 0x99;
    check(chat_image_size(odd, sizeof(odd), &gw, &gh) == -1, "gif with an unknown block");
    /* SOI, an APP0 segment of 16 bytes, then SOF0 (length 17, 8 bits,
     * height 0x0438 = 1080, width 0x0780 = 1920). */
    static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J',  'F',  'I',
                                         'F',  0,    1,    1,    0,    0,    1,    0,    1,
                                         0,    0,    0xFF, 0xC0, 0x00, 0x11, 0x08, 0x04, 0x38,
                                         0x07, 0x80, 0x03, 1,    0x22, 0,    2,    0x11, 1};
    size_is("jpeg", jpeg, sizeof(jpeg), 1920, 1080);
    /* A progressive JPEG's SOF2 after a DHT (0xC4, which is no frame). */
    static const unsigned char jpeg2[] = {0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x04, 0,    0, 0xFF, 0xC2,
                                          0x00, 0x11, 0x08, 0x00, 0x64, 0x00, 0xC8, 3, 1,    0x22};
    size_is("jpeg sof2", jpeg2, sizeof(jpeg2), 200, 100);
    unsigned char webp[30] = "RIFF\0\0\0\0WEBPVP8X";
    webp[24] = 0x7F; /* width - 1 = 127 */
    webp[27] = 0x3F; /* height - 1 = 63 */
    size_is("webp vp8x", webp, sizeof(webp), 128, 64);
    unsigned char lossy[30] = "RIFF\0\0\0\0WEBPVP8 ";
    lossy[26] = 0x90, lossy[27] = 0x01; /* 400 */
    lossy[28] = 0x2C, lossy[29] = 0x01; /* 300 */
    size_is("webp vp8", lossy, sizeof(lossy), 400, 300);
    unsigned char lossless[25] = "RIFF\0\0\0\0WEBPVP8L";
    /* 14 bits of width - 1 (99), 14 of height - 1 (49). */
    uint32_t bits = 99u | 49u << 14;
    lossless[21] = (unsigned char)bits, lossless[22] = (unsigned char)(bits >> 8);
    lossless[23] = (unsigned char)(bits >> 16), lossless[24] = (unsigned char)(bits >> 24);
    size_is("webp vp8l", lossless, sizeof(lossless), 100, 50);

    uint32_t w, h;
    check(chat_image_size((const unsigned char *)"not an image", 12, &w, &h) == -1, "text");
    check(chat_image_size(png, 20, &w, &h) == -1, "a png cut before its size");
    check(chat_image_size(jpeg, 22, &w, &h) == -1, "a jpeg cut before its frame");
}

static void formulas(void)
{
    /* OpenAI's guide: 1024 x 1024 high is 765; 2048 x 4096 high is 1105;
     * 4096 x 8192 low is 85. */
    check(chat_openai_image_tokens(1024, 1024, 0) == 765, "openai 1024");
    check(chat_openai_image_tokens(2048, 4096, 0) == 1105, "openai 2048x4096");
    check(chat_openai_image_tokens(4096, 8192, 1) == 85, "openai low");
    check(chat_openai_image_tokens(0, 0, 0) == CHAT_OPENAI_IMAGE_MAX, "openai unknown");
    check(chat_openai_image_tokens(768, 2048, 0) == CHAT_OPENAI_IMAGE_MAX, "openai largest");
    check(chat_openai_image_tokens(100, 100, 0) == 255, "openai one tile");
    /* Anthropic's table: 200 x 200 is about 54, 1000 x 1000 about 1334,
     * 1092 x 1092 about 1590; larger images are scaled to at most 1600. */
    check(chat_anthropic_image_tokens(200, 200) == 54, "anthropic 200");
    check(chat_anthropic_image_tokens(1000, 1000) == 1334, "anthropic 1000");
    check(chat_anthropic_image_tokens(1092, 1092) == 1590, "anthropic 1092");
    check(chat_anthropic_image_tokens(4000, 3000) == CHAT_ANTHROPIC_IMAGE_MAX, "anthropic large");
    check(chat_anthropic_image_tokens(0, 0) == CHAT_ANTHROPIC_IMAGE_MAX, "anthropic unknown");
    /* Every bound, whatever the size, within the stated maximum. */
    for (uint32_t s = 1; s < 9000; s += 97) {
        check(chat_openai_image_tokens(s, 9000 - s, 0) <= CHAT_OPENAI_IMAGE_MAX, "openai %u", s);
        check(chat_anthropic_image_tokens(s, 9000 - s) <= CHAT_ANTHROPIC_IMAGE_MAX, "anthropic %u",
              s);
    }
}

int main(void)
{
    headers();
    formulas();
    return check_done("media_cases");
}
