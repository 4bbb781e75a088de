/* libFuzzer target: the PDF, WAV and image header readers and the base64
 * decoder behind the media bounds (chat_media.c, chat_document.c,
 * chat_audio.c).
 *
 * The input's first byte picks a mode:
 *  - raw: the rest is a file read as an image, a PDF and audio, and as
 *    base64 text (checked against a decoder written here: the same bytes,
 *    and "not base64" exactly when it is not);
 *  - a PDF, a WAV or an image made from the rest by a generator that knows
 *    what it wrote: page objects and page trees (cyclic ones, several
 *    roots), every form of /Count (true, lying, huge, negative, signed,
 *    fractional, indirect), comments, form feeds and NULs, streams, #xx
 *    escapes, object streams; fmt and data chunks of every consistency,
 *    sizes past the end, zero and 0xFFFFFFFF sizes, missing padding;
 *    PNG, JPEG, GIF and WebP headers of every width, GIF frames past the
 *    screen, files cut short. Each is priced, also through base64 (with
 *    line breaks, the URL-safe alphabet, no padding, or a character that
 *    is not base64), and its price must be at least the bound docs/chat.md
 *    documents for what was written (the image formulas computed here in
 *    exact integers), at most the fixed bound.
 * Every reader must also do work linear in its input: this target is
 * built with the three readers' files instrumented for clang's profile
 * counters (tests/fuzz/CMakeLists.txt), and each call's count of executed
 * regions must stay within WORK_FIXED + WORK_PER_BYTE a byte. The counts
 * also steer the fuzzer: a call that does more work a byte than any
 * before is new coverage. */
#include "media_bytes.h"
#include "fuzz_input.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Work ---- */

/* The readers' profile counters: one a region of code, each counting its
 * executions (the section the linker gathers them in). */
extern uint64_t __start___llvm_prf_cnts[] __attribute__((weak));
extern uint64_t __stop___llvm_prf_cnts[] __attribute__((weak));

/* A reader's regions run at most this often for each byte of its input,
 * plus a fixed part: three times the most any linear input has been seen
 * to take (76 a byte: a PDF of nothing but /Type, each name read as the
 * last one's value and again as a name; corpus_media/raw-pdf-type-names),
 * far below what a pass over the rest of the input for each of its names
 * costs on inputs of a few kilobytes (2,000 a byte for 8 KB of
 * "/Count 1 %": corpus_media/raw-pdf-count-comments). */
#define WORK_PER_BYTE 256
#define WORK_FIXED 4096

static uint64_t work_now(void)
{
    size_t n = ((uintptr_t)__stop___llvm_prf_cnts - (uintptr_t)__start___llvm_prf_cnts) /
               sizeof(uint64_t);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += __start___llvm_prf_cnts[i];
    return sum;
}

enum { W_IMAGE, W_PDF, W_AUDIO, W_BASE64, W_KINDS };
static const char *const work_names[W_KINDS] = {"image header", "PDF", "audio", "base64"};
static uint64_t worst_work[W_KINDS];
static size_t worst_len[W_KINDS];
static unsigned long calls[W_KINDS], priced[4], above[4];
static volatile unsigned sink;

