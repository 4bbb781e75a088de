/* The audio bound: a WAV's seconds from its header's byte rate and its data
 * chunk, any other audio's from its bytes at MP3's lowest bitrate, at 10
 * tokens a second, rounded up. */
#include "chat_media.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static void le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

/* A 16 kHz mono 16-bit PCM WAV (32,000 bytes a second) holding data bytes
 * of silence, in a buffer the caller frees. */
static unsigned char *wav(uint32_t data, size_t *n)
{
    *n = 44 + data;
    unsigned char *b = calloc(1, *n);
    if (!b)
        return NULL;
    memcpy(b, "RIFF", 4);
    le32(b + 4, (uint32_t)*n - 8);
    memcpy(b + 8, "WAVEfmt ", 8);
    le32(b + 16, 16);
    b[20] = 1, b[22] = 1;  /* PCM, one channel */
    le32(b + 24, 16000);   /* samples a second */
    le32(b + 28, 32000);   /* bytes a second */
    b[32] = 2, b[34] = 16; /* block align, bits a sample */
    memcpy(b + 36, "data", 4);
    le32(b + 40, data);
    return b;
}

static void wav_bounds(void)
{
    size_t n;
    unsigned char *b = wav(32000, &n); /* one second */
    check(b && chat_audio_tokens(b, n) == 10, "1 s: %lld",
          b ? (long long)chat_audio_tokens(b, n) : -1);
    free(b);
    b = wav(3200 * 25 + 1, &n); /* 2.5 s and a byte: rounded up */
    check(b && chat_audio_tokens(b, n) == 26, "2.5 s");
    /* A data chunk that says more than the file holds counts what it holds. */
    le32(b + 40, 0x7FFFFFFF);
    check(chat_audio_tokens(b, n) == 26, "cut data chunk: %lld",
          (long long)chat_audio_tokens(b, n));
    /* A WAV whose header is not certain is the fixed bound, never a guess:
     * no byte rate, or one the rest of its fmt chunk does not give (a
     * decoder plays 16 kHz mono 16-bit at 32,000 bytes a second, not the
     * 3,200,000 the field says, which would price 2.5 s at a token). */
    le32(b + 28, 0);
    check(chat_audio_tokens(b, n) == CHAT_PART_MAX_TOKENS, "no rate");
    le32(b + 28, 3200000);
    check(chat_audio_tokens(b, n) == CHAT_PART_MAX_TOKENS, "a lying byte rate: %lld",
          (long long)chat_audio_tokens(b, n));
    free(b);
}

/* Chunks in an order or number that leave which one a decoder plays open. */
static void wav_chunks(void)
{
    size_t n;
    /* A second data chunk after the first (10 bytes, then an hour's): the
     * decoder may play either, so the bound. */
    unsigned char *b = wav(10, &n);
    size_t big = 32000u * 3600u;
    unsigned char *two = b ? realloc(b, n + 8 + big) : NULL;
    check(two != NULL, "alloc");
    if (!two) {
        free(b);
        return;
    }
    memset(two + n, 0, 8 + big);
    memcpy(two + n, "data", 4);
    le32(two + n + 4, (uint32_t)big);
    check(chat_audio_tokens(two, n + 8 + big) == CHAT_PART_MAX_TOKENS, "two data chunks: %lld",
          (long long)chat_audio_tokens(two, n + 8 + big));
    free(two);
    /* A second fmt chunk, one that says 8 MB a second, before the data. */
    b = wav(64000, &n);
    if (!b)
        return;
    unsigned char *f = malloc(n + 24);
    check(f != NULL, "alloc");
    if (f) {
        memcpy(f, b, 36);
        memcpy(f + 36, b + 12, 24); /* the fmt chunk again */
        memcpy(f + 60, b + 36, n - 36);
        le32(f + 36 + 16, 8000000);
        check(chat_audio_tokens(f, n + 24) == CHAT_PART_MAX_TOKENS, "two fmt chunks");
        /* data before fmt */
        memcpy(f, b, 12);
        memcpy(f + 12, b + 36, n - 36);
        memcpy(f + 12 + n - 36, b + 12, 24);
        check(chat_audio_tokens(f, n) == CHAT_PART_MAX_TOKENS, "data before fmt");
    }
    /* The honest file is still priced by its seconds: 2 s, 20 tokens. */
    check(chat_audio_tokens(b, n) == 20, "honest: %lld", (long long)chat_audio_tokens(b, n));
    free(f);
    free(b);
}

/* A data chunk whose size a streaming encoder left at 0, or set to
 * 0xFFFFFFFF, is played to the end of the file (FFmpeg, libsndfile): its
 * seconds are all the bytes after its header, not none. */
static void wav_streamed(void)
{
    size_t n;
    unsigned char *b = wav(64000, &n); /* 2 s */
    if (!b)
        return;
    le32(b + 40, 0);
    check(chat_audio_tokens(b, n) == 20, "data size 0: %lld", (long long)chat_audio_tokens(b, n));
    le32(b + 40, 0xFFFFFFFF);
    check(chat_audio_tokens(b, n) == 20, "data size 0xFFFFFFFF: %lld",
          (long long)chat_audio_tokens(b, n));
    /* Samples that happen to spell a chunk are still samples. */
    le32(b + 40, 0);
    memcpy(b + 44, "fmt ", 4);
    check(chat_audio_tokens(b, n) == 20, "data size 0, samples like a chunk: %lld",
          (long long)chat_audio_tokens(b, n));
    free(b);
}

/* WAV's big-endian and 64-bit cousins are not read here, and their
 * samples may be slower than MP3's lowest bitrate (500 bytes a second at
 * 500 Hz, 8-bit mono): the fixed bound, not their bytes at 8 kbit/s. */
static void wav_cousins(void)
{
    static const char *const kinds[] = {"RIFX", "RF64", "BW64"};
    size_t n;
    unsigned char *b = wav(64000, &n);
    if (!b)
        return;
    for (size_t i = 0; i < 3; i++) {
        memcpy(b, kinds[i], 4);
        check(chat_audio_tokens(b, n) == CHAT_PART_MAX_TOKENS, "%s: %lld", kinds[i],
              (long long)chat_audio_tokens(b, n));
    }
    /* Anything else is no WAV: its bytes at 8 kbit/s. */
    memcpy(b, "RIFZ", 4);
    check(chat_audio_tokens(b, n) == (int64_t)(n * 10 + 999) / 1000, "RIFZ: %lld",
          (long long)chat_audio_tokens(b, n));
    free(b);
}

static void other_bounds(void)
{
    /* An MP3 of 48,000 bytes: at most 48 s at 8 kbit/s, 480 tokens. */
    unsigned char *mp3 = calloc(1, 48000);
    check(mp3 != NULL, "alloc");
    if (mp3) {
        mp3[0] = 'I', mp3[1] = 'D', mp3[2] = '3';
        check(chat_audio_tokens(mp3, 48000) == 480, "mp3: %lld",
              (long long)chat_audio_tokens(mp3, 48000));
        check(chat_audio_tokens(mp3, 48001) == 481, "a byte more rounds up");
    }
    free(mp3);
    check(chat_audio_tokens(NULL, 0) == 0, "nothing");
}

int main(void)
{
    wav_bounds();
    wav_chunks();
    wav_streamed();
    wav_cousins();
    other_bounds();
    return check_done("audio_cases");
}
