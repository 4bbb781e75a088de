/* identifiers: what the scanner finds (table), what a summary lost (table),
 * and random texts checked against a memmem() oracle. */
#define _GNU_SOURCE /* memmem, the oracle */
#include "identifiers.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXID 12

/* ---- Scanning ---- */

typedef struct {
    const char *name;
    const char *text;
    const char *want[MAXID]; /* "kind|bytes", in order; NULL ends */
} scan_case;

static const scan_case scan_cases[] = {
    {"unix paths",
     "open /etc/hosts and ./run.sh, then ~/notes/todo.md. Also ../up/x and "
     ".github/workflows/ci.yml",
     {"path|/etc/hosts", "path|./run.sh", "path|~/notes/todo.md", "path|../up/x",
      "path|.github/workflows/ci.yml"}},
    {"relative paths",
     "Edit src/main.c:42:7 and a/b/c; not and/or, TCP/IP, km/h, 1/2 or check()/fail()",
     {"path|src/main.c:42:7", "path|a/b/c"}},
    {"windows paths",
     "copy C:\\Users\\bob\\x.txt to \\\\server\\share and D:/data",
     {"path|C:\\Users\\bob\\x.txt", "path|\\\\server\\share", "path|D:/data"}},
    {"urls",
     "see https://example.com/a?b=c#d. (and http://x.org/wiki/A_(b)) or file:///etc/hosts",
     {"url|https://example.com/a?b=c#d", "url|http://x.org/wiki/A_(b)", "url|file:///etc/hosts"}},
    {"uuid",
     "id 550e8400-e29b-41d4-a716-446655440000 ok, not 550e8400-e29b-41d4-a716-44665544000",
     {"uuid|550e8400-e29b-41d4-a716-446655440000", "hex_id|550e8400", "hex_id|44665544000"}},
    {"hex ids",
     "commit a1b2c3d fixed; deadbeef and defaced are words, abc1234g is not an id; "
     "sha 0123456789abcdef0123, pid 1234567, ptr 0xdeadbeef1, short 12ab34",
     {"hex_id|a1b2c3d", "hex_id|0123456789abcdef0123", "hex_id|1234567", "hex_id|0xdeadbeef1"}},
    {"numbers with units",
     "used 512MB of 1.5 GiB in 30s (200ms p99), 80% cpu, 2h30m, 1,024 KB, 10k tokens, 3x faster",
     {"number_unit|512MB", "number_unit|1.5 GiB", "number_unit|30s", "number_unit|200ms",
      "number_unit|80%", "number_unit|2h30m", "number_unit|1,024 KB", "number_unit|10k",
      "number_unit|3x"}},
    {"numbers without units",
     "in 2024 we had 3 apples, 5 s, version 1.2.3, v2GB, 1st and 2nd, 10 sandwiches",
     {NULL}},
    {"key=value",
     "FOO=bar retries=3 --timeout=30s MODE=\"fast lane\"; a == b, x=>y, a=, y!=z, ?q=&r=",
     {"key_value|FOO=bar", "key_value|retries=3", "key_value|timeout=30s",
      "key_value|MODE=\"fast lane\""}},
    {"quotes",
     "He said \"hello world\", it's Bob's 'pick' and ran `ls -la`; ```sh``` \"\" \"  \" \"open",
     {"quoted|hello world", "quoted|pick", "quoted|ls -la"}},
    {"quote contents are scanned",
     "\"see /tmp/x\" and 'k=v'",
     {"quoted|see /tmp/x", "path|/tmp/x", "quoted|k=v", "key_value|k=v"}},
    {"json-like quotes",
     "{\"key\": \"value\", \"n\": \"a \\\"b\\\" c\"}",
     {"quoted|key", "quoted|value", "quoted|n", "quoted|a \\\"b\\\" c"}},
    {"unicode",
     "caf\xc3\xa9: /donn\xc3\xa9\x65s/\xc3\xa9t\xc3\xa9.txt \xe2\x86\x92 5 \xc2\xb5s",
     {"path|/donn\xc3\xa9\x65s/\xc3\xa9t\xc3\xa9.txt", "number_unit|5 \xc2\xb5s"}},
    {"unicode punctuation ends identifiers",
     "Edit \xe2\x80\x9c/etc/hosts\xe2\x80\x9d and \xe2\x80\x9cthe config\xe2\x80\x9d \xe2\x80\x94 "
     "took 30s\xe2\x80\xa6 then\xe2\x86\x92https://x.io/a\xe2\x80\x9d, \xc2\xabretries=3\xc2\xbb, "
     "abc\xe2\x80\x9c\x64\x65\x66/x/y\xe2\x80\x9d, caf\xc3\xa9/x/y",
     {"quoted|/etc/hosts", "path|/etc/hosts", "quoted|the config", "number_unit|30s",
      "url|https://x.io/a", "key_value|retries=3", "quoted|def/x/y", "path|def/x/y",
      "path|caf\xc3\xa9/x/y"}},
    {"boundaries",
     "x/etc/hosts,a1b2c3d4g,v512MB,foo.bar=1,word\"q\"",
     {"path|x/etc/hosts", "key_value|foo.bar=1", "quoted|q"}},
};