static void fail(const char *what, const void *file, size_t n)
{
    fprintf(stderr, "fuzz_media: %s (%zu bytes)\n", what, n);
    const unsigned char *b = file;
    for (size_t i = 0; i < n && i < 400; i++)
        fprintf(stderr, b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\' ? "%c" : "\\x%02x", b[i]);
    fputc('\n', stderr);
    abort();
}

/* Checks the work one call did on n bytes; a higher ratio than the one
 * before it reaches a new count of the loop of its kind, which libFuzzer
 * keeps as coverage. */
static void work_done(int kind, uint64_t before, const void *in, size_t n)
{
    uint64_t w = work_now() - before, ratio = w / (n + 16);
    calls[kind]++;
    if (w > WORK_FIXED + (uint64_t)WORK_PER_BYTE * n) {
        fprintf(stderr, "fuzz_media: %s: %llu regions run for %zu bytes\n", work_names[kind],
                (unsigned long long)w, n);
        fail("work above linear", in, n);
    }
    if (n >= 64 && w * (worst_len[kind] + 16) >= worst_work[kind] * (n + 16)) {
        worst_work[kind] = w;
        worst_len[kind] = n;
    }
    switch (kind) {
    case W_IMAGE:
        for (uint64_t i = 0; i < ratio && i < 255; i++)
            sink++;
        break;
    case W_PDF:
        for (uint64_t i = 0; i < ratio && i < 255; i++)
            sink++;
        break;
    case W_AUDIO:
        for (uint64_t i = 0; i < ratio && i < 255; i++)
            sink++;
        break;
    default:
        for (uint64_t i = 0; i < ratio && i < 255; i++)
            sink++;
        break;
    }
}

/* ---- The readers, measured ---- */

static int image_size(const unsigned char *b, size_t n, uint32_t *w, uint32_t *h)
{
    uint64_t t = work_now();
    *w = *h = 0;
    int rc = chat_image_size(b, n, w, h);
    work_done(W_IMAGE, t, b, n);
    if (rc == 0 && (*w == 0 || *h == 0))
        fail("an image sized with a side of 0", b, n);
    if (rc != 0)
        *w = *h = 0;
    return rc;
}

static int64_t file_tokens(chat_media_provider p, const unsigned char *b, size_t n)
{
    uint64_t t = work_now();
    int64_t tokens = chat_file_tokens(p, b, n);
    work_done(W_PDF, t, b, n);
    if (tokens <= 0 || tokens > CHAT_PART_MAX_TOKENS)
        fail("a file priced outside (0, the fixed bound]", b, n);
    return tokens;
}

static int64_t audio_tokens(const unsigned char *b, size_t n)
{
    uint64_t t = work_now();
    int64_t tokens = chat_audio_tokens(b, n);
    work_done(W_AUDIO, t, b, n);
    if (tokens < 0 || tokens > CHAT_PART_MAX_TOKENS)
        fail("audio priced outside [0, the fixed bound]", b, n);
    return tokens;
}

/* ---- Documented bounds, computed here ---- */

typedef unsigned __int128 u128;

static u128 ceil_div(u128 a, u128 b)
{
    return a / b + (a % b != 0);
}

/* docs/chat.md, Images: width * height / 750 after scaling the long edge to
 * at most 1568, at most 1600; in exact rationals. */
static int64_t anthropic_bound(uint32_t w, uint32_t h)
{
    if (w == 0 || h == 0)
        return CHAT_ANTHROPIC_IMAGE_MAX;
    uint64_t edge = w > h ? w : h;
    u128 num = (u128)w * h, den = 750;
    if (edge > 1568) {
        num *= 1568u * 1568u;
        den *= (u128)edge * edge;
    }
    u128 t = ceil_div(num, den);
    return t < CHAT_ANTHROPIC_IMAGE_MAX ? (int64_t)t : CHAT_ANTHROPIC_IMAGE_MAX;
}

/* Fit into 2048 x 2048, the short side scaled to 768, 85 + 170 a 512 px
 * tile, at most 1445: x = X / D and y = Y / D throughout. */
static int64_t openai_bound(uint32_t w, uint32_t h)
{
    if (w == 0 || h == 0)
        return CHAT_OPENAI_IMAGE_MAX;
    uint64_t edge = w > h ? w : h;
    u128 X = w, Y = h, D = 1;
    if (edge > 2048) {
        X = (u128)w * 2048;
        Y = (u128)h * 2048;
        D = edge;
    }
    u128 side = X < Y ? X : Y;
    if (side > 768 * D) {
        X *= 768;
        Y *= 768;
        D = side;
    }
    u128 tokens = 85 + 170 * ceil_div(X, 512 * D) * ceil_div(Y, 512 * D);
    return tokens < CHAT_OPENAI_IMAGE_MAX ? (int64_t)tokens : CHAT_OPENAI_IMAGE_MAX;
}

static void check_image_prices(uint32_t w, uint32_t h, const void *in, size_t n)
{
    int64_t a = chat_anthropic_image_tokens(w, h), o = chat_openai_image_tokens(w, h, 0);
    if (a < anthropic_bound(w, h) || a > CHAT_ANTHROPIC_IMAGE_MAX) {
        fprintf(stderr, "%u x %u: Anthropic %lld, documented %lld\n", w, h, (long long)a,
                (long long)anthropic_bound(w, h));
        fail("an Anthropic image price below its documented bound", in, n);
    }
    if (o < openai_bound(w, h) || o > CHAT_OPENAI_IMAGE_MAX) {
        fprintf(stderr, "%u x %u: OpenAI %lld, documented %lld\n", w, h, (long long)o,
                (long long)openai_bound(w, h));
        fail("an OpenAI image price below its documented bound", in, n);
    }
    if (chat_openai_image_tokens(w, h, 1) != CHAT_OPENAI_IMAGE_LOW)
        fail("detail low is not 85", in, n);
}

/* A PDF's page price by the documented rule, pages 0 meaning not counted. */
static int64_t pdf_bound(chat_media_provider p, uint64_t pages)
{
    uint64_t page = (p == CHAT_MEDIA_ANTHROPIC ? CHAT_ANTHROPIC_IMAGE_MAX : CHAT_OPENAI_IMAGE_MAX) +
                    CHAT_PDF_PAGE_TEXT_TOKENS;
    if (pages == 0 || pages > CHAT_PART_MAX_TOKENS / page)
        return CHAT_PART_MAX_TOKENS;
    return (int64_t)(pages * page);
}

/* 10 tokens a second of bytes at rate bytes a second, rounded up. */
static int64_t audio_bound(uint64_t bytes, uint64_t rate)
{
    uint64_t t = (bytes * CHAT_AUDIO_TOKENS_PER_SECOND + rate - 1) / rate;
    return t < CHAT_PART_MAX_TOKENS ? (int64_t)t : CHAT_PART_MAX_TOKENS;
}

/* ---- Base64, written plainly ---- */

static int b64_digit(unsigned char c)
{
    const char *std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *a = c ? strchr(std, c) : NULL, *u = c ? strchr(url, c) : NULL;
    return a ? (int)(a - std) : u ? (int)(u - url) : -1;
}

/* Base64 as docs/chat.md has it (either alphabet, spaces and line breaks
 * skipped, padding optional): 1 when text is not base64, else 0 and the
 * bytes in out (*n of them). */
static int b64_reference(const unsigned char *text, size_t len, unsigned char *out, size_t *n)
{
    uint32_t bits = 0, acc = 0;
    int padding = 0;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = text[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        if (c == '=') {
            padding = 1;
            continue;
        }
        int v = b64_digit(c);
        if (v < 0 || padding)
            return 1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[(*n)++] = (unsigned char)(acc >> bits);
        }
    }
    return 0;
}

