/* SHA-256: spills are keyed by the digest of their exact bytes. On x86 CPUs
 * with the SHA extensions the blocks go through them (about 30 times faster,
 * which matters for a compaction that spills tens of KB); elsewhere through
 * the portable rounds. */
#include "sha256.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHA256_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

typedef void (*compress_fn)(uint32_t h[8], const unsigned char *data, size_t blocks);

/* ---- Portable rounds ---- */

static void compress_generic(uint32_t h[8], const unsigned char *block, size_t blocks)
{
    for (; blocks--; block += 64) {
        uint32_t w[64], a, b, c, d, e, f, g, k;
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
                   (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 =
                k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
            uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
    }
}

/* ---- x86 SHA extensions ---- */

#ifdef SHA256_HAVE_SHANI
/* Four rounds per step g: the message words of step g are m[g % 4]; steps
 * 0-3 load them, later ones derive them with sha256msg1/msg2 (the schedule
 * of Intel's reference code, folded into one loop). */
__attribute__((target("sha,sse4.1"))) static void
compress_shani(uint32_t h[8], const unsigned char *data, size_t blocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1);
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8); /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);      /* CDGH */

    for (; blocks--; data += 64) {
        __m128i abef = s0, cdgh = s1, m[4], msg;
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) {
            __m128i *w = &m[g % 4];
            if (g < 4)
                *w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * g)), bswap);
            msg = _mm_add_epi32(*w, _mm_loadu_si128((const __m128i *)&K[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            if (g >= 3 && g <= 14) {
                __m128i *next = &m[(g + 1) % 4];
                *next = _mm_add_epi32(*next, _mm_alignr_epi8(*w, m[(g + 3) % 4], 4));
                *next = _mm_sha256msg2_epu32(*next, *w);
            }
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(msg, 0x0E));
            if (g >= 1 && g <= 12)
                m[(g + 3) % 4] = _mm_sha256msg1_epu32(m[(g + 3) % 4], *w);
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }

    tmp = _mm_shuffle_epi32(s0, 0x1B);                                  /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                                   /* DCHG */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(tmp, s1, 0xF0)); /* DCBA */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, tmp, 8));    /* HGFE */
}

static int cpu_has_shani(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
        return 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#endif

/* ---- Padding and output ---- */

static void digest_hex(compress_fn compress, const void *data, size_t len, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const unsigned char *p = data;
    unsigned char tail[128] = {0};
    size_t full = len / 64, rest = len % 64;

    if (full)
        compress(h, p, full);
    if (rest)
        memcpy(tail, p + full * 64, rest);
    tail[rest] = 0x80;
    size_t tail_len = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
    compress(h, tail, tail_len / 64);

    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            hex[i * 8 + j] = digits[(h[i] >> (28 - 4 * j)) & 0xf];
    hex[SHA256_HEX_LEN] = '\0';
}

void sha256_hex_generic(const void *data, size_t len, char *hex)
{
    digest_hex(compress_generic, data, len, hex);
}

void sha256_hex(const void *data, size_t len, char *hex)
{
#ifdef SHA256_HAVE_SHANI
    /* Decided on first use; threads that race to decide decide the same. */
    static _Atomic(compress_fn) chosen;
    compress_fn f = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (!f) {
        f = cpu_has_shani() ? compress_shani : compress_generic;
        atomic_store_explicit(&chosen, f, memory_order_relaxed);
    }
    digest_hex(f, data, len, hex);
#else
    digest_hex(compress_generic, data, len, hex);
#endif
}

int sha256_prefix_valid(const char *p, size_t len)
{
    if (len < POINTER_SHA_HEX || len > SHA256_HEX_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}
