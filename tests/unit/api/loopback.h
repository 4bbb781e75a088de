/* A small HTTP/1.1 client for the in-process tests of the transport and the
 * fronts: one request per connection to 127.0.0.1, read to the server's
 * close, the answer split into status, headers and body (chunked bodies
 * put back together). A server that never answers fails the exchange after
 * LOOPBACK_PATIENCE_S instead of hanging the test. */
#ifndef COMPACTD_TEST_LOOPBACK_H
#define COMPACTD_TEST_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define LOOPBACK_PATIENCE_S 60

typedef struct {
    int status; /* 0: no answer */
    char *raw;  /* the whole answer as read; owned */
    size_t raw_len;
    const char *headers; /* into raw: the header lines, up to the empty line */
    char *body;          /* owned, NUL-terminated */
    size_t body_len;
} loopback_reply;

static void loopback_reply_free(loopback_reply *r)
{
    free(r->raw);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

/* The value of header name in r (copied into out, n bytes), or NULL. */
static const char *loopback_header(const loopback_reply *r, const char *name, char *out, size_t n)
{
    size_t len = strlen(name);
    for (const char *p = r->headers; p && *p && !(p[0] == '\r' && p[1] == '\n');) {
        const char *end = strstr(p, "\r\n");
        if (!end)
            break;
        if ((size_t)(end - p) > len && strncasecmp(p, name, len) == 0 && p[len] == ':') {
            const char *v = p + len + 1;
            while (*v == ' ')
                v++;
            snprintf(out, n, "%.*s", (int)(end - v), v);
            return out;
        }
        p = end + 2;
    }
    return NULL;
}

/* Puts a chunked body (len bytes at p) back together into r->body. */
static int loopback_dechunk(loopback_reply *r, const char *p, size_t len)
{
    const char *end = p + len;
    r->body = malloc(len + 1);
    r->body_len = 0;
    if (!r->body)
        return -1;
    while (p < end) {
        char *after;
        unsigned long n = strtoul(p, &after, 16);
        const char *data = strstr(after, "\r\n");
        if (!data || data + 2 + n > end)
            return -1; /* cut short */
        data += 2;
        if (n == 0)
            break;
        memcpy(r->body + r->body_len, data, n);
        r->body_len += n;
        p = data + n + 2;
    }
    r->body[r->body_len] = '\0';
    return 0;
}

/* Sends raw (len bytes) on a new connection to port and reads the answer
 * to the server's close (send "Connection: close"). 0, or -1 when nothing
 * could be sent or no whole answer came back. */
static int loopback_exchange(int port, const char *raw, size_t len, loopback_reply *r)
{
    memset(r, 0, sizeof(*r));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {LOOPBACK_PATIENCE_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    for (size_t sent = 0; sent < len;) {
        ssize_t n = send(fd, raw + sent, len - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the server may answer (and close) before the whole body */
        sent += (size_t)n;
    }
    size_t cap = 4096;
    r->raw = malloc(cap + 1);
    for (ssize_t n; r->raw && (n = recv(fd, r->raw + r->raw_len, cap - r->raw_len, 0)) > 0;) {
        r->raw_len += (size_t)n;
        if (r->raw_len == cap) {
            char *p = realloc(r->raw, cap * 2 + 1);
            if (!p)
                break;
            r->raw = p;
            cap *= 2;
        }
    }
    close(fd);
    if (!r->raw)
        return -1;
    r->raw[r->raw_len] = '\0';
    char *head_end = strstr(r->raw, "\r\n\r\n");
    if (!head_end || sscanf(r->raw, "HTTP/1.%*d %d", &r->status) != 1)
        return -1;
    r->headers = strstr(r->raw, "\r\n") + 2;
    const char *body = head_end + 4;
    size_t body_len = r->raw_len - (size_t)(body - r->raw);
    char v[64];
    if (loopback_header(r, "Transfer-Encoding", v, sizeof(v)) && strcasecmp(v, "chunked") == 0)
        return loopback_dechunk(r, body, body_len);
    if (loopback_header(r, "Content-Length", v, sizeof(v))) {
        size_t declared = strtoul(v, NULL, 10);
        if (declared > body_len)
            return -1; /* cut short */
        body_len = declared;
    }
    r->body = malloc(body_len + 1);
    if (!r->body)
        return -1;
    memcpy(r->body, body, body_len);
    r->body[body_len] = '\0';
    r->body_len = body_len;
    return 0;
}

/* One request: method and target, extra header lines (each ending in
 * "\r\n", or NULL; "Host: localhost" is sent unless they hold a Host) and
 * a body (NULL: none; sent with Content-Length). */
static int loopback_request(int port, const char *method, const char *target, const char *headers,
                            const char *body, loopback_reply *r)
{
    size_t body_len = body ? strlen(body) : 0;
    size_t cap = strlen(method) + strlen(target) + (headers ? strlen(headers) : 0) + body_len + 256;
    char *raw = malloc(cap);
    if (!raw)
        return -1;
    /* Host: localhost unless the headers bring their own. */
    int own_host = headers && (strncasecmp(headers, "Host:", 5) == 0 || strstr(headers, "\nHost:"));
    int n = snprintf(raw, cap, "%s %s HTTP/1.1\r\n%sConnection: close\r\n%s", method, target,
                     own_host ? "" : "Host: localhost\r\n", headers ? headers : "");
    if (body)
        n += snprintf(raw + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(raw + n, cap - (size_t)n, "\r\n");
    if (body) {
        memcpy(raw + n, body, body_len);
        n += (int)body_len;
    }
    int rc = loopback_exchange(port, raw, (size_t)n, r);
    free(raw);
    return rc;
}

#endif
