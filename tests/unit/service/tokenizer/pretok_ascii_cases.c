/* pretok_ascii.c against its oracle: the o200k_base and cl100k_base
 * patterns through PCRE2 (tokenizer_piece_end()), piece by piece, on
 * hand-picked texts and on random ASCII texts drawn from the bytes where
 * the patterns' alternatives meet (letters of both cases, digits, every
 * kind of white space, apostrophes and contractions, slashes, punctuation,
 * control bytes), and on every three-byte ASCII text (tokenizer_cases and
 * tokenizer_exactness check the counts that follow from the pieces).
 *   pretok_ascii_cases <ranks folder> */
#define XORSHIFT_SEED 0x70e7a5c11ull
#include "pretok_ascii.h"
#include "tokenizer.h"
#include "check.h"
#include "xorshift.h"

#include <string.h>

static const char *const names[] = {"o200k_base", "cl100k_base"};

/* Walks text by PCRE2's pieces and checks the hand-written splitter's
 * piece at every start. Returns the number of pieces, -1 on a mismatch. */
static long agree(const tokenizer *t, const char *text, size_t len)
{
    long pieces = 0;
    for (size_t off = 0; off < len; pieces++) {
        size_t want = tokenizer_piece_end(t, text, len, off, 0);
        size_t got = tokenizer_piece_end(t, text, len, off, 1);
        if (want <= off || got != want) {
            fail("%s: piece at %zu of \"%.*s\": PCRE2 ends it at %zu, by hand at %zu",
                 tokenizer_name(t), off, (int)len, text, want, got);
            return -1;
        }
        off = want;
    }
    return pieces;
}

static const char *const texts[] = {
    "Hello world", "don't DON'T we'll I'm they've you're he'd", "'s 'stop 'S'LL",
    "ABCdef ABC def aBcD", "x  = 1234567;\n\n    return -1;\n", "   \n\n  x", "a\r\n\r\nb",
    "  trailing   ", "\t\tindent\tx", "path/to/file.c://x\n/", "-> => ... ?! (foo) [bar]",
    " (foo", "//foo", "};\n\n}", "\x01\x02" "a\x1f b\x7f", "\v\f \v x", "12 345 6789 0x7fff",
    "<|endoftext|>", "a'b' c''d", "",
};

static void hand_picked(const tokenizer *t)
{
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        check(agree(t, texts[i], strlen(texts[i])) >= 0, "%s", texts[i]);
}

static void random_texts(const tokenizer *t, int rounds)
{
    static const char alphabet[] = "aZbYsStTlLrReEvVdDmM09 \t\n\r\v\f'/.(-_;\x01\x7f";
    char text[40];
    long pieces = 0;
    for (int r = 0; r < rounds; r++) {
        size_t len = below(sizeof text);
        for (size_t i = 0; i < len; i++)
            text[i] = alphabet[below(sizeof alphabet - 1)];
        long n = agree(t, text, len);
        if (n < 0)
            return;
        pieces += n;
    }
    check(pieces > rounds, "%s: only %ld pieces in %d texts", tokenizer_name(t), pieces, rounds);
}

/* Every byte below 0x80, so that no class is left untried. */
static void all_ascii(const tokenizer *t)
{
    char text[3];
    for (int a = 0; a < 128; a++)
        for (int b = 0; b < 128; b++)
            for (int c = 0; c < 128; c += 3) {
                text[0] = (char)a, text[1] = (char)b, text[2] = (char)c;
                if (agree(t, text, 3) < 0)
                    return;
            }
    check(1, "all pairs");
}

int main(int argc, char **argv)
{
    char err[600];
    if (argc != 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: pretok_ascii_cases <ranks folder> (%s)\n", argc == 2 ? err : "");
        return 1;
    }
    static const char *const ascii[] = {"plain ASCII, 16+ bytes long", "short", ""};
    static const char *const not_ascii[] = {"caf\xc3\xa9 au lait, longer than 8 bytes",
                                            "0123456789abcde\x80", "\xff"};
    for (size_t i = 0; i < 3; i++) {
        check(pretok_is_ascii((const unsigned char *)ascii[i], strlen(ascii[i])), "%s", ascii[i]);
        check(!pretok_is_ascii((const unsigned char *)not_ascii[i], strlen(not_ascii[i])),
              "%s is not ASCII", not_ascii[i]);
    }
    for (size_t i = 0; i < 2; i++) {
        const tokenizer *t = tokenizer_find(names[i], strlen(names[i]));
        check(t != NULL, "%s loaded", names[i]);
        if (!t)
            continue;
        hand_picked(t);
        random_texts(t, 200000);
        all_ascii(t);
    }
    tokenizer_unload();
    return check_done("pretok_ascii_cases");
}
