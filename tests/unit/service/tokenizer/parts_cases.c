/* tokenizer_counts_by_parts() holds: under every encoding that says so, the
 * count of a text cut where it says adds up from the counts of its parts,
 * on random texts drawn from the bytes where the patterns' alternatives
 * meet (letters, digits, every kind of white space, marks, apostrophes,
 * non-ASCII letters and marks, bytes that are not UTF-8) on both sides of
 * (a) an ASCII punctuation mark and a space, and (b) a run of digits after
 * a mark, or after a letter and one space, before anything but a digit.
 *   parts_cases <ranks folder> */
#define XORSHIFT_SEED 0x9a27c0de5ull
#include "check.h"
#include "tokenizer.h"
#include "xorshift.h"

#include <string.h>

#define ROUNDS 40000

static const char *const names[] = {"bytes", "o200k_base", "cl100k_base"};
static const char *const pieces[] = {"a",
                                     "Z",
                                     "s",
                                     "'",
                                     "'s",
                                     "0",
                                     "7",
                                     " ",
                                     "  ",
                                     "\t",
                                     "\n",
                                     "\r\n",
                                     "\v",
                                     ".",
                                     ";",
                                     "/",
                                     "}",
                                     "{\"p\":",
                                     "-",
                                     "_",
                                     "(",
                                     "]",
                                     "\xff",
                                     "\xe2\x82",
                                     "\xc3\xa9",
                                     "\xc3\xaf",
                                     "\xe6\x97\xa5",
                                     "\xcc\x81",
                                     "\xe2\x80\x83",
                                     "\xc2\x85"};
#define N_PIECES (sizeof(pieces) / sizeof(pieces[0]))
static const char marks[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/* Appends up to n random pieces to text at *len. */
static void random_run(char *text, size_t *len, size_t n)
{
    for (size_t k = below(n + 1); k > 0; k--) {
        const char *p = pieces[below(N_PIECES)];
        memcpy(text + *len, p, strlen(p));
        *len += strlen(p);
    }
}

static int64_t count(const tokenizer *t, const char *s, size_t len)
{
    return tokenizer_count(t, s, len);
}

/* (a): A + mark, then " " + B. */
static void after_marks(const tokenizer *t)
{
    char text[256];
    size_t bad = 0;
    for (int r = 0; r < ROUNDS && bad == 0; r++) {
        size_t len = 0;
        random_run(text, &len, 12);
        text[len++] = marks[below(sizeof(marks) - 1)];
        size_t cut = len;
        text[len++] = ' ';
        random_run(text, &len, 12);
        int64_t whole = count(t, text, len),
                parts = count(t, text, cut) + count(t, text + cut, len - cut);
        if (whole != parts && bad++ == 0)
            fail("%s: \"%.*s\" counts %lld, cut after its mark %lld", tokenizer_name(t), (int)len,
                 text, (long long)whole, (long long)parts);
    }
    check(bad == 0, "%s: a mark and a space cut every text", tokenizer_name(t));
}

/* (b): A ending in a mark or in a letter and one space, then digits, then
 * B beginning with anything but a digit. */
static void around_digits(const tokenizer *t)
{
    char text[256];
    size_t bad = 0;
    for (int r = 0; r < ROUNDS && bad == 0; r++) {
        size_t len = 0;
        random_run(text, &len, 10);
        if (below(2))
            text[len++] = marks[below(sizeof(marks) - 1)];
        else
            text[len++] = "aZ"[below(2)], text[len++] = ' ';
        size_t from = len;
        for (size_t k = 1 + below(8); k > 0; k--)
            text[len++] = (char)('0' + below(10));
        size_t to = len;
        do {
            len = to;
            random_run(text, &len, 10);
        } while (len > to && text[to] >= '0' && text[to] <= '9');
        int64_t whole = count(t, text, len);
        int64_t parts =
            count(t, text, from) + count(t, text + from, to - from) + count(t, text + to, len - to);
        if (whole != parts && bad++ == 0)
            fail("%s: \"%.*s\" counts %lld, cut around its digits %lld", tokenizer_name(t),
                 (int)len, text, (long long)whole, (long long)parts);
    }
    check(bad == 0, "%s: digits after a mark or a letter and a space cut every text",
          tokenizer_name(t));
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc != 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: parts_cases RANKS_DIR (%s)\n", argc == 2 ? err : "");
        return 1;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const tokenizer *t = tokenizer_find(names[i], strlen(names[i]));
        check(t && tokenizer_counts_by_parts(t), "%s counts by parts", names[i]);
        if (!t)
            continue;
        after_marks(t);
        around_digits(t);
    }
    tokenizer_unload();
    return check_done("parts_cases");
}
