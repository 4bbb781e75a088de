/* The o200k_base and cl100k_base pre-tokenizer patterns on ASCII text, one
 * alternative after the other in the patterns' order (tokenizer.c). */
#include "pretok_ascii.h"

#include <stdint.h>
#include <string.h>

enum { UPPER = 1, LOWER = 2, DIGIT = 4, SPACE = 8, NEWLINE = 16, PUNCT = 32 };

static unsigned char class_of(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return UPPER;
    if (c >= 'a' && c <= 'z')
        return LOWER;
    if (c >= '0' && c <= '9')
        return DIGIT;
    if (c == '\r' || c == '\n')
        return SPACE | NEWLINE;
    if (c == '\t' || c == '\v' || c == '\f' || c == ' ')
        return SPACE;
    return PUNCT;
}

int pretok_is_ascii(const unsigned char *s, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull)
            return 0;
    }
    for (; i < len; i++)
        if (s[i] & 0x80)
            return 0;
    return 1;
}

static size_t skip(const unsigned char *s, size_t len, size_t i, unsigned classes)
{
    while (i < len && (class_of(s[i]) & classes))
        i++;
    return i;
}

static int lower_is(unsigned char c, char want)
{
    return c == want || c == want - 'a' + 'A';
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i]: its length, or 0. */
static size_t contraction(const unsigned char *s, size_t len, size_t i)
{
    if (i + 1 >= len || s[i] != '\'')
        return 0;
    unsigned char a = s[i + 1];
    if (lower_is(a, 's') || lower_is(a, 't') || lower_is(a, 'm') || lower_is(a, 'd'))
        return 2;
    if (i + 2 < len && ((lower_is(a, 'r') && lower_is(s[i + 2], 'e')) ||
                        (lower_is(a, 'v') && lower_is(s[i + 2], 'e')) ||
                        (lower_is(a, 'l') && lower_is(s[i + 2], 'l'))))
        return 3;
    return 0;
}

/* Where the letters of [^\r\n\p{L}\p{N}]?\p{L}... start at off, or len when
 * no such alternative can match there. */
static size_t letters_start(const unsigned char *s, size_t len, size_t off)
{
    unsigned c = class_of(s[off]);
    if (c & (UPPER | LOWER))
        return off;
    if (!(c & (NEWLINE | DIGIT)) && off + 1 < len && (class_of(s[off + 1]) & (UPPER | LOWER)))
        return off + 1;
    return len;
}

/* The alternatives both patterns end with: \p{N}{1,3}, then
 * " ?[^\s\p{L}\p{N}]+" followed by tail (o200k_base: [\r\n/]*, cl100k_base:
 * [\r\n]*), then the three of white space. */
static size_t common_tail(const unsigned char *s, size_t len, size_t off, int slash)
{
    unsigned c = class_of(s[off]);
    if (c & DIGIT) {
        size_t e = off + 1;
        while (e < len && e < off + 3 && (class_of(s[e]) & DIGIT))
            e++;
        return e;
    }
    size_t p = (s[off] == ' ' && off + 1 < len && (class_of(s[off + 1]) & PUNCT)) ? off + 1 : off;
    if (class_of(s[p]) & PUNCT) {
        size_t e = skip(s, len, p, PUNCT);
        while (e < len && (s[e] == '\r' || s[e] == '\n' || (slash && s[e] == '/')))
            e++;
        return e;
    }
    /* White space: [\s]*[\r\n]+ ends after the run's last line break;
     * \s+(?!\S) leaves the run's last space to the next piece unless the
     * text ends there; \s+ takes the whole run. */
    size_t e = skip(s, len, off, SPACE), last_nl = len;
    for (size_t i = off; i < e; i++)
        if (class_of(s[i]) & NEWLINE)
            last_nl = i;
    if (last_nl != len)
        return last_nl + 1;
    if (e == len || e - off == 1)
        return e;
    return e - 1;
}

size_t pretok_ascii_next(pretok_kind kind, const unsigned char *s, size_t len, size_t off)
{
    if (kind == PRETOK_CL100K) {
        size_t n = contraction(s, len, off);
        if (n)
            return off + n;
        size_t p = letters_start(s, len, off);
        if (p != len)
            return skip(s, len, p, UPPER | LOWER);
        return common_tail(s, len, off, 0);
    }
    /* o200k_base: [UPPER]*[LOWER]+ or [UPPER]+[LOWER]*, both after an
     * optional prefix and before an optional contraction; in ASCII either
     * one takes the run of capitals and then the run of small letters. */
    size_t p = letters_start(s, len, off);
    if (p != len) {
        size_t e = skip(s, len, skip(s, len, p, UPPER), LOWER);
        return e + contraction(s, len, e);
    }
    return common_tail(s, len, off, 1);
}