/* ---- Writing and drawing (fuzz_input.h has the rest) ---- */

__attribute__((format(printf, 2, 3))) static void putf(buf *o, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(o, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

static void put_le(buf *o, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        put(o, &c, 1);
    }
}

static void put_be(buf *o, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        put(o, &c, 1);
    }
}

static uint32_t pick32(src *s)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | pick(s, 256);
    return v;
}

/* A width or height: the formulas' edges and the fields' limits. */
static uint32_t pick_side(src *s, uint32_t max)
{
    static const uint32_t sides[] = {0,    1,    2,    3,     100,     511,       512,       513,
                                     767,  768,  769,  1024,  1567,    1568,      1569,      2047,
                                     2048, 2049, 4096, 16383, 16384,   65535,     0xFFFFFF,  0x1000000,
                                     1000, 1000, 3000, 47,    0x3FFF,  0x7FFFFFFF, 0xFFFFFFFF, 750};
    uint32_t v = pick(s, 4) ? sides[pick(s, sizeof sides / sizeof sides[0])] : pick32(s);
    return v > max ? max : v;
}

/* ---- PDF ---- */

/* What the documented rule reads in a generated PDF: a /Count or a page
 * object outside the streams' data raises the pages; an escaped name
 * outside them, a /Count that is not a plain integer or a named object or
 * cross-reference stream makes them uncertain (the fixed bound). */
typedef struct {
    uint64_t most, page_objects;
    int uncertain;
} pdf_truth;

static const char *const pdf_spaces[] = {" ", "\n", "\r\n", "\t", "\f", " %c\n", "  %x\r", " %/x\n"};

static void pdf_space(buf *o, src *s)
{
    const char *sp = pdf_spaces[pick(s, sizeof pdf_spaces / sizeof pdf_spaces[0])];
    if (strcmp(sp, "\f") == 0 && pick(s, 2))
        put(o, "\0", 1); /* NUL is PDF white space too */
    else
        puts_(o, sp);
}

static void pdf_count(buf *o, src *s, pdf_truth *t, uint64_t pages)
{
    /* What stands before and after the number when it is not plain. */
    static const char *const forms[][2] = {
        {"+", ""}, {"", ".0"}, {"", " 0 R"}, {"", " %c\n0\nR"}, {"", ".5"}};
    uint64_t v;
    unsigned k;
    puts_(o, "/Count");
    pdf_space(o, s);
    switch (pick(s, 9)) {
    case 0: /* lying low */
        v = pick(s, 2);
        break;
    case 1: /* lying high */
        v = pick32(s) % 5000000;
        break;
    case 2: /* larger than any count */
        puts_(o, "184467440737095516161844674407370955161");
        t->most = UINT64_MAX;
        return;
    case 3: /* a closed outline's, passed over */
        putf(o, "-%u", pick(s, 100));
        return;
    case 4: /* not a plain integer */
        k = pick(s, sizeof forms / sizeof forms[0]);
        putf(o, "%s%llu%s", forms[k][0], (unsigned long long)pages, forms[k][1]);
        t->uncertain = 1;
        return;
    default:
        v = pages;
        break;
    }
    putf(o, "%llu", (unsigned long long)v);
    t->most = v > t->most ? v : t->most;
}

/* Stream data that holds no name, comment or keyword of its own. */
static void pdf_stream(buf *o, src *s, pdf_truth *t)
{
    puts_(o, "<< /Length 20 /Filter /FlateDecode >>\nstream\n");
    for (unsigned k = pick(s, 40); k > 0; k--) {
        unsigned char c = (unsigned char)pick(s, 256);
        if (c == '/' || c == '%' || c == 's' || c == 'e' || c == 'O' || c == 'X')
            c = '.';
        put(o, &c, 1);
    }
    switch (pick(s, 6)) {
    case 0: /* names in a stream's data only raise the count */
        putf(o, " /Count %u ", pick(s, 300));
        break;
    case 1: /* nor do these make it uncertain */
        puts_(o, " /C#6Funt +3 /Count 5 0 R ");
        break;
    case 2:
        puts_(o, " /Type /Page ");
        break;
    }
    (void)t;
    puts_(o, "\nendstream");
}

