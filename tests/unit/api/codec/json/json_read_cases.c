/* The fast JSON reader against jansson's json_loadb(), the oracle: every
 * text it reads, json_loadb() reads with the same flags into a tree that
 * prints the same (members in the same order, reals to the last bit); it
 * gives up on every text json_loadb() refuses; and it does read the valid
 * texts compactd is sent, or the speed is gone. Hand-written cases for each
 * rule of the grammar, then generated documents (strings with every kind
 * of escape and UTF-8 sequence, numbers in every form, random whitespace)
 * and byte-level mutations of them. */
#define XORSHIFT_SEED 0x6a736f6e72656164u
#include "check.h"
#include "json_read.h"
#include "xorshift.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOTH (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

static const size_t flag_sets[] = {0, JSON_REJECT_DUPLICATES, JSON_ALLOW_NUL, BOTH};

/* The text of v in memory of malloc()'s own, whoever allocates jansson's. */
static char *dump(const json_t *v)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY, n = json_dumpb(v, NULL, 0, flags);
    char *s = malloc(n + 1);
    if (s && json_dumpb(v, s, n, flags) == n) {
        s[n] = '\0';
        return s;
    }
    free(s);
    return NULL;
}

/* 1 when json_read() read the text as json_loadb() does, 0 when it gave
 * up where json_loadb() also refuses; -1 (a failed check) otherwise.
 * *reads_out: whether json_read() read it. */
static int compare(const char *s, size_t len, size_t flags, int *reads_out)
{
    json_t *fast = json_read(s, len, flags);
    json_t *ref = json_loadb(s, len, flags, NULL);
    int result = 0;
    if (fast) {
        char *a = dump(fast), *b = ref ? dump(ref) : NULL;
        result = ref && a && b && strcmp(a, b) == 0 && json_equal(fast, ref) ? 1 : -1;
        if (result < 0)
            fprintf(stderr, "  read: %s\n  jansson: %s\n", a ? a : "(none)", b ? b : "(refused)");
        free(a);
        free(b);
    }
    if (reads_out)
        *reads_out = fast != NULL;
    json_decref(fast);
    json_decref(ref);
    return result;
}

/* ---- Hand-written cases ---- */

enum { READS, GIVES_UP, REFUSED };
typedef struct {
    const char *text;
    size_t len;   /* 0: strlen */
    size_t flags; /* BOTH unless said */
    int expect;   /* READS; GIVES_UP where jansson reads it too; REFUSED where it does not */
} hand_case;

#define T(s, e)                                                                                    \
    {                                                                                              \
        s, sizeof(s) - 1, BOTH, e                                                                  \
    }
#define TF(s, f, e)                                                                                \
    {                                                                                              \
        s, sizeof(s) - 1, f, e                                                                     \
    }