typedef struct {
    const char *text;
    identifiers_span spans[64];
    size_t n;
} seen_t;

static int remember(void *ctx, const identifiers_span *s)
{
    seen_t *seen = ctx;
    if (seen->n < 64)
        seen->spans[seen->n++] = *s;
    return 0;
}

static void format_span(const char *text, const identifiers_span *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s|%.*s", identifiers_kind_name(s->kind), (int)s->len, text + s->off);
}

static void run_scan_case(const scan_case *c)
{
    seen_t seen = {c->text, {{0, 0, IDENT_PATH}}, 0};
    check(identifiers_scan(c->text, strlen(c->text), remember, &seen) == 0, "%s: scan", c->name);
    size_t want = 0;
    while (want < MAXID && c->want[want])
        want++;
    char got[512];
    for (size_t i = 0; i < seen.n || i < want; i++) {
        if (i < seen.n)
            format_span(c->text, &seen.spans[i], got, sizeof(got));
        else
            snprintf(got, sizeof(got), "(nothing)");
        const char *w = i < want ? c->want[i] : "(nothing)";
        check(strcmp(got, w) == 0, "%s: identifier %zu is [%s], want [%s]", c->name, i, got, w);
    }
}

static int stop_at_second(void *ctx, const identifiers_span *s)
{
    (void)s;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

static void scan_stops(void)
{
    int calls = 0;
    const char *t = "/a/b x=1 \"q\"";
    check(identifiers_scan(t, strlen(t), stop_at_second, &calls) == 42 && calls == 2,
          "scan stops when the callback says so (calls %d)", calls);
}

/* ---- Retention ---- */

typedef struct {
    const char *name;
    const char *text;
    const char *summary;
    const char *lost[MAXID]; /* bytes, in order */
    size_t total;
} lost_case;

static const lost_case lost_cases[] = {
    {"present ones are not reported",
     "Wrote /srv/app/config.yaml with retries=3, timeout 30s; see https://x.io/a",
     "Wrote /srv/app/config.yaml; timeout 30s.",
     {"retries=3", "https://x.io/a"},
     2},
    {"deduplicated",
     "/a/b.c then abc1234 then /a/b.c and abc1234 and /a/b.c",
     "",
     {"/a/b.c", "abc1234"},
     2},
    {"order of first occurrence",
     "z=1 /y/x.c z=1 /y/x.c q=2 /y/x.c",
     "nothing here",
     {"z=1", "/y/x.c", "q=2"},
     3},
    {"equal bytes of two kinds count once", "'k=v' then k=v", "", {"k=v"}, 1},
    {"verbatim means a substring", "/tmp/x and 42ms", "/tmp/xyz and 42 ms", {"42ms"}, 1},
    {"everything kept", "/a/b.c k=v 30s", "k=v, 30s, /a/b.c", {NULL}, 0},
    {"empty text", "", "summary", {NULL}, 0},
    {"unicode summary",
     "\xe6\x97\xa5\xe6\x9c\xac /\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf/a.txt \xe2\x80\x94 7GB",
     "\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf: /\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf/a.txt",
     {"7GB"},
     1},
};

static void run_lost_case(const lost_case *c)
{
    identifiers_result r;
    if (identifiers_lost(c->text, strlen(c->text), c->summary, strlen(c->summary), &r) != 0) {
        fail("%s: identifiers_lost failed", c->name);
        return;
    }
    size_t want = 0;
    while (want < MAXID && c->lost[want])
        want++;
    check(r.n == want && r.total == c->total, "%s: %zu lost (%zu in all), want %zu (%zu)", c->name,
          r.n, r.total, want, c->total);
    for (size_t i = 0; i < r.n && i < want; i++) {
        const identifiers_span *s = &r.spans[i];
        check(s->len == strlen(c->lost[i]) && memcmp(c->text + s->off, c->lost[i], s->len) == 0,
              "%s: lost %zu is [%.*s], want [%s]", c->name, i, (int)s->len, c->text + s->off,
              c->lost[i]);
    }
}

/* 100 distinct settings, none in the summary: the first 64 reported. */
static void cap(void)
{
    char text[2048];
    size_t n = 0;
    for (int k = 0; k < 100; k++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "k%d=%d ", k, k);
    identifiers_result r;
    check(identifiers_lost(text, n, "", 0, &r) == 0, "cap: runs");
    check(r.n == IDENTIFIERS_MAX && r.total == 100, "cap: n %zu total %zu", r.n, r.total);
    char want[16];
    snprintf(want, sizeof(want), "k%d=%d", IDENTIFIERS_MAX - 1, IDENTIFIERS_MAX - 1);
    const identifiers_span *last = &r.spans[IDENTIFIERS_MAX - 1];
    check(last->len == strlen(want) && memcmp(text + last->off, want, last->len) == 0,
          "cap: the 64th is the 64th in order");
}

/* ---- Random texts ---- */

#define XORSHIFT_SEED 0x853c49e6748fea9bULL
#include "xorshift.h"

/* Fragments that make identifiers, and the bytes that make boundaries. */
static const char *const pieces[] = {
    "/",
    "./",
    "~/",
    "a",
    "b",
    "src",
    ".c",
    ".txt",
    ":",
    "=",
    "\"",
    "'",
    "`",
    " ",
    " ",
    "\n",
    "0",
    "7",
    "1234567",
    "abcdef",
    "MB",
    "ms",
    " GiB",
    "%",
    "x",
    "k",
    "http",
    "://",
    "-",
    ".",
    ",",
    ")",
    "(",
    "\\",
    "C:\\",
    "e29b",
    "\xc3\xa9",
    "\xff",
    "s",
    "\x00",
    "\xe2\x80\x9c",
    "\xe2\x80\x9d",
    "\xe2\x80\x94",
    "\xc2\xab",
};

static size_t random_text(char *buf, size_t cap)
{
    size_t n = 0, want = below(cap / 4);
    while (n < want) {
        const char *p = pieces[below(sizeof(pieces) / sizeof(pieces[0]))];
        size_t l = p[0] ? strlen(p) : 1;
        if (n + l > cap)
            break;
        memcpy(buf + n, p, l);
        n += l;
    }
    return n;
}

typedef struct {
    identifiers_span *v;
    size_t n, cap;
} all_t;

static int keep_all(void *ctx, const identifiers_span *s)
{
    all_t *a = ctx;
    if (a->n < a->cap)
        a->v[a->n++] = *s;
    return 0;
}

/* Spans stay inside the text, in order; atoms never overlap one another. */
static int spans_well_formed(const identifiers_span *v, size_t n, size_t len)
{
    size_t atom_end = 0, prev_off = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].len == 0 || v[i].off + v[i].len > len || v[i].off < prev_off)
            return 0;
        prev_off = v[i].off;
        if (v[i].kind != IDENT_QUOTED) {
            if (v[i].off < atom_end)
                return 0;
            atom_end = v[i].off + v[i].len;
        }
    }
    return 1;
}