static void make_pdf(buf *o, src *s, pdf_truth *t)
{
    unsigned pages = pick(s, 24), nodes = 1 + pick(s, 4);
    unsigned first_page = 2 + nodes;
    putf(o, "%%PDF-1.%u\n", pick(s, 8));
    if (pick(s, 2))
        puts_(o, "%\xe2\xe3\xcf\xd3\n");
    puts_(o, "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n");
    for (unsigned j = 0; j < nodes; j++) {
        putf(o, "%u 0 obj\n<< /Type /Pages /Kids [", 2 + j);
        for (unsigned k = pick(s, 6); k > 0; k--) {
            /* pages, other nodes, this node or its parent: trees with
             * cycles and shared kids */
            unsigned ref = pick(s, 3) ? first_page + pick(s, pages + 1) : 2 + pick(s, nodes);
            putf(o, "%u 0 R ", ref);
        }
        puts_(o, "] ");
        if (pick(s, 5))
            pdf_count(o, s, t, pages);
        if (j)
            putf(o, " /Parent %u 0 R", 2 + pick(s, j));
        puts_(o, " >>\nendobj\n");
    }
    for (unsigned p = 0; p < pages; p++) {
        putf(o, "%u 0 obj\n<<", first_page + p);
        switch (pick(s, 8)) {
        case 0: /* no type: no page object by the documented rule */
            break;
        case 1: /* a node, not a page */
            puts_(o, "/Type/Pages");
            break;
        case 2: /* spelled with an escape */
            puts_(o, "/Type /P#61ge");
            t->uncertain = 1;
            break;
        default:
            puts_(o, "/Type");
            if (pick(s, 2))
                pdf_space(o, s);
            puts_(o, "/Page");
            t->page_objects++;
            break;
        }
        putf(o, " /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %u 0 R >>\nendobj\n",
             first_page + pages + p);
        putf(o, "%u 0 obj\n", first_page + pages + p);
        pdf_stream(o, s, t);
        puts_(o, "\nendobj\n");
    }
    switch (pick(s, 10)) {
    case 0:
        puts_(o, "99 0 obj << /Type /ObjStm /N 3 /First 10 >>\nstream\nx\nendstream\nendobj\n");
        t->uncertain = 1;
        break;
    case 1:
        puts_(o, "98 0 obj << /Type /XRef /W [1 2 1] >>\nstream\nx\nendstream\nendobj\n");
        t->uncertain = 1;
        break;
    case 2: /* an outline's count only raises the pages */
        puts_(o, "97 0 obj << /Type /Outlines ");
        pdf_count(o, s, t, pages);
        puts_(o, " >>\nendobj\n");
        break;
    case 3:
        puts_(o, "96 0 obj << /N#61me (x) >>\nendobj\n");
        t->uncertain = 1;
        break;
    }
    puts_(o, "xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n9\n"
             "%%EOF\n");
}

/* ---- WAV ---- */

/* What a generated WAV holds, for the bound docs/chat.md documents: its
 * fmt and data chunks in the order written, whether the fmt chunk is
 * consistent (and its bytes a second), and where the data chunk's bytes
 * start and how many its size field says. */
typedef struct {
    int fmt, data, data_before_fmt, consistent;
    uint64_t rate;
    size_t data_at;
    uint32_t data_size;
} wav_truth;

static void wav_fmt(buf *o, src *s, wav_truth *t)
{
    static const uint32_t rates[] = {8000, 16000, 22050, 24000, 44100, 48000, 96000, 384000,
                                     1000, 999,   384001, 0,    11025, 1,     32000, 7999};
    static const uint16_t bits_per[] = {8, 16, 24, 32, 64, 12, 0, 4};
    static const uint16_t formats[] = {1, 3, 0xFFFE};
    static const uint32_t sizes[] = {16, 16, 18, 40, 14, 17};
    uint16_t format = (uint16_t)(pick(s, 6) ? formats[pick(s, 3)] : pick(s, 65536));
    uint16_t channels = (uint16_t)(pick(s, 4) ? 1 + pick(s, 2) : pick(s, 65536));
    uint32_t rate = pick(s, 4) ? rates[pick(s, 16)] : pick32(s);
    uint16_t bits = bits_per[pick(s, 8)];
    uint32_t align = channels * (bits / 8u), byte_rate = (uint32_t)((uint64_t)rate * align);
    if (pick(s, 4) == 0) { /* a field that lies */
        if (pick(s, 2))
            align++;
        else
            byte_rate = pick(s, 2) ? byte_rate / 2 : pick32(s);
    }
    uint32_t size = sizes[pick(s, 6)];
    puts_(o, "fmt ");
    put_le(o, size, 4);
    put_le(o, format, 2);
    put_le(o, channels, 2);
    put_le(o, rate, 4);
    put_le(o, byte_rate, 4);
    put_le(o, align, 2);
    put_le(o, bits, 2);
    for (uint32_t i = 16; i < size + (size & 1); i++)
        put(o, "\0", 1);
    t->fmt++;
    t->consistent = (format == 1 || format == 3 || format == 0xFFFE) && channels && bits &&
                    bits % 8 == 0 && rate >= 1000 && rate <= 384000 && size >= 16 &&
                    (uint16_t)align == channels * (bits / 8u) &&
                    byte_rate == (uint64_t)rate * (uint16_t)align;
    t->rate = byte_rate;
}