static const hand_case cases[] = {
    T("{}", READS),
    T("[]", READS),
    T(" \t\r\n{ \"a\" : [ 1 , 2 ] } \n", READS),
    T("{\"a\":1,\"b\":{\"c\":[true,false,null]},\"d\":\"x\"}", READS),
    T("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", READS),
    T("[\"\\u0041\\u00e9\\u20AC\\uD83D\\uDE00\"]", READS),
    T("[\"\\u0000\"]", READS),
    TF("[\"\\u0000\"]", JSON_REJECT_DUPLICATES, REFUSED),
    T("{\"\\u0000\":1}", REFUSED),
    T("{\"k\\u00e9y\":1,\"k\\\"2\":[\"v\\n\"]}", READS),
    T("[\"\\uD83D\"]", REFUSED),
    T("[\"\\uD83Dx\"]", REFUSED),
    T("[\"\\uD83D\\u0041\"]", REFUSED),
    T("[\"\\uDE00\"]", REFUSED),
    T("[\"\\u12\"]", REFUSED),
    T("[\"\\u12G4\"]", REFUSED),
    T("[\"\\x\"]", REFUSED),
    T("[\"\\\"]", REFUSED),
    T("[\"abc]", REFUSED),
    T("[\"a\tb\"]", REFUSED),
    T("[\"a\x01\"]", REFUSED),
    T("[\"a\x7f\"]", READS),
    {"[\"a\0b\"]", 7, BOTH, REFUSED},
    T("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]", READS),
    T("[\"\xc0\x80\"]", REFUSED),
    T("[\"\xc1\xbf\"]", REFUSED),
    T("[\"\xe0\x80\x80\"]", REFUSED),
    T("[\"\xed\xa0\x80\"]", REFUSED),
    T("[\"\xef\xbf\xbf\"]", READS),
    T("[\"\xf0\x80\x80\x80\"]", REFUSED),
    T("[\"\xf4\x8f\xbf\xbf\"]", READS),
    T("[\"\xf4\x90\x80\x80\"]", REFUSED),
    T("[\"\xf5\x80\x80\x80\"]", REFUSED),
    T("[\"\xc3\"]", REFUSED),
    T("[\"\xe2\x82\"]", REFUSED),
    T("[\"\x80\"]", REFUSED),
    T("[0,-0,7,-7,1.5,-1.5e3,1E+2,2e-2,0.0,1e-400]", READS),
    T("[9223372036854775807,-9223372036854775808]", READS),
    T("[9223372036854775808]", REFUSED),
    T("[-9223372036854775809]", REFUSED),
    T("[1e400]", REFUSED),
    T("[-1e400]", REFUSED),
    T("[01]", REFUSED),
    T("[-01]", REFUSED),
    T("[1.]", REFUSED),
    T("[.5]", REFUSED),
    T("[1e]", REFUSED),
    T("[1e+]", REFUSED),
    T("[-]", REFUSED),
    T("[+1]", REFUSED),
    T("[1x]", REFUSED),
    T("[0x10]", REFUSED),
    T("[truex]", REFUSED),
    T("[nul]", REFUSED),
    T("[True]", REFUSED),
    T("[1,]", REFUSED),
    T("[,1]", REFUSED),
    T("{\"a\":1,}", REFUSED),
    T("{\"a\" 1}", REFUSED),
    T("{a:1}", REFUSED),
    T("{\"a\":}", REFUSED),
    T("{\"a\":1 \"b\":2}", REFUSED),
    T("[1] x", REFUSED),
    T("[1][2]", REFUSED),
    T("", REFUSED),
    T("   ", REFUSED),
    T("1", REFUSED),
    T("\"s\"", REFUSED),
    T("\xef\xbb\xbf{}", REFUSED),
    T("{\"a\":1,\"a\":2}", REFUSED),
    TF("{\"a\":1,\"b\":3,\"a\":2}", JSON_ALLOW_NUL, READS),
    T("{\"a\":1,\"\\u0061\":2}", REFUSED),
    TF("{\"a\":1,\"\\u0061\":2}", 0, READS),
    TF("{}", JSON_DECODE_ANY, GIVES_UP),
    TF("{}", JSON_DISABLE_EOF_CHECK, GIVES_UP),
};

static void hand_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const hand_case *c = &cases[i];
        int reads, r = compare(c->text, c->len, c->flags, &reads);
        json_t *ref = json_loadb(c->text, c->len, c->flags, NULL);
        int jansson_reads = ref != NULL;
        json_decref(ref);
        check(r >= 0, "case %zu (%s): read differently from jansson", i, c->text);
        if (c->expect == READS)
            check(reads && jansson_reads, "case %zu (%s): should be read", i, c->text);
        else
            check(!reads && jansson_reads == (c->expect == GIVES_UP),
                  "case %zu (%s): should be given up on (jansson %s)", i, c->text,
                  c->expect == GIVES_UP ? "reads it" : "refuses it");
    }
}

/* Every offset of a quote, an escape and a multi-byte sequence within the
 * sixteen-byte blocks and eight-byte words of the plain-run scan, in
 * strings of every length up to three blocks. */
static void word_offsets(void)
{
    static const char *const marks[] = {"\\\"", "\\n", "\\u00e9", "\xc3\xa9", "\xf0\x9f\x98\x80",
                                        "\x1f", "\xc3"};
    char text[128];
    for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
        for (size_t before = 0; before < 48; before++) {
            size_t at = 0;
            text[at++] = '[';
            text[at++] = '"';
            for (size_t k = 0; k < before; k++)
                text[at++] = (char)('a' + k % 26);
            size_t ml = strlen(marks[m]);
            memcpy(text + at, marks[m], ml);
            at += ml;
            memcpy(text + at, "xyz\"]", 5);
            at += 5;
            int reads, r = compare(text, at, BOTH, &reads);
            json_t *ref = json_loadb(text, at, BOTH, NULL);
            check(r >= 0 && reads == (ref != NULL), "mark %zu after %zu bytes: %.*s", m, before,
                  (int)at, text);
            json_decref(ref);
        }
    }
}

