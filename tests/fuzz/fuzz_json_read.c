/* libFuzzer target: the fast JSON reader (json_read.c) and the region a
 * request body's tree is built in (json_region.c) against jansson's
 * json_loadb(), the oracle, under each flag set the reader knows.
 *
 * For every input and flag set: what json_read() reads, json_loadb() reads
 * into the same tree (the same type at every place, strings and keys byte
 * for byte, integers, reals to the last bit, members in the same order);
 * json_region_loadb(), which falls back to jansson where the fast reader
 * gives up, accepts exactly what json_loadb() accepts, into the same tree,
 * and refuses the rest with json_loadb()'s own error (text, line, column,
 * position). A tree read into a region is then edited (a member added and
 * one replaced, as the decoders do) and released, so that the sanitizers
 * see both kinds of memory a region's document holds. At exit it prints
 * how many texts each way took.
 *
 * An input whose first byte is below 8 (never the start of JSON) drives a
 * generator instead, so that most texts are well formed: members with
 * duplicate and escaped keys (NUL among them), strings with every escape,
 * paired and lone surrogates, UTF-8 of every length and malformed UTF-8,
 * control bytes, integers at json_int_t's edges and past them, reals long
 * and short, huge and tiny, nesting around the reader's depth and past
 * jansson's, white space; now and then a text cut short or with bytes
 * after it. Any other input is read as it is. */
#include "json_read.h"
#include "json_region.h"
#include "fuzz_input.h"

#include <jansson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t flag_sets[] = {0, JSON_REJECT_DUPLICATES, JSON_ALLOW_NUL,
                                   JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL};

/* Per flag set, over the whole run. */
static struct {
    unsigned long fast, fell_back, refused;
} seen[4];

static void fail(const char *what, const char *doc, size_t len, size_t flags)
{
    fprintf(stderr, "fuzz_json_read: %s (flags %#zx)\n%.*s\n", what, flags,
            (int)(len > 2000 ? 2000 : len), doc);
    abort();
}

/* 1 when a and b are the same tree, compared by hand rather than by
 * json_equal(), which takes -0.0 for 0.0 and compares members by lookup,
 * not in order. */