/* A data chunk; 1 when its size field reaches past what is written, which
 * ends the chunks. */
static int wav_data(buf *o, src *s, wav_truth *t)
{
    unsigned payload = pick(s, 4) ? pick(s, 2000) : pick(s, 65536);
    uint32_t size = payload;
    switch (pick(s, 6)) {
    case 0:
        size = 0; /* written by a streaming encoder: to the end */
        break;
    case 1:
        size = 0xFFFFFFFF;
        break;
    case 2:
        size = payload + 1 + pick(s, 5000);
        break;
    }
    puts_(o, "data");
    put_le(o, size, 4);
    t->data_before_fmt |= !t->fmt;
    t->data++;
    t->data_at = o->n;
    t->data_size = size;
    for (unsigned i = 0; i < payload; i++) {
        unsigned char c = (unsigned char)(i * 37);
        put(o, &c, 1);
    }
    if (size != payload || size == 0) /* the rest of the file is its samples */
        return 1;
    if (size & 1)
        put(o, "\0", 1);
    return 0;
}

static void make_wav(buf *o, src *s, wav_truth *t, int *wave)
{
    static const char *const riffs[] = {"RIFF", "RIFF", "RIFF", "RIFX", "RF64", "BW64", "RIFZ"};
    static const char *const others[] = {"LIST", "JUNK", "fact", "bext"};
    const char *riff = riffs[pick(s, 7)];
    *wave = strcmp(riff, "RIFZ") != 0;
    puts_(o, riff);
    put_le(o, pick32(s), 4);
    puts_(o, "WAVE");
    for (unsigned k = 1 + pick(s, 5); k > 0; k--) {
        switch (pick(s, 4)) {
        case 0:
            wav_fmt(o, s, t);
            break;
        case 1:
            if (wav_data(o, s, t)) {
                for (unsigned i = pick(s, 2) ? pick(s, 300) : 0; i > 0; i--)
                    put(o, "\x11", 1); /* more bytes after it */
                return;
            }
            break;
        default: {
            uint32_t size = pick(s, 64);
            puts_(o, others[pick(s, 4)]);
            put_le(o, size, 4);
            for (uint32_t i = 0; i < size + (size & 1); i++)
                put(o, "x", 1);
            break;
        }
        }
    }
}

/* ---- Images ---- */

/* The dimensions a decoder reads from a generated image, 0 x 0 where the
 * header does not give them (a side of 0, a GIF not walked to its end);
 * *need: the bytes that must be there for them to be read (for a GIF, all
 * of it). */
