/* Audio bounds (see chat_media.h): the seconds of audio its bytes can hold,
 * at the tokens a second OpenAI publishes. */
#include "chat_media.h"

#include <stdlib.h>
#include <string.h>

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* A WAV's average bytes a second (its fmt chunk's) and the bytes of its
 * data chunk (cut to what the file holds; the whole file when it has none).
 * 0, or -1 when b is no WAV or names no rate. */
static int wav_facts(const unsigned char *b, size_t n, uint32_t *rate, size_t *data)
{
    if (n < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0)
        return -1;
    *rate = 0;
    *data = n;
    for (size_t i = 12; i + 8 <= n;) {
        size_t size = le32(b + i + 4), left = n - i - 8;
        if (memcmp(b + i, "fmt ", 4) == 0 && size >= 12 && left >= 12)
            *rate = le32(b + i + 8 + 8);
        if (memcmp(b + i, "data", 4) == 0)
            *data = size < left ? size : left;
        if (size >= left)
            break;
        i += 8 + size + (size & 1); /* chunks are padded to even sizes */
    }
    return *rate ? 0 : -1;
}

int64_t chat_audio_tokens(const unsigned char *b, size_t n)
{
    uint32_t wav_rate;
    size_t data;
    uint64_t rate = CHAT_AUDIO_MIN_BYTES_PER_SECOND;
    if (wav_facts(b, n, &wav_rate, &data) == 0) {
        rate = wav_rate;
        n = data;
    }
    uint64_t scaled = (uint64_t)n * CHAT_AUDIO_TOKENS_PER_SECOND;
    uint64_t tokens = scaled / rate + (scaled % rate != 0);
    return tokens < CHAT_PART_MAX_TOKENS ? (int64_t)tokens : CHAT_PART_MAX_TOKENS;
}