static int same_tree(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL: {
        double x = json_real_value(a), y = json_real_value(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_tree(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        void *i = json_object_iter((json_t *)a), *j = json_object_iter((json_t *)b);
        for (; i && j; i = json_object_iter_next((json_t *)a, i),
                       j = json_object_iter_next((json_t *)b, j)) {
            size_t n = json_object_iter_key_len(i);
            if (n != json_object_iter_key_len(j) ||
                memcmp(json_object_iter_key(i), json_object_iter_key(j), n) != 0 ||
                !same_tree(json_object_iter_value(i), json_object_iter_value(j)))
                return 0;
        }
        return !i && !j;
    }
    default: /* true, false, null */
        return 1;
    }
}

static int same_error(const json_error_t *a, const json_error_t *b)
{
    return a->line == b->line && a->column == b->column && a->position == b->position &&
           strcmp(a->source, b->source) == 0 && strcmp(a->text, b->text) == 0 &&
           json_error_code(a) == json_error_code(b);
}

/* What the decoders do to a body's tree: members added and replaced after
 * the parse are jansson's own allocations, freed one by one on release. */
static void edit_and_release(json_t *doc, const json_t *ref, const char *body, size_t size,
                             size_t flags)
{
    json_t *copy = json_deep_copy(doc);
    if (!copy || !same_tree(copy, ref))
        fail("a region tree's deep copy differs from it", body, size, flags);
    if (json_is_object(doc)) {
        if (json_object_set_new(doc, "added after the parse", copy) != 0)
            fail("a member could not be added to a region tree", body, size, flags);
        void *first = json_object_iter(doc);
        if (first && json_object_iter_set_new(doc, first, json_string("replaced")) != 0)
            fail("a member could not be replaced in a region tree", body, size, flags);
    } else if (json_array_append_new(doc, copy) != 0) {
        fail("an element could not be added to a region tree", body, size, flags);
    }
    json_region_release(doc);
}

static void one_flag_set(size_t k, const char *body, size_t size)
{
    size_t flags = flag_sets[k];
    json_error_t ref_err, region_err;
    json_t *ref = json_loadb(body, size, flags, &ref_err);

    json_t *fast = json_read(body, size, flags);
    if (fast) {
        if (!ref)
            fail("json_read read what json_loadb refuses", body, size, flags);
        if (!same_tree(fast, ref))
            fail("json_read read a tree other than json_loadb's", body, size, flags);
        json_decref(fast);
    }

    json_t *doc = json_region_loadb(body, size, flags, &region_err);
    if (!ref != !doc)
        fail(ref ? "json_region_loadb refused what json_loadb reads"
                 : "json_region_loadb read what json_loadb refuses",
             body, size, flags);
    if (doc) {
        if (!same_tree(doc, ref))
            fail("json_region_loadb read a tree other than json_loadb's", body, size, flags);
        if (json_region_used(doc) > json_region_bytes(doc))
            fail("a region used more than it holds", body, size, flags);
        edit_and_release(doc, ref, body, size, flags);
        if (fast)
            seen[k].fast++;
        else
            seen[k].fell_back++;
    } else {
        if (!same_error(&region_err, &ref_err)) {
            fprintf(stderr, "json_region_loadb: %d:%d (%d) %s: %s\njson_loadb: %d:%d (%d) %s: %s\n",
                    region_err.line, region_err.column, region_err.position, region_err.source,
                    region_err.text, ref_err.line, ref_err.column, ref_err.position,
                    ref_err.source, ref_err.text);
            fail("json_region_loadb's error is not json_loadb's", body, size, flags);
        }
        seen[k].refused++;
    }
    json_decref(ref);
}

/* ---- Generated texts ---- */

/* Whether the text being generated may hold what is not JSON: one in
 * four, so that most texts are read whole. */
static int faulty;

static const char *pick_of(src *s, const char *const *list, size_t n)
{
    return list[pick(s, (unsigned)n)];
}
#define PICK(s, list) pick_of(s, list, sizeof(list) / sizeof((list)[0]))

static void space(buf *t, src *s)
{
    static const char *const spaces[] = {"", "", "", " ", "\n", "\t", "\r\n  ", "    "};
    puts_(t, PICK(s, spaces));
}

static void utf8(buf *t, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    put(t, u, n);
}

static void string_piece(buf *t, src *s)
{
    static const uint32_t edges[] = {0x80,   0x7FF,   0x800,   0xD7FF, 0xE000,
                                     0xFFFD, 0xFFFF,  0x10000, 0x10FFFF, 0xE9,
                                     0x20AC, 0x1F600, 0x3000,  0x85,   0xFEFF};
    static const char *const escapes[] = {"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"};
    static const char *const surrogates[] = {
        "\\ud83d\\ude00", "\\uD800\\uDC00", "\\uDBFF\\uDFFF", "\\ud800", "\\udfff",
        "\\ud800\\n",     "\\ud800\\u0041", "\\udc00\\ud800", "\\ud800\\ud800\\udc00"};
    static const char *const malformed[] = {
        "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x80\x80\x80",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\x80", "\xe2\x82", "\xf0\x9f\x98",
        "\xc3", "\x01", "\x1f", "\x7f", "\\x", "\\u12", "\\u12G4", "\\U0041"};
    char hex[8];
    switch (pick(s, 12)) {
    case 0:
        puts_(t, PICK(s, escapes));
        break;
    case 1:
        snprintf(hex, sizeof hex, pick(s, 2) ? "\\u%04x" : "\\u%04X",
                 pick(s, 2) ? pick(s, 0x80) : (pick(s, 256) << 8 | pick(s, 256)));
        puts_(t, hex);
        break;
    case 2:
        puts_(t, PICK(s, surrogates));
        break;
    case 3:
        utf8(t, edges[pick(s, sizeof edges / sizeof edges[0])]);
        break;
    case 4: /* any code point that is not a surrogate */
        utf8(t, (uint32_t)(0x80 + (pick(s, 256) << 12 | pick(s, 256) << 4 | pick(s, 16))) % 0x10FF80u);
        break;
    case 5:
        if (faulty)
            puts_(t, PICK(s, malformed));
        break;
    case 6:
        if (pick(s, 4) == 0)
            puts_(t, pick(s, 2) ? "\\u0000" : "\\u0000x");
        break;
    case 7: /* a run long enough for the reader's eight-byte steps */
        for (unsigned k = 1 + pick(s, 40); k > 0; k--)
            put(t, &"abcdefghijklmnopqrstuvwxyz0123456789 .,:;{}[]'"[pick(s, 46)], 1);
        break;
    default:
        put(t, &"abcxyz AZ09-_"[pick(s, 13)], 1);
        break;
    }
}

static void string(buf *t, src *s)
{
    puts_(t, "\"");
    for (unsigned k = pick(s, 8); k > 0; k--)
        string_piece(t, s);
    puts_(t, "\"");
}

static void key(buf *t, src *s)
{
    /* A few keys, often the same one written two ways: duplicates. */
    static const char *const keys[] = {"\"a\"",    "\"b\"",       "\"\\u0061\"", "\"\"",
                                       "\"k\\n\"", "\"k\\u000a\"", "\"\xc3\xa9\"", "\"\\u00e9\"",
                                       "\"role\"", "\"content\""};
    if (faulty && pick(s, 8) == 0)
        puts_(t, "\"a\\u0000\""); /* jansson takes no NUL in a key */
    else if (pick(s, 3))
        puts_(t, PICK(s, keys));
    else
        string(t, s);
}

static void number(buf *t, src *s)
{
    static const char *const fixed[] = {
        "0",    "-0",     "-0.0", "1e400",  "-1e400", "1e-400", "4.9e-324", "2.5e-324",
        "1.7976931348623157e308", "1.7976931348623159e308", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "0.1e+1", "1E-0", "1E+2", "-0e-0"};
    static const char *const wrong[] = {"01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "- 1",
                                        "00", "1.e5", "Infinity"};
    if (pick(s, 3) == 0) {
        puts_(t, faulty && pick(s, 2) ? PICK(s, wrong) : PICK(s, fixed));
        return;
    }
    if (pick(s, 4) == 0)
        puts_(t, "-");
    unsigned digits = pick(s, 4) ? 1 + pick(s, 20) : 1 + pick(s, 80);
    put(t, &"123456789"[pick(s, 9)], 1);
    for (unsigned k = 1; k < digits; k++)
        put(t, &"0123456789"[pick(s, 10)], 1);
    if (pick(s, 2)) {
        puts_(t, ".");
        for (unsigned k = 1 + (pick(s, 4) ? pick(s, 17) : pick(s, 80)); k > 0; k--)
            put(t, &"0123456789"[pick(s, 10)], 1);
    }
    if (pick(s, 3) == 0) {
        puts_(t, pick(s, 2) ? "e" : "E");
        if (pick(s, 2))
            puts_(t, pick(s, 2) ? "+" : "-");
        for (unsigned k = 1 + pick(s, 3); k > 0; k--)
            put(t, &"0123456789"[pick(s, 10)], 1);
    }
}

static void value(buf *t, src *s, int depth);

static void container(buf *t, src *s, int depth, int object)
{
    puts_(t, object ? "{" : "[");
    space(t, s);
    for (unsigned k = pick(s, depth > 6 ? 2 : 6), first = 1; k > 0; k--, first = 0) {
        if (!first) {
            puts_(t, ",");
            space(t, s);
        }
        if (object) {
            key(t, s);
            space(t, s);
            puts_(t, ":");
            space(t, s);
        }
        value(t, s, depth + 1);
        space(t, s);
    }
    puts_(t, object ? "}" : "]");
}

/* Nesting around the reader's depth (512) and past jansson's (2048). */
static void deep(buf *t, src *s, int depth)
{
    static const unsigned depths[] = {100, 510, 511, 512, 513, 700, 2046, 2047, 2048, 2049};
    unsigned d = depths[pick(s, sizeof depths / sizeof depths[0])];
    int object = pick(s, 2);
    for (unsigned k = 0; k < d; k++)
        puts_(t, object ? "{\"a\":" : "[");
    value(t, s, depth + 100);
    for (unsigned k = 0; k < d; k++)
        puts_(t, object ? "}" : "]");
}

static void value(buf *t, src *s, int depth)
{
    static const char *const literals[] = {"true", "false", "null", "tru", "nul", "True", "nan"};
    switch (pick(s, depth > 8 ? 4 : 7)) {
    case 0:
        string(t, s);
        break;
    case 1:
        number(t, s);
        break;
    case 2:
        puts_(t, faulty ? PICK(s, literals) : literals[pick(s, 3)]);
        break;
    case 3:
        container(t, s, depth, 0);
        break;
    case 4:
    case 5:
        container(t, s, depth, 1);
        break;
    default:
        if (depth == 0 && pick(s, 4) == 0)
            deep(t, s, depth);
        else
            container(t, s, depth, 0);
        break;
    }
}

/* A document from the input's bytes; the caller frees t->b. */
static void generate(buf *t, src *s)
{
    faulty = pick(s, 4) == 0;
    space(t, s);
    container(t, s, 0, pick(s, 3) != 0);
    space(t, s);
    switch (faulty ? pick(s, 4) : 2) {
    case 0: /* cut short */
        t->n = pick(s, 256) * t->n / 256;
        break;
    case 1:
        puts_(t, PICK(s, ((const char *const[]){"x", "}", "]", ",", "{}", "\0"})));
        break;
    }
}

static void report(void)
{
    for (size_t k = 0; k < 4; k++)
        fprintf(stderr,
                "fuzz_json_read: flags %#zx: %lu read by the fast reader, %lu by jansson after it "
                "gave up, %lu refused as jansson refuses them\n",
                flag_sets[k], seen[k].fast, seen[k].fell_back, seen[k].refused);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_object_seed(1); /* as compactd does before its threads start */
    atexit(report);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    buf t = {0};
    if (size > 0 && data[0] < 8) {
        src s = {data + 1, size - 1};
        generate(&t, &s);
    } else {
        put(&t, data, size);
    }
    /* As the HTTP layer hands a body over: not NUL-terminated. A copy of
     * its exact size lets AddressSanitizer see any read past its end. */
    size = t.n;
    char *body = malloc(size ? size : 1);
    if (!body)
        abort();
    if (size)
        memcpy(body, t.b, size);
    free(t.b);
    for (size_t k = 0; k < sizeof flag_sets / sizeof flag_sets[0]; k++)
        one_flag_set(k, body, size);
    free(body);
    return 0;
}
