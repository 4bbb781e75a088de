/* Media parts' bytes: the base64 decoder under every bound, data URLs
 * taken apart, and the pricing reached through base64 for an image, a
 * document and audio. */
#include "check.h"
#include "media_bytes.h"

#include <stdlib.h>
#include <string.h>

/* The decoder under every bound: both alphabets, spaces skipped, padding
 * optional; anything else said to be bad (yet decoded around, for images,
 * which then fall back to their largest). */
static void base64(void)
{
    static const struct {
        const char *in, *out;
        int bad;
    } cases[] = {
        {"aGVsbG8=", "hello", 0},    {"aGVs\r\nbG8", "hello", 0}, {"", "", 0},
        {"-_-_", "\xfb\xff\xbf", 0}, {"aGVs*bG8=", "hello", 1},   {"aGVsbG8=aa", "hello", 1},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        size_t n = 0;
        int bad = -1;
        unsigned char *b = chat_base64_decode(cases[k].in, strlen(cases[k].in), &n, &bad);
        size_t want = strlen(cases[k].out);
        check(b && bad == cases[k].bad &&
                  (cases[k].bad || (n == want && memcmp(b, cases[k].out, n) == 0)),
              "base64 %s: bad %d, %zu bytes", cases[k].in, bad, n);
        free(b);
    }
    size_t n = 0;
    const char *p = chat_data_url_base64("data:application/pdf;base64,JVBE", 32, &n);
    check(p && n == 4 && memcmp(p, "JVBE", 4) == 0, "data url");
    check(!chat_data_url_base64("data:text/plain,hello", 21, &n), "a data URL not base64");
    check(!chat_data_url_base64("https://x/;base64,a", 19, &n), "not a data URL");
}

static void priced_through_base64(void)
{
    uint32_t w = 0, h = 0;
    /* A 640 x 480 PNG's first bytes, base64 (with a line break, as some
     * encoders write). */
    const char *png = "iVBORw0KGgoAAAANSUhEUgAAAoAAAAHg\nCAIAAAA=";
    check(chat_image_size_base64(png, strlen(png), &w, &h) == 0 && w == 640 && h == 480,
          "base64 png: %ux%u", w, h);
    check(chat_image_size_base64("!!!!", 4, &w, &h) == -1, "not base64");
    int64_t t = 0;
    /* A PDF of two pages ("%PDF-1.4 << /Count 2 >>"), and base64 that is not. */
    const char *pdf = "JVBERi0xLjQKPDwgL0NvdW50IDIgPj4=";
    check(chat_media_tokens_base64(CHAT_MEDIA_OPENAI, 0, pdf, strlen(pdf), &t) == 0 &&
              t == 2 * 4445,
          "base64 pdf: %lld", (long long)t);
    check(chat_media_tokens_base64(CHAT_MEDIA_OPENAI, 0, "JVBE*i0x", 8, &t) == -1, "not base64");
    /* Audio: "AAAA" is 3 bytes, a token. */
    check(chat_media_tokens_base64(CHAT_MEDIA_OPENAI, 1, "AAAA", 4, &t) == 0 && t == 1, "base64");
    check(chat_media_tokens_base64(CHAT_MEDIA_OPENAI, 1, "AA=A", 4, &t) == -1,
          "data after the padding");
}

int main(void)
{
    base64();
    priced_through_base64();
    return check_done("media_bytes_cases");
}