static void make_image(buf *o, src *s, uint32_t *w, uint32_t *h, size_t *need)
{
    *w = pick_side(s, UINT32_MAX);
    *h = pick_side(s, UINT32_MAX);
    switch (pick(s, 6)) {
    case 0: /* PNG */
        put(o, "\x89PNG\r\n\x1a\n", 8);
        put_be(o, 13, 4);
        puts_(o, "IHDR");
        put_be(o, *w, 4);
        put_be(o, *h, 4);
        *need = o->n;
        put(o, "\x08\x06\0\0\0", 5);
        break;
    case 1: { /* JPEG: segments, then a start of frame */
        static const unsigned char sofs[] = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7,
                                             0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF};
        *w &= 0xFFFF;
        *h &= 0xFFFF;
        put(o, "\xFF\xD8", 2);
        for (unsigned k = pick(s, 5); k > 0; k--) {
            switch (pick(s, 4)) {
            case 0:
                put(o, "\xFF\xFF", 2); /* a fill byte, then the marker */
                put_be(o, 0xE1, 1);
                break;
            case 1:
                put(o, "\xFF\xC4", 2); /* a Huffman table, no frame */
                break;
            case 2:
                put(o, "\xFF\xC8", 2); /* JPG, reserved */
                break;
            default:
                put(o, "\xFF", 1);
                put_be(o, 0xE0 + pick(s, 16), 1);
                break;
            }
            uint32_t len = 2 + pick(s, 40);
            put_be(o, len, 2);
            for (uint32_t i = 2; i < len; i++)
                put(o, "\xC0", 1); /* bytes that look like a frame marker */
        }
        put(o, "\xFF", 1);
        put_be(o, sofs[pick(s, sizeof sofs)], 1);
        put_be(o, 17, 2);
        put_be(o, 8, 1);
        put_be(o, *h, 2);
        put_be(o, *w, 2);
        *need = o->n;
        put(o, "\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01", 10);
        break;
    }
    case 2: { /* GIF: a screen, then frames that may reach past it */
        uint32_t sw = *w & 0xFFFF, sh = *h & 0xFFFF;
        *w = sw;
        *h = sh;
        puts_(o, pick(s, 2) ? "GIF89a" : "GIF87a");
        put_le(o, sw, 2);
        put_le(o, sh, 2);
        unsigned global = pick(s, 2) ? 0x80 | pick(s, 8) : 0;
        put_le(o, global, 1);
        put(o, "\0\0", 2);
        if (global)
            for (unsigned i = 0; i < 3u * (2u << (global & 7)); i++)
                put(o, "\x7f", 1);
        int ends = 1;
        for (unsigned k = pick(s, 4); k > 0; k--) {
            if (pick(s, 2)) {
                put(o, "\x21\xF9\x04\x00\x0a\x00\x00\x00", 8); /* graphic control */
                continue;
            }
            uint32_t x = pick_side(s, 0xFFFF), y = pick_side(s, 0xFFFF);
            uint32_t fw = pick_side(s, 0xFFFF), fh = pick_side(s, 0xFFFF);
            unsigned local = pick(s, 3) ? 0 : 0x80 | pick(s, 8);
            put(o, "\x2C", 1);
            put_le(o, x, 2);
            put_le(o, y, 2);
            put_le(o, fw, 2);
            put_le(o, fh, 2);
            put_le(o, local, 1);
            if (local)
                for (unsigned i = 0; i < 3u * (2u << (local & 7)); i++)
                    put(o, "\x01", 1);
            put(o, "\x08\x03" "abc" "\x00", 6);
            *w = x + fw > *w ? x + fw : *w;
            *h = y + fh > *h ? y + fh : *h;
        }
        switch (pick(s, 5)) {
        case 0: /* no trailer */
            ends = 0;
            break;
        case 1: /* a block of no known kind */
            put(o, "\x99\x3B", 2);
            ends = 0;
            break;
        default:
            put(o, "\x3B", 1);
            break;
        }
        if (!ends)
            *w = *h = 0;
        *need = o->n;
        break;
    }
    case 3: /* WebP, lossy: 14 bits a side, two bits of scale above */
        *w &= 0x3FFF;
        *h &= 0x3FFF;
        puts_(o, "RIFF");
        put_le(o, 100, 4);
        puts_(o, "WEBPVP8 ");
        put_le(o, 80, 4);
        put(o, "\x30\x01\x00\x9d\x01\x2a", 6);
        put_le(o, *w | (uint32_t)pick(s, 4) << 14, 2);
        put_le(o, *h | (uint32_t)pick(s, 4) << 14, 2);
        *need = o->n;
        break;
    case 4: { /* WebP, lossless: 14 bits a side, less one */
        *w = 1 + (*w & 0x3FFF);
        *h = 1 + (*h & 0x3FFF);
        uint32_t bits = (*w - 1) | (*h - 1) << 14 | (uint32_t)pick(s, 4) << 28;
        puts_(o, "RIFF");
        put_le(o, 100, 4);
        puts_(o, "WEBPVP8L");
        put_le(o, 80, 4);
        put(o, "\x2f", 1);
        put_le(o, bits, 4);
        *need = o->n;
        break;
    }
    default: /* WebP, extended: 24 bits a side, less one */
        *w = 1 + (*w & 0xFFFFFF);
        *h = 1 + (*h & 0xFFFFFF);
        puts_(o, "RIFF");
        put_le(o, 100, 4);
        puts_(o, "WEBPVP8X");
        put_le(o, 10, 4);
        put_le(o, pick(s, 256), 4);
        put_le(o, *w - 1, 3);
        put_le(o, *h - 1, 3);
        *need = o->n;
        break;
    }
    if (*w == 0 || *h == 0)
        *w = *h = 0;
}

/* ---- Base64 of a generated file ---- */

/* The file in base64, written one of the ways clients write it; with bad
 * set, a character that is not base64 is put in (or padding before the
 * data). Returns a block of exactly *len bytes; the caller frees it. */
static char *to_base64(const unsigned char *b, size_t n, src *s, int bad, size_t *len)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *alpha = pick(s, 2) ? std : url;
    unsigned wrap = pick(s, 3) ? 0 : 4 * (1 + pick(s, 20)), line = 0;
    int pad = pick(s, 2);
    buf o = {0};
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        size_t digits = n - i >= 3 ? 4 : n - i + 1;
        for (size_t k = 0; k < 4; k++) {
            if (k < digits)
                put(&o, &alpha[(v >> (18 - 6 * k)) & 63], 1);
            else if (pad)
                put(&o, "=", 1);
        }
        if (wrap && (line += 4) >= wrap) {
            put(&o, "\r\n", 2);
            line = 0;
        }
    }
    buf out = {0};
    if (bad) {
        static const char wrong[] = "!*.\"\\\x80~";
        size_t at = pick(s, (unsigned)o.n + 1);
        char c = wrong[pick(s, sizeof wrong - 1)];
        if (n > 0 && pick(s, 4) == 0) /* padding, then the data */
            at = 0, c = '=';
        put(&out, o.b, at);
        put(&out, &c, 1);
        put(&out, o.b + at, o.n - at);
    } else {
        put(&out, o.b, o.n);
    }
    free(o.b);
    char *text = (char *)exact_copy(&out);
    *len = out.n;
    free(out.b);
    return text;
}

