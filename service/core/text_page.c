/* Page ends for re-acquired texts. See text_page.h. */
#include "text_page.h"

int text_page_boundary(const char *text, size_t len, size_t offset)
{
    if (offset == 0 || offset >= len)
        return offset <= len;
    return ((unsigned char)text[offset] & 0xC0) != 0x80;
}

/* The last boundary at or before at (<= len). */
static size_t boundary_before(const char *text, size_t len, size_t at)
{
    while (at > 0 && !text_page_boundary(text, len, at))
        at--;
    return at;
}

/* The first boundary after at (< len). */
static size_t boundary_after(const char *text, size_t len, size_t at)
{
    do
        at++;
    while (at < len && !text_page_boundary(text, len, at));
    return at;
}

/* 1 when text[offset..end) holds at most max tokens, 0 when not, -1 when
 * out of memory. */
static int fits(const char *text, size_t offset, size_t end, int64_t max, text_page_count_fn count,
                void *ctx)
{
    int64_t n = count(ctx, text + offset, end - offset);
    return n < 0 ? -1 : n <= max;
}

int text_page_end(const char *text, size_t len, size_t offset, int64_t max_tokens,
                  text_page_count_fn count, void *ctx, size_t *end)
{
    if (offset >= len) {
        *end = len;
        return 0;
    }
    /* good: a page end known to fit (the first character is always
     * given); bad: one known not to, or len + 1 while none is. */
    size_t good = boundary_after(text, len, offset), bad = len + 1;
    /* A token is at least one byte, so about max_tokens bytes usually fit:
     * the first try, then twice the page each time, until one does not. */
    size_t span =
        max_tokens > 0 && (uint64_t)max_tokens < len - offset ? (size_t)max_tokens : len - offset;
    size_t probe = boundary_before(text, len, offset + span);
    while (good < len) {
        if (probe <= good)
            probe = boundary_after(text, len, good);
        int f = fits(text, offset, probe, max_tokens, count, ctx);
        if (f < 0)
            return -1;
        if (!f) {
            bad = probe;
            break;
        }
        good = probe;
        size_t grown = good - offset <= len - good ? good + (good - offset) : len;
        probe = boundary_before(text, len, grown);
    }
    /* Halve the run between the last end that fit and the first that did
     * not. */
    while (bad != len + 1) {
        size_t mid = boundary_before(text, len, good + (bad - good) / 2);
        if (mid <= good) {
            mid = boundary_after(text, len, good);
            if (mid >= bad)
                break;
        }
        int f = fits(text, offset, mid, max_tokens, count, ctx);
        if (f < 0)
            return -1;
        if (f)
            good = mid;
        else
            bad = mid;
    }
    *end = good;
    return 0;
}
