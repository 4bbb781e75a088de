/* json_escape and json_escape_len agree with a byte-at-a-time reference on
 * every byte value at every position of strings of every length around the
 * eight-byte words the fast path reads, and on random strings. */
#include "check.h"
#include "json_escape.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference: the rules of json_escape.h, one byte at a time. */
static size_t reference(const unsigned char *s, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        const char *e = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t"
                        : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f"
                                    : NULL;
        if (e) {
            memcpy(out + n, e, 2);
            n += 2;
        } else if (c < 0x20) {
            n += (size_t)sprintf(out + n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    return n;
}

static void same(const unsigned char *s, size_t len, const char *what, size_t a, size_t b)
{
    static char want[6 * 64 + 8], got[6 * 64 + 8];
    size_t wn = reference(s, len, want);
    size_t gn = json_escape((const char *)s, len, got);
    size_t ln = json_escape_len((const char *)s, len);
    check(gn == wn && memcmp(got, want, wn) == 0, "%s (%zu, %zu): escaped differently", what, a, b);
    check(ln == wn, "%s (%zu, %zu): length %zu, want %zu", what, a, b, ln, wn);
    size_t clean = 0;
    while (clean < len && s[clean] >= 0x20 && s[clean] != '"' && s[clean] != '\\')
        clean++;
    check(json_clean_prefix((const char *)s, len) == clean, "%s (%zu, %zu): clean prefix", what,
          a, b);
}

int main(void)
{
    unsigned char s[64];
    /* One byte of each value at each position of each length up to 40. */
    for (size_t len = 1; len <= 40; len++)
        for (size_t at = 0; at < len; at++)
            for (unsigned v = 0; v < 256; v++) {
                memset(s, 'a', len);
                s[at] = (unsigned char)v;
                same(s, len, "one byte", len, at);
            }
    /* Two bytes to escape with a clean run of every length between them:
     * the fast path resumes after each escape. */
    for (size_t at = 0; at < 20; at++)
        for (size_t gap = 0; at + gap + 1 < 48; gap++) {
            memset(s, 'b', 48);
            s[at] = '\n';
            s[at + gap + 1] = '"';
            same(s, 48, "two escapes", at, gap);
        }
    /* Bytes from 0x80 up beside the ones to escape (they must not hide them
     * nor be taken for them). */
    for (size_t at = 0; at < 24; at++) {
        memset(s, 0xc3, 24);
        s[at] = '"';
        same(s, 24, "after UTF-8 bytes", 24, at);
        memset(s, 0xff, 24);
        s[at] = 0x1f;
        same(s, 24, "after 0xff bytes", 24, at);
    }
    /* Random strings, biased towards the bytes that matter. */
    srand(7);
    static const unsigned char pick[] = {'"',  '\\', '\n', 0,    0x1f, 0x20,
                                         0x21, 0x7f, 0x80, 0xe2, 'x'};
    for (int round = 0; round < 20000; round++) {
        size_t len = (size_t)(rand() % 64);
        for (size_t i = 0; i < len; i++)
            s[i] = rand() % 3 ? pick[rand() % (int)sizeof(pick)] : (unsigned char)(rand() % 256);
        same(s, len, "random", (size_t)round, len);
    }
    same((const unsigned char *)"", 0, "empty", 0, 0);
    return check_done("json_escape_cases");
}