/* ---- Generated documents ---- */

typedef struct {
    char *s;
    size_t len, cap;
} text_buf;

static void put(text_buf *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s)
            abort();
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
}

static void puts_(text_buf *t, const char *s)
{
    put(t, s, strlen(s));
}

static void space(text_buf *t)
{
    static const char *const ws[] = {"", "", "", " ", "\n", "\t ", "\r\n  "};
    puts_(t, ws[below(sizeof(ws) / sizeof(ws[0]))]);
}

static void utf8(text_buf *t, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    put(t, u, n);
}

/* A code point that is not a surrogate, of one of UTF-8's four lengths. */
static unsigned code_point(void)
{
    static const unsigned top[] = {0x80, 0x800, 0x10000, 0x110000};
    unsigned cp;
    do
        cp = (unsigned)below(top[below(4)]);
    while (cp >= 0xD800 && cp <= 0xDFFF);
    return cp;
}

static void string(text_buf *t, int key)
{
    char esc[16];
    puts_(t, "\"");
    size_t n = below(4) ? below(12) : below(80);
    for (size_t i = 0; i < n; i++) {
        unsigned cp = code_point();
        switch (below(8)) {
        case 0: { /* \u escape, a surrogate pair above U+FFFF */
            if (key && cp == 0)
                cp = 1;
            if (cp >= 0x10000) {
                unsigned v = cp - 0x10000;
                snprintf(esc, sizeof esc, "\\u%04X\\u%04x", 0xD800 + (v >> 10),
                         0xDC00 + (v & 0x3FF));
            } else {
                snprintf(esc, sizeof esc, below(2) ? "\\u%04x" : "\\u%04X", cp);
            }
            puts_(t, esc);
            break;
        }
        case 1: {
            static const char *const short_esc[] = {"\\\"", "\\\\", "\\/", "\\b",
                                                    "\\f",  "\\n",  "\\r", "\\t"};
            puts_(t, short_esc[below(8)]);
            break;
        }
        case 2:
            utf8(t, cp < 0x80 ? 0xE9 : cp);
            break;
        default: { /* plain ASCII, the common case */
            char c = (char)(0x20 + below(0x5F));
            if (c == '"' || c == '\\')
                c = 'q';
            put(t, &c, 1);
        }
        }
    }
    puts_(t, "\"");
}

static void number(text_buf *t)
{
    char s[64];
    switch (below(6)) {
    case 0:
        snprintf(s, sizeof s, "%d", (int)below(10));
        break;
    case 1:
        snprintf(s, sizeof s, "-%llu", (unsigned long long)(rnd() >> below(64)));
        break;
    case 2:
        snprintf(s, sizeof s, "%llu", (unsigned long long)(rnd() >> (1 + below(63))));
        break;
    case 3:
        snprintf(s, sizeof s, "%s%d.%0*d", below(2) ? "-" : "", (int)below(1000), 1 + (int)below(8),
                 (int)below(100000));
        break;
    case 4:
        snprintf(s, sizeof s, "%d%s%c%s%d", (int)below(100), below(2) ? ".25" : "",
                 below(2) ? 'e' : 'E',
                 below(3) == 0 ? "-"
                 : below(2)    ? "+"
                               : "",
                 (int)below(330));
        break;
    default:
        snprintf(s, sizeof s, "%.17g", (double)rnd() / (double)(rnd() | 1));
    }
    puts_(t, s);
}

static void value(text_buf *t, int depth)
{
    size_t kind = depth > 5 ? 2 + below(6) : below(8);
    if (kind < 2) {
        int obj = kind == 0;
        size_t n = below(6);
        puts_(t, obj ? "{" : "[");
        space(t);
        for (size_t i = 0; i < n; i++) {
            if (i) {
                puts_(t, ",");
                space(t);
            }
            if (obj) {
                string(t, 1);
                space(t);
                puts_(t, ":");
                space(t);
            }
            value(t, depth + 1);
            space(t);
        }
        puts_(t, obj ? "}" : "]");
        return;
    }
    if (kind < 5)
        string(t, 0);
    else if (kind < 7)
        number(t);
    else
        puts_(t, below(3) == 0 ? "true" : below(2) ? "false" : "null");
}