static void random_rounds(int rounds)
{
    enum { CAP = 1200 };
    static char text[CAP], summary[CAP];
    static identifiers_span spans[CAP];
    int bad = 0;
    for (int r = 0; r < rounds && bad < 3; r++) {
        size_t tl = random_text(text, CAP);
        size_t sl = random_text(summary, CAP);
        all_t all = {spans, 0, CAP};
        identifiers_scan(text, tl, keep_all, &all);
        if (!spans_well_formed(spans, all.n, tl)) {
            fail("round %d: malformed spans", r);
            bad++;
            continue;
        }
        /* The oracle: distinct scanned identifiers memmem cannot find. */
        identifiers_span want[CAP];
        size_t nwant = 0;
        for (size_t i = 0; i < all.n; i++) {
            const char *s = text + spans[i].off;
            int dup = 0;
            for (size_t j = 0; j < i && !dup; j++)
                dup = spans[j].len == spans[i].len && !memcmp(text + spans[j].off, s, spans[i].len);
            if (!dup && !memmem(summary, sl, s, spans[i].len))
                want[nwant++] = spans[i];
        }
        identifiers_result res;
        if (identifiers_lost(text, tl, summary, sl, &res) != 0) {
            fail("round %d: identifiers_lost failed", r);
            bad++;
            continue;
        }
        size_t n = nwant < IDENTIFIERS_MAX ? nwant : IDENTIFIERS_MAX;
        int same = res.total == nwant && res.n == n;
        for (size_t i = 0; same && i < n; i++)
            same = res.spans[i].off == want[i].off && res.spans[i].len == want[i].len &&
                   res.spans[i].kind == want[i].kind;
        if (!same) {
            fail("round %d: %zu lost (%zu in all), oracle %zu", r, res.n, res.total, nwant);
            bad++;
        }
    }
    check(bad == 0, "random rounds agree with the oracle");
}

/* Inputs that would be quadratic for a careless scanner; the test's
 * timeout catches a regression. */
static void long_inputs(void)
{
    enum { N = 1 << 20 };
    static const char *const fills[] = {
        "\"", "'", "a", "/", "1", "a=", "`", "\"aaaaaaaaaaaaaaaaaaa", "0123456789", "http:/", "x/"};
    char *t = malloc(N);
    if (!t) {
        fail("long inputs: out of memory");
        return;
    }
    for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
        size_t l = strlen(fills[f]);
        for (size_t i = 0; i < N; i++)
            t[i] = fills[f][i % l];
        identifiers_result r;
        check(identifiers_lost(t, N, t, N / 2, &r) == 0, "long input %zu: runs", f);
    }
    free(t);
}

int main(void)
{
    for (size_t i = 0; i < sizeof(scan_cases) / sizeof(scan_cases[0]); i++)
        run_scan_case(&scan_cases[i]);
    scan_stops();
    for (size_t i = 0; i < sizeof(lost_cases) / sizeof(lost_cases[0]); i++)
        run_lost_case(&lost_cases[i]);
    cap();
    random_rounds(3000);
    long_inputs();
    return check_done("identifiers_cases");
}
