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

int chat_pdf_pages(const unsigned char *b, size_t n, uint64_t *pages)
{
    /* The root of the page tree counts every page, and holds the largest
     * /Count of the file; an outline's /Count only raises the maximum. An
     * object stream (ObjStm, found through an XRef stream) is compressed:
     * the page tree may be inside it, so nothing here can be trusted. */
    if (n < 5 || memcmp(b, "%PDF-", 5) != 0 || holds(b, n, "ObjStm") || holds(b, n, "XRef"))
        return -1;
    uint64_t most = 0;
    for (size_t i = 0; i + 6 <= n; i++) {
        if (b[i] != '/' || memcmp(b + i, "/Count", 6) != 0)
            continue;
        size_t j = i + 6;
        while (j < n && (b[j] == ' ' || b[j] == '\r' || b[j] == '\n' || b[j] == '\t'))
            j++;
        uint64_t v = 0;
        for (; j < n && b[j] >= '0' && b[j] <= '9'; j++)
            v = v < CHAT_PART_MAX_TOKENS ? v * 10 + (uint64_t)(b[j] - '0') : v;
        most = v > most ? v : most;
    }
    if (most == 0)
        return -1;
    *pages = most;
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
