/* Document and file bounds (see chat_media.h): a PDF priced by the pages it
 * says it has, anything else by the largest part a model can take. */
#include "chat_media.h"

#include <stdlib.h>
#include <string.h>

/* Whether b[0..n) holds s. */
static int holds(const unsigned char *b, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (b[i] == (unsigned char)s[0] && memcmp(b + i, s, k) == 0)
            return 1;
    return 0;
}

/* PDF white space (ISO 32000-1, 7.2.2), and a comment, which counts as it. */
static int pdf_space(unsigned char c)
{
    return c == ' ' || c == '\r' || c == '\n' || c == '\t' || c == '\f' || c == '\0';
}

static int pdf_delimiter(unsigned char c)
{
    return c == '(' || c == ')' || c == '<' || c == '>' || c == '[' || c == ']' || c == '{' ||
           c == '}' || c == '/' || c == '%';
}

static size_t skip_space(const unsigned char *b, size_t n, size_t j)
{
    while (j < n) {
        if (pdf_space(b[j])) {
            j++;
        } else if (b[j] == '%') {
            while (j < n && b[j] != '\r' && b[j] != '\n')
                j++;
        } else {
            break;
        }
    }
    return j;
}

/* The end of the name that starts at b[i] == '/'. */
static size_t name_end(const unsigned char *b, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && !pdf_space(b[j]) && !pdf_delimiter(b[j]))
        j++;
    return j;
}

static int name_is(const unsigned char *b, size_t start, size_t end, const char *s)
{
    size_t k = strlen(s);
    return end - start == k && memcmp(b + start, s, k) == 0;
}

/* The digits at b[j]: a plain unsigned integer ended by space or a
 * delimiter, and not the object number of an indirect reference
 * ("5 0 R"). 0 and the value, or -1 when anything else stands there;
 * *next: where what was read ends. */
static int plain_count(const unsigned char *b, size_t n, size_t j, uint64_t *v, size_t *next)
{
    size_t d = j;
    *v = 0;
    for (; j < n && b[j] >= '0' && b[j] <= '9'; j++)
        *v = *v < CHAT_PART_MAX_TOKENS ? *v * 10 + (uint64_t)(b[j] - '0') : *v;
    *next = j;
    if (j == d || (j < n && !pdf_space(b[j]) && !pdf_delimiter(b[j])))
        return -1;
    /* An indirect reference: the count is in another object. */
    size_t k = skip_space(b, n, j), g = k;
    while (k < n && b[k] >= '0' && b[k] <= '9')
        k++;
    int second = k > g;
    if (second)
        k = skip_space(b, n, k);
    *next = k;
    return second && k < n && b[k] == 'R' ? -1 : 0;
}

/* The names of b[from..to): each /Count raises *most, each /Type /Page
 * counts in *page_objects. strict: outside a stream, where a name escaped
 * with #xx, or a /Count that is not a plain integer, cannot be trusted
 * (-1); inside a stream's data they are bytes, so only what they raise
 * counts. What follows /Type and /Count (white space, comments, their
 * value) is read once, as their value, and never again as names: a
 * comment there is no name, and reading it again after each of many
 * /Count on one line would take time quadratic in the line. */
static int scan_names(const unsigned char *b, size_t from, size_t to, int strict, uint64_t *most,
                      uint64_t *page_objects)
{
    for (size_t i = from; i < to; i++) {
        if (b[i] != '/')
            continue;
        size_t end = name_end(b, to, i);
        if (strict && memchr(b + i, '#', end - i))
            return -1;
        if (name_is(b, i, end, "/Type")) {
            /* The value is the next name; scanned as one from there. */
            size_t j = skip_space(b, to, end);
            if (j < to && b[j] == '/' && name_is(b, j, name_end(b, to, j), "/Page"))
                (*page_objects)++;
            i = j - 1;
            continue;
        }
        if (name_is(b, i, end, "/Count")) {
            size_t j = skip_space(b, to, end), next = j;
            uint64_t v;
            if (j < to && b[j] == '-') {
                i = j;
                continue;
            }
            if (plain_count(b, to, j, &v, &next) == 0)
                *most = v > *most ? v : *most;
            else if (strict)
                return -1;
            i = next - 1;
            continue;
        }
        i = end - 1;
    }
    return 0;
}

/* Where the keyword "stream" (ended by a line end) next stands in
 * b[from..n), or n. */
static size_t next_stream(const unsigned char *b, size_t n, size_t from)
{
    for (size_t i = from; i + 7 <= n; i++)
        if (b[i] == 's' && memcmp(b + i, "stream", 6) == 0 && (b[i + 6] == '\r' || b[i + 6] == '\n') &&
            (i < 3 || memcmp(b + i - 3, "end", 3) != 0))
            return i;
    return n;
}

int chat_pdf_pages(const unsigned char *b, size_t n, uint64_t *pages)
{
    /* The root of the page tree counts every page, and holds the largest
     * /Count of the file; an outline's /Count only raises the maximum, and
     * each page object (/Type /Page) is counted too, so that a tree whose
     * root lies is still priced by its pages. The count is trusted only
     * where every name outside the streams' data was read as written: a
     * name with a #xx escape may spell Count, Page, ObjStm or XRef, and an
     * object stream (ObjStm, found through an XRef stream) is compressed,
     * so the page tree may be inside it. A /Count that is not a plain
     * integer (signed with '+', fractional, an indirect reference) cannot
     * be read here either. In each such case the answer is -1, and the
     * caller prices the fixed bound. A negative /Count is a closed
     * outline's, never a page tree's. What a stream's data holds only
     * raises a count read outside the streams: with none, the pages are
     * not known. */
    if (n < 5 || memcmp(b, "%PDF-", 5) != 0 || holds(b, n, "ObjStm") || holds(b, n, "XRef"))
        return -1;
    uint64_t most = 0, page_objects = 0, stream_most = 0, stream_pages = 0;
    for (size_t i = 0; i < n;) {
        size_t s = next_stream(b, n, i);
        if (scan_names(b, i, s, 1, &most, &page_objects) != 0)
            return -1;
        if (s == n)
            break;
        size_t data = s + 6, e = data;
        while (e + 9 <= n && memcmp(b + e, "endstream", 9) != 0)
            e++;
        if (e + 9 > n)
            e = n;
        scan_names(b, data, e, 0, &stream_most, &stream_pages);
        i = e + 9 < n ? e + 9 : n;
    }
    if (most == 0 && page_objects == 0)
        return -1;
    most = page_objects > most ? page_objects : most;
    most = stream_most > most ? stream_most : most;
    *pages = stream_pages > most ? stream_pages : most;
    return 0;
}

int64_t chat_file_tokens(chat_media_provider p, const unsigned char *b, size_t n)
{
    uint64_t pages;
    if (!b || chat_pdf_pages(b, n, &pages) != 0)
        return CHAT_PART_MAX_TOKENS;
    /* A page is its text and an image of it, priced as the provider's
     * largest image. */
    uint64_t page = p == CHAT_MEDIA_ANTHROPIC ? CHAT_ANTHROPIC_IMAGE_MAX : CHAT_OPENAI_IMAGE_MAX;
    page += CHAT_PDF_PAGE_TEXT_TOKENS;
    if (pages > CHAT_PART_MAX_TOKENS / page)
        return CHAT_PART_MAX_TOKENS;
    return (int64_t)(pages * page);
}
