/* The spilled texts' digest cache: every digest it gives is the text's own
 * SHA-256 (a text that shares the sampled bytes of a kept one is hashed,
 * not given the other's digest), a text seen again is a hit, and what it
 * keeps stays within its bound, the least recently used going first. */
#include "check.h"
#include "digest_cache.h"
#include "sha256.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define TEXT_LEN 1000

/* Text number i: TEXT_LEN bytes with i written at byte at. Texts written
 * at byte 0 differ in the lookup hash's samples (start, middle and end);
 * at byte 100, which no sample reads, they differ only in their bytes. */
static void text_of(unsigned i, size_t at, char *t)
{
    memset(t, 'x', TEXT_LEN);
    snprintf(t + at, 16, "%08u", i);
    t[at + 8] = 'x';
}

/* Looks t up and checks the digest against sha256_hex(); returns 1 when the
 * lookup was a hit. */
static int digest_checked(const char *t, size_t len, const char *what)
{
    char got[65], want[65];
    digest_cache_stats_t before, after;
    digest_cache_stats(&before);
    memset(got, '?', sizeof(got));
    digest_cache_sha256_hex(t, len, got);
    digest_cache_stats(&after);
    sha256_hex(t, len, want);
    check(memcmp(got, want, sizeof(want)) == 0, "%s: the text's own digest", what);
    return after.hits > before.hits;
}

static size_t entry_bytes; /* what one TEXT_LEN entry counts, measured */

static void hit_and_miss(void)
{
    char a[TEXT_LEN], b[TEXT_LEN];
    text_of(1, 100, a);
    text_of(2, 100, b);
    digest_cache_stats_t s;
    check(!digest_checked(a, TEXT_LEN, "first sight"), "a text not seen before misses");
    digest_cache_stats(&s);
    check(s.entries == 1 && s.bytes > TEXT_LEN, "it is kept: %zu entries, %zu bytes", s.entries,
          s.bytes);
    entry_bytes = s.bytes;
    check(digest_checked(a, TEXT_LEN, "seen again"), "the same text again hits");
    /* Same length and samples, one byte apart: found by the hash, refused
     * by the comparison, hashed. */
    check(!digest_checked(b, TEXT_LEN, "a look-alike"), "a text equal in the samples misses");
    check(!digest_checked(a, TEXT_LEN, "the first again"),
          "one entry per hash and length: the look-alike took its place");
    check(digest_checked(a, TEXT_LEN, "kept again"), "and it hits once kept again");
    for (size_t len = 1; len <= 200; len += 7)
        digest_checked(a, len, "short prefixes"); /* whole texts in the hash */
    for (size_t len = 1; len <= 200; len += 7)
        check(digest_checked(a, len, "short prefixes again"), "a %zu-byte prefix hits", len);
    /* An empty text (a unit may have none) is hashed, and nothing kept. */
    digest_cache_stats_t before, after;
    digest_cache_stats(&before);
    digest_checked(NULL, 0, "no text");
    digest_checked("", 0, "an empty text");
    digest_cache_stats(&after);
    check(after.entries == before.entries, "an empty text takes no entry");
}

static void bounded(void)
{
    char t[TEXT_LEN];
    digest_cache_stats_t s;
    /* Room for 16 entries: the most one text may take is a sixteenth. */
    digest_cache_configure(0);
    digest_cache_stats(&s);
    check(s.entries == 0 && s.bytes == 0, "a bound of 0 keeps nothing");
    text_of(7, 0, t);
    digest_checked(t, TEXT_LEN, "unkept");
    check(!digest_checked(t, TEXT_LEN, "unkept again"), "with a bound of 0 nothing hits");

    digest_cache_configure(16 * entry_bytes);
    for (unsigned i = 0; i < 16; i++) {
        text_of(100 + i, 0, t);
        digest_checked(t, TEXT_LEN, "filling");
    }
    digest_cache_stats(&s);
    check(s.entries == 16 && s.bytes == 16 * entry_bytes, "16 entries fill the bound: %zu, %zu",
          s.entries, s.bytes);
    /* Use all but the first again; a new text then pushes the first out. */
    for (unsigned i = 1; i < 16; i++) {
        text_of(100 + i, 0, t);
        check(digest_checked(t, TEXT_LEN, "in use"), "entry %u is kept", i);
    }
    text_of(200, 0, t);
    digest_checked(t, TEXT_LEN, "one more");
    digest_cache_stats(&s);
    check(s.entries == 16 && s.bytes <= 16 * entry_bytes, "still within the bound: %zu, %zu",
          s.entries, s.bytes);
    text_of(101, 0, t);
    check(digest_checked(t, TEXT_LEN, "recent"), "a recently used entry stays");
    text_of(100, 0, t);
    check(!digest_checked(t, TEXT_LEN, "oldest"), "the least recently used went first");

    /* A text over a sixteenth of the bound is hashed, never kept. */
    static char big[32 * TEXT_LEN];
    memset(big, 'y', sizeof(big));
    digest_cache_stats(&s);
    size_t entries = s.entries;
    digest_checked(big, sizeof(big), "too long");
    check(!digest_checked(big, sizeof(big), "too long again"), "a text too long never hits");
    digest_cache_stats(&s);
    check(s.entries == entries, "a text too long takes no entry");

    /* A smaller bound drops what no longer fits. */
    digest_cache_configure(8 * entry_bytes);
    digest_cache_stats(&s);
    check(s.bytes <= 8 * entry_bytes && s.entries == 8, "a smaller bound keeps 8: %zu, %zu",
          s.entries, s.bytes);
}

/* Threads looking up and replacing entries of one small cache at once:
 * every digest is still the text's own. */
static void *turns(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    char t[TEXT_LEN], got[65], want[65];
    int *wrong = calloc(1, sizeof(int));
    for (unsigned n = 0; n < 4000; n++) {
        seed = seed * 1103515245u + 12345u;
        text_of((seed >> 16) % 40, 0, t);
        digest_cache_sha256_hex(t, TEXT_LEN, got);
        sha256_hex(t, TEXT_LEN, want);
        *wrong += memcmp(got, want, sizeof(want)) != 0;
    }
    return wrong;
}

static void threads(void)
{
    pthread_t th[4];
    digest_cache_configure(16 * entry_bytes);
    for (size_t i = 0; i < 4; i++)
        check(pthread_create(&th[i], NULL, turns, (void *)(i + 1)) == 0, "thread %zu", i);
    for (size_t i = 0; i < 4; i++) {
        void *wrong = NULL;
        pthread_join(th[i], &wrong);
        check(wrong && *(int *)wrong == 0, "thread %zu: every digest right", i);
        free(wrong);
    }
    digest_cache_stats_t s;
    digest_cache_stats(&s);
    check(s.hits > 0 && s.bytes <= 16 * entry_bytes, "shared, and within the bound");
}

int main(void)
{
    hit_and_miss();
    bounded();
    threads();
    return check_done("digest_cache_cases");
}
