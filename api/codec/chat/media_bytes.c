/* Media parts' bytes: base64 and data URLs (see media_bytes.h). */
#include "media_bytes.h"

#include <stdlib.h>
#include <string.h>

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

unsigned char *chat_base64_decode(const char *data, size_t len, size_t *n, int *bad)
{
    unsigned char *b = malloc(len / 4 * 3 + 3);
    if (!b)
        return NULL;
    uint32_t acc = 0;
    int bits = 0, padded = 0;
    *n = 0;
    *bad = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = data[i];
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue; /* line breaks and spaces some encoders write */
        int v = b64_value(ch);
        if (ch == '=')
            padded = 1;
        else if (v < 0 || padded)
            *bad = 1; /* not base64, or data after the padding */
        if (v < 0)
            continue;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            b[(*n)++] = (unsigned char)(acc >> bits);
        }
    }
    return b;
}

const char *chat_data_url_base64(const char *s, size_t len, size_t *n)
{
    const char *comma = memchr(s, ',', len);
    if (len < 5 || strncmp(s, "data:", 5) != 0 || !comma || comma - s < 7 ||
        memcmp(comma - 7, ";base64", 7) != 0)
        return NULL;
    *n = len - (size_t)(comma + 1 - s);
    return comma + 1;
}

int chat_image_size_base64(const char *data, size_t len, uint32_t *w, uint32_t *h)
{
    size_t n;
    int bad;
    unsigned char *b = chat_base64_decode(data, len, &n, &bad);
    if (!b)
        return -1;
    int rc = chat_image_size(b, n, w, h);
    free(b);
    return rc;
}

int chat_media_tokens_base64(chat_media_provider p, int audio, const char *data, size_t len,
                             int64_t *tokens)
{
    size_t n;
    int bad;
    unsigned char *b = chat_base64_decode(data, len, &n, &bad);
    if (!b)
        return -2;
    if (!bad)
        *tokens = audio ? chat_audio_tokens(b, n) : chat_file_tokens(p, b, n);
    free(b);
    return bad ? -1 : 0;
}
