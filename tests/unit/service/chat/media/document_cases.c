/* The document and file bounds: a PDF's page count read from its bytes, the
 * bound it gives with each provider's page (largest image + page text), and
 * the fixed bound for everything compactd cannot count pages of. */
#include "chat_media.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char pdf3[] = "%PDF-1.4\n"
                           "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
                           "2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n"
                           "3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
                           "4 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
                           "5 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
                           "xref\n0 6\ntrailer << /Root 1 0 R >>\nstartxref\n0\n%%EOF\n";

static const unsigned char *u(const char *s)
{
    return (const unsigned char *)s;
}

static void page_counts(void)
{
    uint64_t pages = 0;
    check(chat_pdf_pages(u(pdf3), strlen(pdf3), &pages) == 0 && pages == 3, "pdf3: %llu",
          (unsigned long long)pages);
    /* An outline's /Count above the page tree's only raises the bound. */
    const char outline[] = "%PDF-1.7\n<< /Type /Pages /Count\n2 >> << /Type /Outlines /Count 12 >>";
    check(chat_pdf_pages(u(outline), strlen(outline), &pages) == 0 && pages == 12, "outline: %llu",
          (unsigned long long)pages);
    /* A page tree that may sit in a compressed object stream: not counted. */
    const char objstm[] = "%PDF-1.5\n<< /Type /ObjStm /N 3 /First 20 >> << /Count 1 >>";
    check(chat_pdf_pages(u(objstm), strlen(objstm), &pages) == -1, "object stream");
    const char xref[] = "%PDF-1.5\n<< /Type /XRef /Size 9 >> << /Count 1 >>";
    check(chat_pdf_pages(u(xref), strlen(xref), &pages) == -1, "xref stream");
    check(chat_pdf_pages(u("%PDF-1.4\n<< /Count 0 >>"), 23, &pages) == -1, "no pages");
    check(chat_pdf_pages(u("%PDF-1.4\n"), 9, &pages) == -1, "no page tree");
    check(chat_pdf_pages(u("hello /Count 3"), 14, &pages) == -1, "not a pdf");
    check(chat_pdf_pages(u("%PDF"), 4, &pages) == -1, "cut short");
}

/* Files whose page count the scan cannot be certain of: each is -1 (the
 * fixed bound), never the smaller count it would otherwise read. */
static void uncertain_counts(void)
{
    static const char *const crafted[] = {
        /* the count in another object */
        "%PDF-1.4\n<< /Type /Pages /Count 9 0 R >>\n9 0 obj 200 endobj",
        /* a sign the old scan read as 0 */
        "%PDF-1.4\n<< /Type /Pages /Count +200 >> << /Count 2 >>",
        /* name escapes: /Count, /Type and /Pages spelled with #xx */
        "%PDF-1.4\n<< /Type /Pages /C#6Funt 200 >> << /Count 2 >>",
        "%PDF-1.4\n<< /Ty#70e /Pa#67es /Count 200 >>",
        /* an escaped object stream or xref stream name */
        "%PDF-1.5\n<< /Type /Obj#53tm /N 3 >> << /Count 2 >>",
        "%PDF-1.5\n<< /Type /X#52ef >> << /Count 2 >>",
        /* a fraction */
        "%PDF-1.4\n<< /Type /Pages /Count 200.0 >> << /Count 2 >>",
    };
    for (size_t i = 0; i < sizeof(crafted) / sizeof(crafted[0]); i++) {
        uint64_t pages = 0;
        int rc = chat_pdf_pages(u(crafted[i]), strlen(crafted[i]), &pages);
        check(rc == -1, "crafted %zu: %d, %llu pages", i, rc, (unsigned long long)pages);
    }
    /* White space the old scan did not know (form feed, NUL) and a comment
     * between the name and its value are read through. */
    static const char ff[] = "%PDF-1.4\n<< /Type /Pages /Count\f200 >> << /Count 2 >>";
    static const char comment[] = "%PDF-1.4\n<< /Type /Pages /Count % pages\n200 >>";
    uint64_t pages = 0;
    check(chat_pdf_pages(u(ff), strlen(ff), &pages) == 0 && pages == 200, "form feed: %llu",
          (unsigned long long)pages);
    check(chat_pdf_pages(u(comment), strlen(comment), &pages) == 0 && pages == 200,
          "comment: %llu", (unsigned long long)pages);
    /* A root whose /Count says 1 over 3 page objects: the pages count. */
    static const char lying[] = "%PDF-1.4\n<< /Type /Pages /Count 1 >>\n"
                                "<< /Type /Page >> << /Type /Page >> << /Type /Page >>";
    check(chat_pdf_pages(u(lying), strlen(lying), &pages) == 0 && pages == 3, "lying root: %llu",
          (unsigned long long)pages);
    /* A closed outline's negative count is not a page count, and a stream's
     * bytes may hold anything, a # among them. */
    static const char outline[] = "%PDF-1.4\n<< /Type /Outlines /Count -4 >> << /Count 2 >>\n"
                                  "<< /Length 8 >>\nstream\n/A#1 /B\nendstream\n";
    check(chat_pdf_pages(u(outline), strlen(outline), &pages) == 0 && pages == 2,
          "outline and stream: %llu", (unsigned long long)pages);
    /* A stream's bytes raise a count read outside the streams, but are no
     * count of their own: pages with no /Type, whose tree has no /Count,
     * are not counted by the /Type /Page a content stream shows. */
    static const char raised[] = "%PDF-1.4\n<< /Type /Pages /Count 2 >>\n"
                                 "<< /Length 9 >>\nstream\n/Count 40\nendstream\n";
    check(chat_pdf_pages(u(raised), strlen(raised), &pages) == 0 && pages == 40,
          "a count raised by a stream: %llu", (unsigned long long)pages);
    static const char untyped[] = "%PDF-1.4\n<< /Type /Pages /Kids [3 0 R 4 0 R] >>\n"
                                  "3 0 obj << /Contents 5 0 R >> endobj\n"
                                  "4 0 obj << /Contents 5 0 R >> endobj\n"
                                  "5 0 obj << /Length 12 >>\nstream\n/Type /Page\nendstream\n";
    check(chat_pdf_pages(u(untyped), strlen(untyped), &pages) == -1,
          "no count but a stream's: %llu", (unsigned long long)pages);
}