/* Prices the file through base64 as the chat codecs do: the same as from
 * its bytes, or "not base64" when a character that is not was put in. */
static void through_base64(const unsigned char *b, size_t n, src *s, int audio)
{
    int bad = pick(s, 8) == 0;
    size_t len;
    char *text = to_base64(b, n, s, bad, &len);
    for (int p = 0; p < 2; p++) {
        int64_t tokens = -1;
        uint64_t t = work_now();
        int rc = chat_media_tokens_base64((chat_media_provider)p, audio, text, len, &tokens);
        work_done(W_BASE64, t, text, len);
        if (bad ? rc != -1 : rc != 0)
            fail(bad ? "base64 with a character that is not base64 read as base64"
                     : "base64 refused",
                 text, len);
        if (!bad && tokens != (audio ? chat_audio_tokens(b, n)
                                     : chat_file_tokens((chat_media_provider)p, b, n)))
            fail("a price through base64 other than from the bytes", text, len);
    }
    free(text);
}

/* ---- The modes ---- */

static void raw(const unsigned char *b, size_t n)
{
    uint32_t w, h;
    uint64_t pages = 0;
    image_size(b, n, &w, &h);
    check_image_prices(w, h, b, n);
    uint64_t t = work_now();
    int rc = chat_pdf_pages(b, n, &pages);
    work_done(W_PDF, t, b, n);
    for (int p = 0; p < 2; p++)
        if (file_tokens((chat_media_provider)p, b, n) != pdf_bound(p, rc == 0 ? pages : 0))
            fail("a file priced other than by its pages", b, n);
    if (rc == 0 && pages == 0)
        fail("a PDF of 0 pages", b, n);
    /* Anything a WAV decoder does not read (RIFF, RIFX, RF64 or BW64, then
     * WAVE) is priced at its bytes. */
    int64_t audio = audio_tokens(b, n);
    int wave = n >= 12 && memcmp(b + 8, "WAVE", 4) == 0 &&
               (memcmp(b, "RIFF", 4) == 0 || memcmp(b, "RIFX", 4) == 0 ||
                memcmp(b, "RF64", 4) == 0 || memcmp(b, "BW64", 4) == 0);
    if (!wave && audio != audio_bound(n, CHAT_AUDIO_MIN_BYTES_PER_SECOND))
        fail("audio that is no WAV priced other than at its bytes", b, n);

    /* The same bytes as base64 text. */
    unsigned char *want = malloc(n / 4 * 3 + 3);
    size_t want_n, got_n;
    int got_bad;
    if (!want)
        abort();
    int bad = b64_reference(b, n, want, &want_n);
    t = work_now();
    unsigned char *got = chat_base64_decode((const char *)b, n, &got_n, &got_bad);
    work_done(W_BASE64, t, b, n);
    if (!got)
        abort();
    if (got_bad != bad || (!bad && (got_n != want_n || memcmp(got, want, want_n) != 0)))
        fail("base64 decoded other than the reference decodes it", b, n);
    for (int p = 0; p < 2; p++)
        for (int a = 0; a < 2; a++) {
            int64_t tokens = -1;
            rc = chat_media_tokens_base64((chat_media_provider)p, a, (const char *)b, n, &tokens);
            if (rc != (bad ? -1 : 0) ||
                (!bad && tokens != (a ? chat_audio_tokens(want, want_n)
                                      : chat_file_tokens((chat_media_provider)p, want, want_n))))
                fail("base64 media priced other than its decoded bytes", b, n);
        }
    if (chat_image_size_base64((const char *)b, n, &w, &h) == 0)
        check_image_prices(w, h, b, n);
    size_t payload;
    const char *at = chat_data_url_base64((const char *)b, n, &payload);
    if (at && (n < 13 || memcmp(b, "data:", 5) != 0 || at < (const char *)b + 12 ||
               at + payload != (const char *)b + n || memcmp(at - 8, ";base64,", 8) != 0))
        fail("a data URL's payload read from the wrong place", b, n);
    free(got);
    free(want);
}

