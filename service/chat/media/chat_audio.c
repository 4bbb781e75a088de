/* Audio bounds (see chat_media.h): the seconds of audio its bytes can hold,
 * at the tokens a second OpenAI publishes. */
#include "chat_media.h"

#include <stdlib.h>
#include <string.h>

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint16_t le16(const unsigned char *p)
{
    return (uint16_t)(p[1] << 8 | p[0]);
}

/* The bytes a second of a WAV whose fmt chunk is consistent: PCM or float
 * (or extensible) samples whose block align is channels x bytes a sample
 * and whose byte rate is the sample rate x block align, at a rate a
 * provider decodes. 0 for any other. */
static uint32_t wav_byte_rate(const unsigned char *f, size_t size)
{
    if (size < 16)
        return 0;
    uint16_t format = le16(f), channels = le16(f + 2), align = le16(f + 12), bits = le16(f + 14);
    uint32_t sample_rate = le32(f + 4), byte_rate = le32(f + 8);
    if ((format != 1 && format != 3 && format != 0xFFFE) || channels == 0 || bits == 0 ||
        bits % 8 != 0 || sample_rate < 1000 || sample_rate > 384000)
        return 0;
    if (align != (uint32_t)channels * (bits / 8) || byte_rate != sample_rate * (uint64_t)align)
        return 0;
    return byte_rate;
}

/* A WAV's bytes a second and the bytes of its data chunk (cut to what the
 * file holds), read only when its chunks are walked to the end with one
 * consistent fmt chunk before one data chunk: 0; -1 when b is no WAV; -2
 * when it is one and anything in it is uncertain (a second fmt or data
 * chunk could be the one a decoder plays, a lying byte rate a slow one;
 * a big-endian RIFX or a 64-bit RF64 or BW64 file, not read here, may
 * hold samples slower than any other audio's bytes), so that its price is
 * the fixed bound, never a guess. A data chunk whose size is 0 (as a
 * streaming encoder leaves it) or 0xFFFFFFFF is played to the end of the
 * file, as FFmpeg and libsndfile play it. */
static int wav_facts(const unsigned char *b, size_t n, uint32_t *rate, size_t *data)
{
    if (n < 12 || memcmp(b + 8, "WAVE", 4) != 0)
        return -1; /* no WAV */
    if (memcmp(b, "RIFF", 4) != 0)
        return memcmp(b, "RIFX", 4) == 0 || memcmp(b, "RF64", 4) == 0 ||
                       memcmp(b, "BW64", 4) == 0
                   ? -2
                   : -1;
    int fmt = 0, have_data = 0;
    *rate = 0;
    for (size_t i = 12; i + 8 <= n;) {
        size_t size = le32(b + i + 4), left = n - i - 8;
        if (memcmp(b + i, "fmt ", 4) == 0) {
            if (fmt++ || have_data || size > left || !(*rate = wav_byte_rate(b + i + 8, size)))
                return -2;
        } else if (memcmp(b + i, "data", 4) == 0) {
            if (have_data++ || !fmt)
                return -2;
            *data = size != 0 && size < left ? size : left;
            if (size == 0)
                break; /* the rest is samples */
        }
        if (size >= left)
            break;
        i += 8 + size + (size & 1); /* chunks are padded to even sizes */
    }
    return fmt && have_data ? 0 : -2;
}

int64_t chat_audio_tokens(const unsigned char *b, size_t n)
{
    uint32_t wav_rate;
    size_t data = 0;
    uint64_t rate = CHAT_AUDIO_MIN_BYTES_PER_SECOND;
    int wav = wav_facts(b, n, &wav_rate, &data);
    if (wav == -2)
        return CHAT_PART_MAX_TOKENS;
    if (wav == 0) {
        rate = wav_rate;
        n = data;
    }
    uint64_t scaled = (uint64_t)n * CHAT_AUDIO_TOKENS_PER_SECOND;
    uint64_t tokens = scaled / rate + (scaled % rate != 0);
    return tokens < CHAT_PART_MAX_TOKENS ? (int64_t)tokens : CHAT_PART_MAX_TOKENS;
}