/* What follows /Type and /Count is their value, white space and comments
 * between: a comment there is no name, neither one that would end the
 * /Type before its /Page nor one that would raise the count. (Read again
 * as names after each of many /Count on one line, such comments took time
 * quadratic in the line: tests/fuzz/corpus_media/raw-pdf-count-comments,
 * which fuzz_media's bound on work refuses on that code.) */
static void comments_after_names(void)
{
    uint64_t pages = 0;
    static const char typed[] = "%PDF-1.4\n<< /Type /Pages /Count 1 >>\n"
                                "<< /Type % a /Font, says the comment\n/Page >> << /Type/Page >>";
    check(chat_pdf_pages(u(typed), strlen(typed), &pages) == 0 && pages == 2,
          "a comment with a name between /Type and /Page: %llu", (unsigned long long)pages);
    static const char counted[] = "%PDF-1.4\n<< /Type /Pages /Count 7 % /Count 300\n>>";
    check(chat_pdf_pages(u(counted), strlen(counted), &pages) == 0 && pages == 7,
          "a comment with a /Count after a /Count: %llu", (unsigned long long)pages);
    static const char referenced[] = "%PDF-1.4\n<< /Count 5 % object\n0 % generation\nR >>";
    check(chat_pdf_pages(u(referenced), strlen(referenced), &pages) == -1,
          "a reference with comments in it");
    /* Many /Count on one line of comments read as the first says. */
    size_t reps = 20000, k = strlen("/Count 1 %");
    char *line = malloc(9 + reps * k);
    check(line != NULL, "alloc");
    if (!line)
        return;
    memcpy(line, "%PDF-1.4\n", 9);
    for (size_t i = 0; i < reps; i++)
        memcpy(line + 9 + i * k, "/Count 1 %", k);
    check(chat_pdf_pages(u(line), 9 + reps * k, &pages) == 0 && pages == 1,
          "a line of /Count and comments: %llu", (unsigned long long)pages);
    free(line);
}

static void bounds(void)
{
    /* 3 pages x (the largest image + 3000 of text). */
    int64_t a = chat_file_tokens(CHAT_MEDIA_ANTHROPIC, u(pdf3), strlen(pdf3));
    int64_t o = chat_file_tokens(CHAT_MEDIA_OPENAI, u(pdf3), strlen(pdf3));
    check(a == 3 * (1600 + 3000), "anthropic pdf3: %lld", (long long)a);
    check(o == 3 * (1445 + 3000), "openai pdf3: %lld", (long long)o);
    check(chat_file_tokens(CHAT_MEDIA_OPENAI, NULL, 0) == CHAT_PART_MAX_TOKENS, "by id");
    check(chat_file_tokens(CHAT_MEDIA_ANTHROPIC, u("PK\3\4docx"), 8) == CHAT_PART_MAX_TOKENS,
          "not a pdf");
    /* More pages than the fixed bound allows are the fixed bound. */
    char big[64];
    snprintf(big, sizeof(big), "%%PDF-1.4\n<< /Count 99999999999999999999 >>");
    check(chat_file_tokens(CHAT_MEDIA_ANTHROPIC, u(big), strlen(big)) == CHAT_PART_MAX_TOKENS,
          "huge count");
    /* 228 x 4600 = 1,048,800, past the fixed bound; 227 pages are not. */
    snprintf(big, sizeof(big), "%%PDF-1.4\n<< /Count 228 >>");
    check(chat_file_tokens(CHAT_MEDIA_ANTHROPIC, u(big), strlen(big)) == CHAT_PART_MAX_TOKENS,
          "228 pages");
    snprintf(big, sizeof(big), "%%PDF-1.4\n<< /Count 227 >>");
    check(chat_file_tokens(CHAT_MEDIA_ANTHROPIC, u(big), strlen(big)) == 227 * 4600, "227 pages");
}

int main(void)
{
    page_counts();
    uncertain_counts();
    comments_after_names();
    bounds();
    return check_done("document_cases");
}
