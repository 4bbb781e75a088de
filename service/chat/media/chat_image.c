/* Image pricing bounds (see chat_media.h). */
#include "chat_media.h"

#include <stdlib.h>
#include <string.h>

static uint32_t be16(const unsigned char *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t le16(const unsigned char *p)
{
    return (uint32_t)p[1] << 8 | p[0];
}

static uint32_t le24(const unsigned char *p)
{
    return (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* A JPEG's size is in its first start-of-frame segment. */
static int jpeg_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h)
{
    size_t i = 2;
    while (i + 9 <= n) {
        if (b[i] != 0xFF)
            return -1;
        unsigned m = b[i + 1];
        if (m == 0xFF) { /* fill byte */
            i++;
            continue;
        }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) { /* no length */
            i += 2;
            continue;
        }
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            *h = be16(b + i + 5);
            *w = be16(b + i + 7);
            return *w && *h ? 0 : -1;
        }
        size_t seg = be16(b + i + 2);
        if (seg < 2)
            return -1;
        i += 2 + seg;
    }
    return -1;
}

static int webp_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h)
{
    if (n >= 30 && memcmp(b + 12, "VP8 ", 4) == 0) {
        *w = le16(b + 26) & 0x3FFF;
        *h = le16(b + 28) & 0x3FFF;
    } else if (n >= 25 && memcmp(b + 12, "VP8L", 4) == 0) {
        const unsigned char *p = b + 21;
        *w = 1 + (p[0] | (uint32_t)(p[1] & 0x3F) << 8);
        *h = 1 + (p[1] >> 6 | (uint32_t)p[2] << 2 | (uint32_t)(p[3] & 0x0F) << 10);
    } else if (n >= 30 && memcmp(b + 12, "VP8X", 4) == 0) {
        *w = 1 + le24(b + 24);
        *h = 1 + le24(b + 27);
    } else {
        return -1;
    }
    return *w && *h ? 0 : -1;
}

/* Skips a GIF's data sub-blocks from b[i]: the index after their
 * terminator, or 0 when the file ends first. */
static size_t gif_sub_blocks(const unsigned char *b, size_t n, size_t i)
{
    while (i < n) {
        if (b[i] == 0)
            return i + 1;
        i += 1 + (size_t)b[i];
    }
    return 0;
}

/* A GIF's size: its logical screen, widened to every frame's extent, since
 * a frame may reach past the screen and a decoder may show it whole. Every
 * block is walked to the trailer; a file that ends first or holds a block
 * of no known kind is -1 (priced by the fixed bound). */
static int gif_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h)
{
    *w = le16(b + 6);
    *h = le16(b + 8);
    size_t i = 13;
    if (b[10] & 0x80)
        i += 3 * ((size_t)2 << (b[10] & 7));
    while (i < n) {
        if (b[i] == 0x3B)
            return *w && *h ? 0 : -1;
        if (b[i] == 0x21) {
            if (i + 2 > n || !(i = gif_sub_blocks(b, n, i + 2)))
                return -1;
        } else if (b[i] == 0x2C) {
            if (i + 11 > n)
                return -1;
            uint32_t right = le16(b + i + 1) + le16(b + i + 5);
            uint32_t bottom = le16(b + i + 3) + le16(b + i + 7);
            *w = right > *w ? right : *w;
            *h = bottom > *h ? bottom : *h;
            unsigned flags = b[i + 9];
            i += 10;
            if (flags & 0x80)
                i += 3 * ((size_t)2 << (flags & 7));
            /* the LZW minimum code size, then the image's data */
            if (i + 1 > n || !(i = gif_sub_blocks(b, n, i + 1)))
                return -1;
        } else {
            return -1;
        }
    }
    return -1;
}

int chat_image_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h)
{
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    if (n >= 24 && memcmp(b, png, 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0) {
        *w = be32(b + 16);
        *h = be32(b + 20);
        return *w && *h ? 0 : -1;
    }
    if (n >= 13 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
        return gif_size(b, n, w, h);
    if (n >= 4 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return jpeg_size(b, n, w, h);
    if (n >= 16 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return webp_size(b, n, w, h);
    return -1;
}

int64_t chat_anthropic_image_tokens(uint32_t w, uint32_t h)
{
    if (w == 0 || h == 0)
        return CHAT_ANTHROPIC_IMAGE_MAX;
    double x = w, y = h, edge = x > y ? x : y;
    if (edge > 1568) {
        x = x * 1568 / edge;
        y = y * 1568 / edge;
    }
    double t = x * y / 750;
    int64_t tokens = (int64_t)t + (t > (double)(int64_t)t);
    return tokens < CHAT_ANTHROPIC_IMAGE_MAX ? tokens : CHAT_ANTHROPIC_IMAGE_MAX;
}

int64_t chat_openai_image_tokens(uint32_t w, uint32_t h, int low_detail)
{
    if (low_detail)
        return CHAT_OPENAI_IMAGE_LOW;
    if (w == 0 || h == 0)
        return CHAT_OPENAI_IMAGE_MAX;
    double x = w, y = h, edge = x > y ? x : y;
    if (edge > 2048) {
        x = x * 2048 / edge;
        y = y * 2048 / edge;
    }
    double side = x < y ? x : y;
    if (side > 768) {
        x = x * 768 / side;
        y = y * 768 / side;
    }
    int64_t tx = (int64_t)(x / 512), ty = (int64_t)(y / 512);
    tx += (double)tx * 512 < x;
    ty += (double)ty * 512 < y;
    int64_t tiles = tx * ty;
    int64_t tokens = CHAT_OPENAI_IMAGE_LOW + 170 * tiles;
    return tokens < CHAT_OPENAI_IMAGE_MAX ? tokens : CHAT_OPENAI_IMAGE_MAX;
}