/* One mutation: a byte changed, dropped, doubled or inserted from the
 * bytes the grammar turns on, or the text cut short. */
static void mutate(text_buf *t)
{
    static const char bytes[] =
        "\"\\{}[]:,-+.eE0u\x01\x1f\x7f\x80\xbf\xc0\xc3\xe0\xed\xf0\xf4\xf5 ";
    if (!t->len)
        return;
    size_t at = below(t->len);
    char c = bytes[below(sizeof(bytes) - 1)];
    switch (below(5)) {
    case 0:
        t->s[at] = c;
        break;
    case 1:
        t->s[at] ^= (char)(1u << below(8));
        break;
    case 2:
        memmove(t->s + at, t->s + at + 1, t->len - at - 1);
        t->len--;
        break;
    case 3:
        put(t, " ", 1);
        memmove(t->s + at + 1, t->s + at, t->len - at - 1);
        t->s[at] = c;
        break;
    default:
        t->len = at;
    }
}

static void generated(void)
{
    size_t docs = 0, read_docs = 0, mutants = 0, mutants_read = 0, mutants_refused = 0;
    int bad = 0;
    for (int round = 0; round < 3000 && bad < 5; round++) {
        text_buf t = {0};
        space(&t);
        /* The top is an object or an array; within, anything. */
        do {
            t.len = 0;
            value(&t, 0);
        } while (t.s[0] != '{' && t.s[0] != '[');
        space(&t);
        size_t flags = flag_sets[below(4)];
        int reads, r = compare(t.s, t.len, flags, &reads);
        json_t *ref = json_loadb(t.s, t.len, flags, NULL);
        docs++;
        /* A generated text is valid; jansson refuses it only for a
         * duplicate key under JSON_REJECT_DUPLICATES, or for \u0000
         * without JSON_ALLOW_NUL. What jansson reads, the reader must. */
        if (r < 0 || (ref && !reads)) {
            fail("generated document (flags %zu) %s: %.*s", flags,
                 r < 0 ? "read differently" : "given up on", (int)t.len, t.s);
            bad++;
        }
        read_docs += reads;
        json_decref(ref);
        for (int m = 0; m < 20; m++) {
            text_buf u = {malloc(t.len + 64), t.len, t.len + 64};
            if (!u.s)
                abort();
            memcpy(u.s, t.s, t.len);
            for (size_t k = 1 + below(3); k > 0; k--)
                mutate(&u);
            r = compare(u.s, u.len, flags, &reads);
            ref = json_loadb(u.s, u.len, flags, NULL);
            mutants++;
            mutants_read += reads;
            mutants_refused += ref == NULL;
            if (r < 0 || (!ref && reads)) {
                fail("mutant (flags %zu) read where jansson %s: %.*s", flags,
                     ref ? "reads it otherwise" : "refuses it", (int)u.len, u.s);
                bad++;
            }
            json_decref(ref);
            free(u.s);
        }
        free(t.s);
    }
    printf("json_read_cases: %zu documents (%zu read), %zu mutants (%zu read, %zu refused by "
           "jansson)\n",
           docs, read_docs, mutants, mutants_read, mutants_refused);
    /* Both sides of the comparison must have been exercised. */
    check(read_docs > docs * 3 / 4, "too few generated documents read: %zu of %zu", read_docs,
          docs);
    check(mutants_read > mutants / 20 && mutants_refused > mutants / 4,
          "mutations exercised one side only: %zu read, %zu refused of %zu", mutants_read,
          mutants_refused, mutants);
}

/* Nesting deeper than the reader recurses goes to jansson. */
static void deep(void)
{
    size_t n = 2000, at = 0;
    char *s = malloc(2 * n + 1);
    if (!s)
        abort();
    for (size_t i = 0; i < n; i++)
        s[at++] = '[';
    for (size_t i = 0; i < n; i++)
        s[at++] = ']';
    int reads, r = compare(s, at, BOTH, &reads);
    json_t *ref = json_loadb(s, at, BOTH, NULL);
    check(r == 0 && !reads && ref, "2000 levels: given up on, read by jansson");
    json_decref(ref);
    free(s);
}

int main(void)
{
    json_object_seed(1);
    hand_cases();
    word_offsets();
    generated();
    deep();
    return check_done("json_read_cases");
}
