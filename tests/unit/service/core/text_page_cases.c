/* The page cutter of re-acquired texts: pages never split a UTF-8
 * character, put back together they are the text byte for byte, each
 * holds at most max_tokens (or one character), is the largest that does
 * under a count that grows with the text, and paging always reaches the
 * end. Checked against a byte-at-a-time oracle over random texts of one-
 * to four-byte characters under four counters. */
#define XORSHIFT_SEED 20261204u
#include "check.h"
#include "text_page.h"
#include "xorshift.h"

#include <stdlib.h>
#include <string.h>

/* ---- Counters ---- */

static int64_t count_bytes(void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)len;
}

/* One token per character. */
static int64_t count_chars(void *ctx, const char *text, size_t len)
{
    (void)ctx;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)text[i] & 0xC0) != 0x80;
    return n;
}

/* One token per run of non-spaces and one per space: a page may hold
 * many bytes per token, as a BPE's does. */
static int64_t count_words(void *ctx, const char *text, size_t len)
{
    (void)ctx;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == ' ' || i == 0 || text[i - 1] == ' ';
    return n;
}

/* A count that does not grow with the text (odd lengths cost more than the
 * even ones around them): pages must still fit and reach the end. */
static int64_t count_uneven(void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)(len % 2 ? len + 3 : len / 2);
}

static int64_t count_oom(void *ctx, const char *text, size_t len)
{
    int *calls = ctx;
    (void)text;
    (void)len;
    return ++*calls > 1 ? -1 : 1;
}

typedef struct {
    const char *name;
    text_page_count_fn fn;
    int grows; /* a longer text never counts fewer: pages are the largest */
} counter;

static const counter counters[] = {{"bytes", count_bytes, 1},
                                   {"chars", count_chars, 1},
                                   {"words", count_words, 1},
                                   {"uneven", count_uneven, 0}};

/* ---- Texts ---- */

static const char *const pieces[] = {
    "a", " ", "z", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x9a\x80", "\n", "\\", "\"", "\x7f"};

static size_t random_text(char *out, size_t cap)
{
    size_t len = 0, n = below(200);
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[below(sizeof(pieces) / sizeof(pieces[0]))];
        if (len + strlen(p) >= cap)
            break;
        memcpy(out + len, p, strlen(p));
        len += strlen(p);
    }
    return len;
}

/* ---- Oracle ---- */

static int boundary_oracle(const char *text, size_t len, size_t at)
{
    if (at > len)
        return 0;
    if (at == 0 || at == len)
        return 1;
    unsigned char c = (unsigned char)text[at];
    return c < 0x80 || c >= 0xC0;
}

/* Pages the whole text and checks every page. */
static void page_through(const counter *c, const char *text, size_t len, int64_t max)
{
    char joined[1024];
    size_t joined_len = 0, offset = 0, pages = 0;
    while (offset < len) {
        size_t end = 0;
        int rc = text_page_end(text, len, offset, max, c->fn, NULL, &end);
        check(rc == 0, "%s: text_page_end failed", c->name);
        if (rc != 0 || end <= offset || end > len) {
            fail("%s max %lld: page at %zu ends at %zu of %zu", c->name, (long long)max, offset,
                 end, len);
            return;
        }
        check(boundary_oracle(text, len, end), "%s: page end %zu splits a character", c->name, end);
        int64_t tokens = c->fn(NULL, text + offset, end - offset);
        size_t first_char = offset + 1;
        while (!boundary_oracle(text, len, first_char))
            first_char++;
        check(tokens <= max || end == first_char,
              "%s max %lld: page %zu-%zu holds %lld tokens and more than one character", c->name,
              (long long)max, offset, end, (long long)tokens);
        if (c->grows && end < len) {
            size_t next = end + 1;
            while (!boundary_oracle(text, len, next))
                next++;
            check(c->fn(NULL, text + offset, next - offset) > max,
                  "%s max %lld: page %zu-%zu could hold one more character", c->name,
                  (long long)max, offset, end);
        }
        memcpy(joined + joined_len, text + offset, end - offset);
        joined_len += end - offset;
        offset = end;
        pages++;
    }
    check(joined_len == len && memcmp(joined, text, len) == 0,
          "%s max %lld: the pages put back together are not the text", c->name, (long long)max);
    check(pages <= len, "%s: %zu pages for %zu bytes", c->name, pages, len);
}

/* ---- Cases ---- */

static void boundaries(void)
{
    const char *t = "a\xc3\xa9\xf0\x9f\x9a\x80z";
    size_t len = strlen(t);
    for (size_t at = 0; at <= len + 2; at++)
        check(text_page_boundary(t, len, at) == boundary_oracle(t, len, at),
              "boundary at %zu of '%s'", at, t);
}

static void edges(void)
{
    size_t end = 99;
    check(text_page_end("", 0, 0, 5, count_bytes, NULL, &end) == 0 && end == 0,
          "an empty text is one empty page");
    check(text_page_end("abc", 3, 3, 5, count_bytes, NULL, &end) == 0 && end == 3,
          "a page at the end is empty");
    check(text_page_end("abcdef", 6, 0, 100, count_bytes, NULL, &end) == 0 && end == 6,
          "a text that fits is one page");
    check(text_page_end("abcdef", 6, 2, 3, count_bytes, NULL, &end) == 0 && end == 5,
          "three bytes from offset 2");
    /* A four-byte character under one token a byte, with room for one:
     * the page still holds it, so the next page starts after it. */
    check(text_page_end("\xf0\x9f\x9a\x80x", 5, 0, 1, count_bytes, NULL, &end) == 0 && end == 4,
          "a character that alone passes max_tokens is a page of its own");
    int calls = 0;
    check(text_page_end("abcdefgh", 8, 0, 2, count_oom, &calls, &end) == -1,
          "a count out of memory fails the cut");
}

static void random_texts(void)
{
    char text[1024];
    for (int round = 0; round < 3000; round++) {
        size_t len = random_text(text, sizeof(text));
        int64_t max = 1 + (int64_t)below(round % 3 ? 12 : 400);
        for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++)
            page_through(&counters[k], text, len, max);
    }
}

int main(void)
{
    boundaries();
    edges();
    random_texts();
    return check_done("text_page_cases");
}