static void generated_pdf(src *s)
{
    pdf_truth t = {0, 0, 0};
    buf o = {0};
    make_pdf(&o, s, &t);
    unsigned char *b = exact_copy(&o);
    uint64_t pages = t.uncertain ? 0 : (t.most > t.page_objects ? t.most : t.page_objects);
    for (int p = 0; p < 2; p++) {
        int64_t got = file_tokens((chat_media_provider)p, b, o.n), want = pdf_bound(p, pages);
        priced[1]++;
        above[1] += got > want;
        if (got < want) {
            fprintf(stderr, "priced %lld, documented %lld (pages %llu, uncertain %d)\n",
                    (long long)got, (long long)want, (unsigned long long)pages, t.uncertain);
            fail("a PDF priced below its documented bound", b, o.n);
        }
    }
    through_base64(b, o.n, s, 0);
    free(b);
    free(o.b);
}

static void generated_wav(src *s)
{
    wav_truth t = {0, 0, 0, 0, 0, 0, 0};
    buf o = {0};
    int wave;
    make_wav(&o, s, &t, &wave);
    unsigned char *b = exact_copy(&o);
    int64_t want;
    if (!wave) {
        want = audio_bound(o.n, CHAT_AUDIO_MIN_BYTES_PER_SECOND);
    } else if (memcmp(b, "RIFF", 4) != 0 || t.fmt != 1 || t.data != 1 || t.data_before_fmt ||
               !t.consistent) {
        want = CHAT_PART_MAX_TOKENS;
    } else {
        /* What a decoder plays: the size field's bytes, as many as there
         * are; 0 and 0xFFFFFFFF (streaming encoders) to the end. */
        uint64_t there = o.n - t.data_at, played = there;
        if (t.data_size != 0 && t.data_size != 0xFFFFFFFF && t.data_size < there)
            played = t.data_size;
        want = audio_bound(played, t.rate);
    }
    int64_t got = audio_tokens(b, o.n);
    priced[2]++;
    above[2] += got > want;
    if (got < want) {
        fprintf(stderr, "priced %lld, documented %lld\n", (long long)got, (long long)want);
        fail("a WAV priced below its documented bound", b, o.n);
    }
    through_base64(b, o.n, s, 1);
    free(b);
    free(o.b);
}

static void generated_image(src *s)
{
    buf o = {0};
    uint32_t w, h, gw, gh;
    size_t need = 0;
    make_image(&o, s, &w, &h, &need);
    /* Cut short: a header that ends before its dimensions gives none. */
    if (o.n && pick(s, 6) == 0) {
        o.n = pick(s, (unsigned)o.n);
        if (o.n < need)
            w = h = 0;
    }
    unsigned char *b = exact_copy(&o);
    image_size(b, o.n, &gw, &gh);
    if (gw != w || gh != h) {
        fprintf(stderr, "read %u x %u, written %u x %u\n", gw, gh, w, h);
        fail("an image sized other than its header says", b, o.n);
    }
    check_image_prices(gw, gh, b, o.n);
    priced[3]++;
    above[3] += chat_anthropic_image_tokens(gw, gh) > anthropic_bound(w, h);
    size_t len;
    char *text = to_base64(b, o.n, s, 0, &len);
    uint32_t bw = 0, bh = 0;
    uint64_t t = work_now();
    int rc = chat_image_size_base64(text, len, &bw, &bh);
    work_done(W_BASE64, t, text, len);
    if (rc != (gw ? 0 : -1) || (gw && (bw != gw || bh != gh)))
        fail("a base64 image sized other than its bytes", text, len);
    free(text);
    free(b);
    free(o.b);
}

static void report(void)
{
    for (int k = 0; k < W_KINDS; k++)
        fprintf(stderr,
                "fuzz_media: %s: %lu calls; the most work a byte: %llu regions for %zu bytes, "
                "%.1f a byte (the limit: %d a byte + %d)\n",
                work_names[k], calls[k], (unsigned long long)worst_work[k], worst_len[k],
                worst_len[k] ? (double)worst_work[k] / (double)(worst_len[k] + 16) : 0.0,
                WORK_PER_BYTE, WORK_FIXED);
    fprintf(stderr,
            "fuzz_media: generated and priced at or above their documented bound: %lu PDF prices "
            "(%lu above it), %lu WAVs (%lu above), %lu images (%lu above)\n",
            priced[1], above[1], priced[2], above[2], priced[3], above[3]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Without the readers' counters there is no work to bound. */
    if (!__start___llvm_prf_cnts || __stop___llvm_prf_cnts == __start___llvm_prf_cnts) {
        fprintf(stderr, "fuzz_media: the readers are not built with -fprofile-instr-generate\n");
        abort();
    }
    atexit(report);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    src s = {data + 1, size - 1};
    switch (data[0] % 4) {
    case 0: {
        /* A copy of the exact size: AddressSanitizer sees reads past it. */
        unsigned char *b = malloc(size - 1 ? size - 1 : 1);
        if (!b)
            return 0;
        memcpy(b, data + 1, size - 1);
        raw(b, size - 1);
        free(b);
        break;
    }
    case 1:
        generated_pdf(&s);
        break;
    case 2:
        generated_wav(&s);
        break;
    default:
        generated_image(&s);
        break;
    }
    return 0;
}
