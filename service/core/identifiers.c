/* Finds identifiers in a text with a hand-written scanner, then checks which
 * of them a summary lost with one multi-pattern pass over the summary. */
#include "identifiers.h"

#include "acmatch.h"
#include "bytemap.h"

#include <stdlib.h>
#include <string.h>

#define SCHEME_MAX 32
#define KEY_MAX 64
#define QUOTE_MAX 200
#define HEX_MIN 7
#define EXT_MAX 10

const char *identifiers_kind_name(identifiers_kind k)
{
    switch (k) {
    case IDENT_PATH:
        return "path";
    case IDENT_URL:
        return "url";
    case IDENT_UUID:
        return "uuid";
    case IDENT_HEX:
        return "hex_id";
    case IDENT_NUMBER:
        return "number_unit";
    case IDENT_KEY_VALUE:
        return "key_value";
    case IDENT_QUOTED:
        return "quoted";
    }
    return "unknown";
}

/* ---- Byte classes ---- */

static int is_digit(unsigned c)
{
    return c >= '0' && c <= '9';
}

static int is_alpha(unsigned c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alnum(unsigned c)
{
    return is_alpha(c) || is_digit(c);
}

/* Letters, digits, _ and the bytes of non-ASCII letters. */
static int is_word(unsigned c)
{
    return is_alnum(c) || c == '_' || c >= 0x80;
}

static int is_hex(unsigned c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Punctuation classes, looked up per byte on the scanner's hot paths. */
enum { PATH_PUNCT = 1, NOT_URL = 2, NOT_VALUE = 4 };
static const unsigned char punct[256] = {
    ['.'] = PATH_PUNCT,
    ['_'] = PATH_PUNCT,
    ['-'] = PATH_PUNCT,
    ['~'] = PATH_PUNCT,
    ['/'] = PATH_PUNCT,
    ['+'] = PATH_PUNCT,
    ['@'] = PATH_PUNCT,
    ['%'] = PATH_PUNCT,
    [':'] = PATH_PUNCT,
    ['<'] = NOT_URL | NOT_VALUE,
    ['>'] = NOT_URL | NOT_VALUE,
    ['"'] = NOT_URL | NOT_VALUE,
    ['\''] = NOT_URL | NOT_VALUE,
    ['`'] = NOT_URL | NOT_VALUE,
    ['{'] = NOT_URL,
    ['}'] = NOT_URL | NOT_VALUE,
    ['|'] = NOT_URL,
    ['\\'] = NOT_URL,
    ['^'] = NOT_URL,
    [','] = NOT_VALUE,
    [';'] = NOT_VALUE,
    [')'] = NOT_VALUE,
    [']'] = NOT_VALUE,
};

/* c is one of the bytes in set (never NUL). */
static int in_set(unsigned c, const char *set)
{
    return c && strchr(set, (int)c);
}

static int is_path_byte(unsigned c)
{
    return is_alnum(c) || c >= 0x80 || (punct[c] & PATH_PUNCT);
}

static int is_url_byte(unsigned c)
{
    return c > 0x20 && c != 0x7f && !(punct[c] & NOT_URL);
}

typedef struct {
    const unsigned char *t;
    size_t len;
} text_t;

/* The length of the UTF-8 punctuation or space at i, or 0: no-break space
 * and Latin-1 marks, U+2000-U+206F (spaces, dashes, curly quotes, bullets,
 * ellipsis), arrows, CJK and fullwidth punctuation. They end identifiers
 * the way their ASCII cousins do: in "“/etc/hosts”" the path is /etc/hosts. */
static size_t unicode_punct(const text_t *x, size_t i)
{
    const unsigned char *p = x->t + i;
    size_t r = x->len - i;
    if (r >= 2 && p[0] == 0xc2)
        return in_set(p[1], "\xa0\xa1\xa7\xab\xb6\xb7\xbb\xbf") ? 2 : 0;
    if (r < 3 || p[2] < 0x80 || p[2] > 0xbf)
        return 0;
    if (p[0] == 0xe2)
        return p[1] == 0x80 || (p[1] == 0x81 && p[2] < 0xb0) || (p[1] == 0x86 && p[2] >= 0x90) ||
                       p[1] == 0x87
                   ? 3
                   : 0;
    if (p[0] == 0xe3)
        return p[1] == 0x80 ? 3 : 0;
    if (p[0] == 0xef && p[1] == 0xbc)
        return (p[2] >= 0x81 && p[2] <= 0x8f) || (p[2] >= 0x9a && p[2] <= 0xa0) || p[2] >= 0xbb ? 3
                                                                                                : 0;
    if (p[0] == 0xef && p[1] == 0xbd)
        return p[2] >= 0x9b && p[2] <= 0xa5 ? 3 : 0;
    return 0;
}

/* The byte at i, or a space outside the text or at Unicode punctuation:
 * the ends and punctuation are boundaries. */
static unsigned at(const text_t *x, size_t i)
{
    if (i >= x->len)
        return ' ';
    return x->t[i] >= 0xc2 && unicode_punct(x, i) ? ' ' : x->t[i];
}

/* The byte before i, seen the same way. */
static unsigned before(const text_t *x, size_t i)
{
    if (i == 0)
        return ' ';
    if (x->t[i - 1] < 0x80)
        return x->t[i - 1];
    if ((i >= 2 && unicode_punct(x, i - 2) == 2) || (i >= 3 && unicode_punct(x, i - 3) == 3))
        return ' ';
    return x->t[i - 1];
}

static int has_prefix(const text_t *x, size_t i, const char *s)
{
    size_t n = strlen(s);
    return n <= x->len - i && memcmp(x->t + i, s, n) == 0;
}

/* Moves end back over trailing bytes in trim, not before start. */
static size_t trim_end(const text_t *x, size_t start, size_t end, const char *trim)
{
    while (end > start && in_set(x->t[end - 1], trim))
        end--;
    return end;
}

/* ---- Matchers: each returns the identifier's end, or 0 ---- */

static size_t match_url(const text_t *x, size_t i)
{
    unsigned p = before(x, i);
    if (!is_alpha(x->t[i]) || is_word(p) || p == '+' || p == '.' || p == '-')
        return 0;
    size_t j = i + 1;
    while (j < x->len && j - i < SCHEME_MAX &&
           (is_alnum(x->t[j]) || x->t[j] == '+' || x->t[j] == '.' || x->t[j] == '-'))
        j++;
    if (!has_prefix(x, j, "://"))
        return 0;
    size_t rest = j + 3, k = rest;
    long paren = 0, bracket = 0;
    while (k < x->len && is_url_byte(at(x, k))) {
        paren += x->t[k] == '(' ? 1 : x->t[k] == ')' ? -1 : 0;
        bracket += x->t[k] == '[' ? 1 : x->t[k] == ']' ? -1 : 0;
        k++;
    }
    /* "(see http://x/a_(b))." keeps the balanced ")" and drops the rest. */
    while (k > rest) {
        unsigned c = x->t[k - 1];
        if (c == ')' && paren < 0)
            paren++;
        else if (c == ']' && bracket < 0)
            bracket++;
        else if (!in_set(c, ".,;:!?"))
            break;
        k--;
    }
    return k > rest ? k : 0;
}

/* A path starts after a byte that cannot end a word or a call: in
 * "check()/fail()" there is no path. */
static int path_may_follow(unsigned p)
{
    return !is_path_byte(p) && !in_set(p, "\\)]}");
}

static size_t match_windows_path(const text_t *x, size_t i)
{
    size_t body;
    if (is_alpha(x->t[i]) && at(x, i + 1) == ':' && (at(x, i + 2) == '\\' || at(x, i + 2) == '/'))
        body = i + 3;
    else if (x->t[i] == '\\' && at(x, i + 1) == '\\' && is_alnum(at(x, i + 2)))
        body = i + 2;
    else
        return 0;
    if (!path_may_follow(before(x, i)))
        return 0;
    size_t k = body;
    while (k < x->len && (is_path_byte(at(x, k)) || x->t[k] == '\\'))
        k++;
    k = trim_end(x, body, k, ".,;:");
    return k > body ? k : 0;
}

/* dir/file.ext, maybe with :line or :line:col after the extension. */
static int ends_with_extension(const text_t *x, size_t start, size_t end)
{
    size_t colon = start;
    while (colon < end && x->t[colon] != ':')
        colon++;
    for (size_t k = colon; k < end; k++)
        if (x->t[k] != ':' && !is_digit(x->t[k]))
            return 0;
    size_t ext = colon;
    while (ext > start && is_alnum(x->t[ext - 1]))
        ext--;
    size_t n = colon - ext;
    return n >= 1 && n <= EXT_MAX && ext - start >= 2 && x->t[ext - 1] == '.' &&
           x->t[ext - 2] != '/';
}

static size_t match_path(const text_t *x, size_t i)
{
    if (!is_path_byte(at(x, i)) || !path_may_follow(before(x, i)))
        return 0;
    size_t k = i;
    int alnum = 0;
    size_t slashes = 0, last_slash = i;
    while (k < x->len && is_path_byte(at(x, k)))
        k++;
    k = trim_end(x, i, k, ".,;:");
    for (size_t j = i; j < k; j++) {
        alnum |= is_alnum(x->t[j]) || x->t[j] >= 0x80;
        if (x->t[j] == '/') {
            slashes++;
            last_slash = j;
        }
    }
    if (!alnum || !slashes)
        return 0;
    if (x->t[i] == '/')
        return k - i >= 2 && x->t[i + 1] != '/' ? k : 0;
    if (has_prefix(x, i, "./") || has_prefix(x, i, "~/"))
        return k - i > 2 ? k : 0;
    if (has_prefix(x, i, "../"))
        return k - i > 3 ? k : 0;
    if (!is_alnum(x->t[i]) && x->t[i] != '_' && x->t[i] != '.' && x->t[i] < 0x80)
        return 0;
    if (slashes >= 2 || ends_with_extension(x, last_slash + 1, k))
        return k;
    return 0;
}

static size_t match_uuid(const text_t *x, size_t i)
{
    static const char shape[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
    if (is_word(before(x, i)) || before(x, i) == '-' || x->len - i < sizeof(shape) - 1)
        return 0;
    for (size_t k = 0; k < sizeof(shape) - 1; k++)
        if (shape[k] == '-' ? x->t[i + k] != '-' : !is_hex(x->t[i + k]))
            return 0;
    size_t end = i + sizeof(shape) - 1;
    return is_word(at(x, end)) || at(x, end) == '-' ? 0 : end;
}

static size_t match_hex(const text_t *x, size_t i)
{
    if (is_word(before(x, i)))
        return 0;
    size_t j = i;
    int prefixed = x->t[i] == '0' && (at(x, i + 1) == 'x' || at(x, i + 1) == 'X');
    if (prefixed)
        j += 2;
    size_t digits = j;
    int decimal = 0;
    while (j < x->len && is_hex(x->t[j]))
        decimal |= is_digit(x->t[j++]);
    if (j - digits < HEX_MIN || is_word(at(x, j)) || (!prefixed && !decimal))
        return 0;
    return j;
}

/* Units by family; the longest one that fits wins. */
#define U(s)                                                                                       \
    {                                                                                              \
        s, sizeof(s) - 1                                                                           \
    }
static const struct {
    const char *s;
    size_t len;
} units[] = {
    U("%"),      U("B"),     U("KB"),     U("MB"),      U("GB"),     U("TB"),        U("PB"),
    U("kB"),     U("KiB"),   U("MiB"),    U("GiB"),     U("TiB"),    U("PiB"),       U("kb"),
    U("mb"),     U("gb"),    U("tb"),     U("K"),       U("M"),      U("G"),         U("T"),
    U("k"),      U("byte"),  U("bytes"),  U("bit"),     U("bits"),   U("Kb"),        U("Mb"),
    U("Gb"),     U("bps"),   U("kbps"),   U("Kbps"),    U("Mbps"),   U("Gbps"),      U("B/s"),
    U("kB/s"),   U("KB/s"),  U("MB/s"),   U("GB/s"),    U("rps"),    U("qps"),       U("RPS"),
    U("QPS"),    U("ops/s"), U("req/s"),  U("ns"),      U("us"),     U("\xc2\xb5s"), U("\xce\xbcs"),
    U("ms"),     U("s"),     U("sec"),    U("secs"),    U("second"), U("seconds"),   U("m"),
    U("min"),    U("mins"),  U("minute"), U("minutes"), U("h"),      U("hr"),        U("hrs"),
    U("hour"),   U("hours"), U("d"),      U("day"),     U("days"),   U("w"),         U("wk"),
    U("week"),   U("weeks"), U("Hz"),     U("kHz"),     U("MHz"),    U("GHz"),       U("x"),
    U("tokens"), U("token"), U("lines"),
};
#undef U

/* digits, optional ,ddd groups, optional .fraction; returns the end or 0. */
static size_t match_digits(const text_t *x, size_t i)
{
    size_t j = i;
    while (j < x->len && is_digit(x->t[j]))
        j++;
    if (j == i)
        return 0;
    while (at(x, j) == ',' && is_digit(at(x, j + 1)) && is_digit(at(x, j + 2)) &&
           is_digit(at(x, j + 3)) && !is_digit(at(x, j + 4)))
        j += 4;
    if (at(x, j) == '.' && is_digit(at(x, j + 1))) {
        j++;
        while (j < x->len && is_digit(x->t[j]))
            j++;
    }
    return j;
}

/* The end of the longest unit at j (after a space when spaced), or 0. */
static size_t match_unit(const text_t *x, size_t j, int spaced)
{
    size_t best = 0;
    if (j >= x->len)
        return 0;
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        size_t n = units[u].len;
        if (n <= best || n > x->len - j || (unsigned char)units[u].s[0] != x->t[j] ||
            memcmp(x->t + j, units[u].s, n) != 0)
            continue;
        if (spaced && n == 1 && units[u].s[0] != '%')
            continue;
        best = n;
    }
    return best ? j + best : 0;
}

static size_t match_number(const text_t *x, size_t i)
{
    unsigned p = before(x, i);
    if (!is_digit(x->t[i]) || is_word(p) || p == '.')
        return 0;
    size_t j = i;
    for (;;) {
        size_t num = match_digits(x, j);
        if (!num)
            return 0;
        int spaced = num < x->len && x->t[num] == ' ' && j == i;
        size_t end = match_unit(x, num + (size_t)spaced, spaced);
        if (!end)
            return 0;
        /* 2h30m: another number and unit right after the unit. */
        if (!spaced && is_digit(at(x, end))) {
            j = end;
            continue;
        }
        return is_word(at(x, end)) ? 0 : end;
    }
}

/* The index of the quote closing the one at i (contents 1 to QUOTE_MAX
 * bytes on one line, not all blank), or 0. */
static size_t match_quote(const text_t *x, size_t i)
{
    unsigned q = x->t[i];
    if (q == '\'' && is_alnum(before(x, i)))
        return 0;
    size_t j = i + 1;
    int blank = 1;
    while (j < x->len && j - (i + 1) <= QUOTE_MAX) {
        unsigned c = x->t[j];
        if (c == q)
            break;
        if (c == '\n' || c == '\r')
            return 0;
        if (c != ' ' && c != '\t')
            blank = 0;
        j += c == '\\' && j + 1 < x->len && x->t[j + 1] != '\n' ? 2 : 1;
    }
    if (j >= x->len || x->t[j] != q || j - (i + 1) > QUOTE_MAX || blank)
        return 0;
    if (q == '\'' && is_alnum(at(x, j + 1)))
        return 0;
    return j;
}

#define LEFT_QUOTE "\xe2\x80\x9c"  /* U+201C */
#define RIGHT_QUOTE "\xe2\x80\x9d" /* U+201D */

/* The index of the ” closing the “ at i, under the same rules, or 0. */
static size_t match_curly_quote(const text_t *x, size_t i)
{
    size_t j = i + 3;
    int blank = 1;
    while (j < x->len && j - (i + 3) <= QUOTE_MAX && !has_prefix(x, j, RIGHT_QUOTE)) {
        if (x->t[j] == '\n' || x->t[j] == '\r')
            return 0;
        if (x->t[j] != ' ' && x->t[j] != '\t')
            blank = 0;
        j++;
    }
    if (j >= x->len || j - (i + 3) > QUOTE_MAX || blank)
        return 0;
    return j;
}

static size_t match_key_value(const text_t *x, size_t i)
{
    unsigned p = before(x, i);
    if (!(is_alpha(x->t[i]) || x->t[i] == '_') || is_word(p) || p == '.')
        return 0;
    size_t j = i + 1;
    while (j < x->len && j - i < KEY_MAX &&
           (is_alnum(x->t[j]) || x->t[j] == '_' || x->t[j] == '.' || x->t[j] == '-'))
        j++;
    if (at(x, j) != '=')
        return 0;
    size_t v = j + 1;
    unsigned c = at(x, v);
    if (c == '"' || c == '\'') {
        size_t close = match_quote(x, v);
        return close ? close + 1 : 0;
    }
    if (c <= 0x20 || in_set(c, "=>&|"))
        return 0;
    size_t k = v;
    while (k < x->len && at(x, k) > 0x20 && x->t[k] != 0x7f && !(punct[x->t[k]] & NOT_VALUE))
        k++;
    k = trim_end(x, v, k, ".:!?");
    return k > v ? k : 0;
}

/* ---- Scanner ---- */

typedef size_t (*matcher)(const text_t *x, size_t i);

static const struct {
    matcher match;
    identifiers_kind kind;
} atoms[] = {
    {match_url, IDENT_URL},
    {match_windows_path, IDENT_PATH},
    {match_path, IDENT_PATH},
    {match_uuid, IDENT_UUID},
    {match_hex, IDENT_HEX},
    {match_number, IDENT_NUMBER},
    {match_key_value, IDENT_KEY_VALUE},
};

static int quote_slot(unsigned c)
{
    return c == '"' ? 0 : c == '\'' ? 1 : c == '`' ? 2 : -1;
}

/* Each matcher runs only where its identifier may start (after a boundary)
 * and reads ahead at most over the run it would take, or a bounded window
 * for quotes, scheme and key; a match is skipped over whole. Linear. */
int identifiers_scan(const char *text, size_t len, identifiers_fn fn, void *ctx)
{
    text_t x = {(const unsigned char *)text, len};
    size_t closing[3] = {(size_t)-1, (size_t)-1, (size_t)-1};
    size_t i = 0;
    while (i < len) {
        unsigned c = at(&x, i);
        size_t close;
        if (has_prefix(&x, i, LEFT_QUOTE)) {
            if ((close = match_curly_quote(&x, i)) != 0) {
                identifiers_span s = {i + 3, close - i - 3, IDENT_QUOTED};
                int rc = fn(ctx, &s);
                if (rc)
                    return rc;
            }
            i += 3;
            continue;
        }
        int slot = quote_slot(c);
        if (slot >= 0) {
            if (closing[slot] == i || before(&x, i) == '\\') {
                i++;
            } else if (c == '`' && (at(&x, i + 1) == '`' || before(&x, i) == '`')) {
                while (i < len && x.t[i] == '`')
                    i++;
            } else if ((close = match_quote(&x, i)) != 0) {
                identifiers_span s = {i + 1, close - i - 1, IDENT_QUOTED};
                int rc = fn(ctx, &s);
                if (rc)
                    return rc;
                closing[slot] = close;
                i++;
            } else {
                i++;
            }
            continue;
        }
        /* Nothing starts at a blank or inside a word. */
        if (c <= 0x20 || is_word(before(&x, i))) {
            i++;
            continue;
        }
        size_t end = 0;
        identifiers_kind kind = IDENT_PATH;
        for (size_t a = 0; a < sizeof(atoms) / sizeof(atoms[0]) && !end; a++) {
            end = atoms[a].match(&x, i);
            kind = atoms[a].kind;
        }
        if (!end) {
            do
                i++;
            while (i < len && is_word(c) && is_word(at(&x, i)) && is_word(before(&x, i)));
            continue;
        }
        identifiers_span s = {i, end - i, kind};
        int rc = fn(ctx, &s);
        if (rc)
            return rc;
        i = end;
    }
    return 0;
}

/* ---- Retention ---- */

typedef struct {
    identifiers_span *v;
    size_t n, cap;
} span_list;

static int collect(void *ctx, const identifiers_span *s)
{
    span_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        identifiers_span *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return 1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *s;
    return 0;
}

int identifiers_lost(const char *text, size_t text_len, const char *summary, size_t summary_len,
                     identifiers_result *out)
{
    span_list all = {NULL, 0, 0};
    bytemap seen = {0};
    acmatch_pattern *pats = NULL;
    size_t *first = NULL;
    unsigned char *found = NULL;
    acmatch *m = NULL;
    int rc = -1;

    out->n = out->total = 0;
    if (identifiers_scan(text, text_len, collect, &all))
        goto done;

    /* Distinct identifiers, each at its first occurrence. */
    size_t nd = 0;
    pats = malloc((all.n ? all.n : 1) * sizeof(*pats));
    first = malloc((all.n ? all.n : 1) * sizeof(*first));
    if (!pats || !first || bytemap_init(&seen, all.n))
        goto done;
    for (size_t k = 0; k < all.n; k++) {
        const char *s = text + all.v[k].off;
        if (bytemap_put_new(&seen, s, all.v[k].len, nd))
            continue;
        pats[nd] = (acmatch_pattern){s, all.v[k].len};
        first[nd++] = k;
    }

    m = acmatch_new(pats, nd);
    found = malloc(nd ? nd : 1);
    if (!m || !found)
        goto done;
    acmatch_scan(m, summary, summary_len, found);
    for (size_t d = 0; d < nd; d++) {
        if (found[d])
            continue;
        if (out->n < IDENTIFIERS_MAX)
            out->spans[out->n++] = all.v[first[d]];
        out->total++;
    }
    rc = 0;
done:
    if (rc)
        out->n = out->total = 0;
    acmatch_free(m);
    free(found);
    free(first);
    free(pats);
    bytemap_free(&seen);
    free(all.v);
    return rc;
}
