/* Identifier retention: finds in a unit's text the identifiers summarizers
 * tend to lose (paths, URLs, ids, exact numbers, settings, quotes) and
 * reports those its summary does not carry verbatim. Pure: no I/O. */
#ifndef COMPACTD_IDENTIFIERS_H
#define COMPACTD_IDENTIFIERS_H

#include <stddef.h>

/* What is recognized, by a hand-written scanner in one pass:
 *
 * IDENT_URL        scheme://rest: a scheme of letters, digits, + . - (up to
 *                  32) and a rest of printable non-space bytes other than
 *                  < > " ' ` { } | \ ^; trailing . , ; : ! ? and unbalanced
 *                  ) ] are left out.
 * IDENT_PATH       /abs/path, ./rel, ../rel, ~/home, C:\win or C:/win,
 *                  \\unc\share, and relative a/b/c (two slashes or more) or
 *                  dir/file.ext (an extension of 1-10 letters or digits,
 *                  optionally followed by :line or :line:col). Path bytes are
 *                  letters, digits, bytes >= 0x80 and . _ - ~ / + @ % :;
 *                  trailing . , ; : are left out.
 * IDENT_UUID       8-4-4-4-12 hex digits.
 * IDENT_HEX        a run of 7 or more hex digits holding at least one decimal
 *                  digit (git SHAs, long numbers such as PIDs or timestamps;
 *                  English words like "deadbeef" or "defaced" are not ids),
 *                  or 0x followed by 7 or more hex digits.
 * IDENT_NUMBER     a number (digits, optional ,ddd groups and .fraction) with
 *                  a unit of size, time, rate, frequency or percent: 512MB,
 *                  1.5 GiB, 30s, 200ms, 80%, 10k, 3x, 2h30m. A unit of one
 *                  letter must touch the number; longer ones may follow one
 *                  space.
 * IDENT_KEY_VALUE  key=value with no spaces around '=': a key of letters,
 *                  digits, _ . - starting with a letter or _ (up to 64), a
 *                  value that is a quoted string or a run of printable bytes
 *                  up to a space, quote , ; ) ] } < >. Catches FOO=bar,
 *                  retries=3, --timeout=30s; not a == b, x=>y or a=&b.
 * IDENT_QUOTED     the contents of "...", '...', `...` or “...”: 1 to 200 bytes on
 *                  one line, not all spaces; backslash escapes are skipped
 *                  inside, and an escaped quote opens nothing.
 *                  An apostrophe opens or closes a quote only beside a
 *                  non-letter, and runs of two or more backticks (code
 *                  fences) are not quotes.
 *
 * Unicode punctuation and spaces (curly quotes, dashes, ellipsis, arrows,
 * guillemets, no-break space, CJK and fullwidth punctuation) end an
 * identifier as ASCII punctuation does; other non-ASCII bytes count as
 * letters.
 *
 * Identifiers do not overlap, except that a quote's contents are scanned
 * for identifiers too: "see /tmp/x" yields the quote and the path. Every
 * identifier must start at a word boundary, and a path not right after
 * ) ] or } (so "check()/fail()" holds no path). */
typedef enum {
    IDENT_PATH = 0,
    IDENT_URL,
    IDENT_UUID,
    IDENT_HEX,
    IDENT_NUMBER,
    IDENT_KEY_VALUE,
    IDENT_QUOTED
} identifiers_kind;

/* text[off .. off+len) is the identifier; for a quote, its contents. */
typedef struct {
    size_t off;
    size_t len;
    identifiers_kind kind;
} identifiers_span;

/* "path", "url", "uuid", "hex_id", "number_unit", "key_value", "quoted". */
const char *identifiers_kind_name(identifiers_kind k);

/* Called once per identifier, in order of offset; returning nonzero stops
 * the scan. */
typedef int (*identifiers_fn)(void *ctx, const identifiers_span *span);

/* Calls fn for every identifier in text[0..len). Time is linear in len.
 * Returns 0, or the first nonzero value fn returned. */
int identifiers_scan(const char *text, size_t len, identifiers_fn fn, void *ctx);

/* At most this many lost identifiers are reported per text. */
#define IDENTIFIERS_MAX 64

typedef struct {
    /* The first n lost identifiers, as spans into the text, deduplicated
     * (equal bytes count once) and in order of first occurrence. */
    identifiers_span spans[IDENTIFIERS_MAX];
    size_t n;     /* the smaller of total and IDENTIFIERS_MAX */
    size_t total; /* how many distinct identifiers were lost in all */
} identifiers_result;

/* Finds the identifiers in text that do not occur verbatim (as a substring,
 * byte for byte) in summary, and fills *out. Neither string needs a NUL;
 * both are only read. Time is linear in the two lengths: the identifiers
 * are matched against the summary in one pass (see acmatch.h), with memory
 * for the automaton over the distinct identifiers' bytes. Returns 0, or -1
 * when out of memory (then *out is empty). */
int identifiers_lost(const char *text, size_t text_len, const char *summary, size_t summary_len,
                     identifiers_result *out);

#endif
