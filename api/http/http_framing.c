/* Refusal of ambiguously framed requests, and the strict percent-decoding
 * of targets. */
#include "http_internal.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* ---- Framing ---- */

/* A request is refused, never guessed at, when a proxy in front of compactd
 * could read its framing differently: libmicrohttpd takes the first of two
 * Content-Lengths, prefers Transfer-Encoding over Content-Length, keeps a
 * space before a colon in the header's name (so "Content-Length : 5" frames
 * no body), appends an obs-fold line (one starting with a blank) to the
 * header's name rather than its value (so "Content-Length: 5\r\n 9" is a
 * header "Content-Length9" to it and "Content-Length: 5 9" to a proxy), and
 * keeps a bare CR inside a value (where a proxy may end the line), and cuts
 * the target at a raw NUL. Each of these let a body carry a second request.
 * The answer closes the connection, so that what follows the headers is
 * never read as a request. Two Host headers are refused for the same
 * reason (the Host guard and a proxy may each read another one), and an
 * HTTP/1.1 request without one, as RFC 9112 (3.2) has a server do; an
 * HTTP/1.0 request may lack it. */

typedef struct {
    int content_lengths, hosts, transfer_encodings, bad_coding, bad_name, bad_token, bad_value, folded;
} framing;

/* RFC 9110's tchar: what a header name may hold. */
static int is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A value may hold visible bytes, SP, HTAB and obs-text; no other control. */
static int value_is_clean(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return 0;
    return 1;
}

/* libmicrohttpd 0.9.75 splits a line in place: a header's name, the NUL
 * that replaced its colon, optional blanks, the value (and so the method,
 * the NUL over the space, the target). A folded header's name is a copy
 * made elsewhere, so its value does not follow it. */
static int parsed_in_place(const char *key, const char *value)
{
    uintptr_t p = (uintptr_t)(key + strlen(key)) + 1, v = (uintptr_t)value;
    if (v < p)
        return 0;
    for (; p < v; p++)
        if (*(const char *)p != ' ' && *(const char *)p != '\t')
            return 0;
    return 1;
}

static MHD_Result_t note_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    framing *f = cls;
    (void)kind;
    if (key[0] == '\0' || strpbrk(key, " \t"))
        f->bad_name = 1;
    for (const char *p = key; *p; p++)
        if (!is_tchar((unsigned char)*p))
            f->bad_token = 1;
    if (value && !value_is_clean(value))
        f->bad_value = 1;
    if (value && !parsed_in_place(key, value))
        f->folded = 1;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->content_lengths++;
    if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
        f->hosts++;
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->transfer_encodings++;
        if (strcasecmp(value, "chunked") != 0)
            f->bad_coding = 1;
    }
    return MHD_YES;
}

/* Returns NULL when the request is framed unambiguously, else why not. */
const char *http_framing_fault(struct MHD_Connection *conn, const request_state *st,
                               const char *method, const char *version)
{
    if (st->bad_target)
        return "the request target holds a control character";
    /* The method ends where libmicrohttpd wrote a NUL over the space before
     * the target: a method cut short by the client's NUL does not. */
    const char *m = method;
    while (*m && is_tchar((unsigned char)*m))
        m++;
    if (m == method || *m || !parsed_in_place(method, st->target))
        return "the request method is not a token";
    /* libmicrohttpd 0.9.75 ends the raw target with a NUL written just
     * before the version, in the same buffer: a NUL found earlier was the
     * client's, and the target was cut short there. */
    if (version && (uintptr_t)st->target_end + 1 != (uintptr_t)version)
        return "the request target holds a NUL byte";
    framing f = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, note_header, &f);
    if (f.folded)
        return "a header line starts with a blank (obs-fold is not accepted)";
    if (f.bad_name)
        return "a header name holds whitespace (none is allowed before the colon)";
    if (f.bad_token)
        return "a header name holds a byte other than a token character";
    if (f.bad_value)
        return "a header value holds a control byte other than tab (a bare CR, for one)";
    if (f.content_lengths > 1)
        return "more than one Content-Length header";
    if (f.hosts > 1)
        return "more than one Host header";
    if (f.hosts == 0 && version && strcmp(version, MHD_HTTP_VERSION_1_0) != 0)
        return "an HTTP/1.1 request without a Host header";
    if (f.transfer_encodings && f.content_lengths)
        return "Content-Length and Transfer-Encoding together";
    if (f.transfer_encodings > 1 || f.bad_coding)
        return "Transfer-Encoding other than a single \"chunked\"";
    return NULL;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Strict percent-decoding for paths and query values: "%XX" only; '+' is
 * itself, since keys may hold it. "%00" stays as it is: a NUL would cut the
 * string short, so that DELETE /v1/sessions/s%00/x would act on session s.
 * Kept encoded it fails the session syntax, and no key can hold a NUL. */
size_t http_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    char *o = s;
    (void)cls;
    (void)conn;
    for (const char *p = s; *p; p++) {
        int hi, lo;
        if (p[0] == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0 && (hi | lo) != 0) {
            *o++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return (size_t)(o - s);
}

size_t api_unescaped_length(const char *raw, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++, len++)
        if (raw[i] == '%' && i + 2 < n && hexval(raw[i + 1]) >= 0 && hexval(raw[i + 2]) >= 0 &&
            (hexval(raw[i + 1]) | hexval(raw[i + 2])))
            i += 2;
    return len;
}
