/* libFuzzer target over compactd's HTTP front: each input is sent as the
 * raw bytes of one connection to a real server (libmicrohttpd, the framing
 * checks, body collection under the budget, the handler pool and the real
 * routes, with no store: every store call is StoreUnavailable). Besides the
 * sanitizers' findings it aborts when
 *  - the server does not come back to idle once the connection ends (a
 *    request left in flight, bytes left counted against the budget), or
 *  - a request was handled although the first request's framing was
 *    ambiguous, as read from the raw bytes alone: two header lines named
 *    Content-Length, a header line that starts with a blank (obs-fold), or
 *    a control byte in the request target. Such a
 *    request must be refused and its connection closed unread. */
#include "routes.h"
#include "config.h"
#include "dispatch.h"
#include "http_server.h"
#include "metrics.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static http_server *server;
static config cfg;
static app the_app;
static atomic_int dispatched;
static void (*app_dispatch)(api_request *req, api_response *res, void *cls);

static void count_dispatch(api_request *req, api_response *res, void *cls)
{
    atomic_fetch_add(&dispatched, 1);
    app_dispatch(req, res, cls);
}

static void fail(const char *what, const uint8_t *data, size_t size)
{
    fprintf(stderr, "fuzz_http: %s\n", what);
    fwrite(data, 1, size > 2000 ? 2000 : size, stderr);
    fputc('\n', stderr);
    abort();
}

/* ---- Oracle: the first request's framing from its raw bytes ---- */

/* Where the first request's headers end for any reading of line ends (an
 * empty line, with LF or CRLF or CR), or size. libmicrohttpd reads a header
 * line whose first byte is NUL, or a colon (a header without a name), as
 * the empty line that ends the headers (the README's list of what it
 * decides on its own), so such a line ends them here too. */
static size_t head_end(const uint8_t *d, size_t size)
{
    for (size_t i = 0; i + 1 < size; i++)
        if ((d[i] == '\n' && (d[i + 1] == '\n' || d[i + 1] == '\0' || d[i + 1] == ':' ||
                              (d[i + 1] == '\r' && i + 2 < size && d[i + 2] == '\n'))) ||
            (d[i] == '\r' && d[i + 1] == '\r'))
            return i;
    return size;
}

static int starts_ci(const uint8_t *p, size_t n, const char *word)
{
    size_t w = strlen(word);
    if (n < w)
        return 0;
    for (size_t i = 0; i < w; i++)
        if (tolower(p[i]) != word[i])
            return 0;
    return 1;
}

/* Where the first request line starts: libmicrohttpd skips empty lines
 * before it (LF or CRLF; a lone CR starts the line), and a line whose first
 * byte is NUL reads as empty. */
static size_t request_start(const uint8_t *d, size_t size)
{
    size_t i = 0;
    while (i < size) {
        if (d[i] == '\n')
            i++;
        else if (d[i] == '\r' && i + 1 < size && d[i + 1] == '\n')
            i += 2;
        else if (d[i] == '\0')
            while (i < size && d[i++] != '\n')
                ;
        else
            break;
    }
    return i < size ? i : size;
}

/* 1 when the first request's bytes make its framing ambiguous. */
static int ambiguous(const uint8_t *data, size_t total)
{
    size_t start = request_start(data, total);
    const uint8_t *d = data + start;
    size_t size = total - start;
    size_t end = head_end(d, size), lengths = 0;
    for (size_t i = 0; i < end; i++)
        if (d[i] == '\n' && starts_ci(d + i + 1, end - i - 1, "content-length:"))
            lengths++;
    if (lengths >= 2)
        return 1;
    /* An obs-fold: a header line that starts with a blank. */
    for (size_t i = 0; i + 1 < end; i++)
        if (d[i] == '\n' && (d[i + 1] == ' ' || d[i + 1] == '\t'))
            return 1;
    /* The request line: up to the first CR or LF; its target: between its
     * first and its last space. */
    size_t line = 0;
    while (line < size && d[line] != '\r' && d[line] != '\n')
        line++;
    const uint8_t *first = memchr(d, ' ', line);
    const uint8_t *last = first;
    for (const uint8_t *p = first; p && p < d + line; p++)
        if (*p == ' ')
            last = p;
    for (const uint8_t *p = first; p && p < last; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

/* ---- The exchange ---- */

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A connection to the server. Each exchange leaves a socket in TIME_WAIT
 * for a minute, so thousands a second can run out of local ports for a
 * moment (EADDRNOTAVAIL, seen once in a 60 s run): that is the machine, not
 * the server, so it is retried for up to 5 s. */
static int connect_to_server(const uint8_t *data)
{
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)http_server_port(server));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int64_t until = now_ms() + 5000;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
        int err = errno;
        if (fd >= 0)
            close(fd);
        if ((err != EADDRNOTAVAIL && err != EAGAIN && err != EINTR) || now_ms() > until) {
            fprintf(stderr, "fuzz_http: connect: %s\n", strerror(err));
            fail("cannot connect to the server", data, 0);
        }
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
}

/* Sends the input, says the client is done, reads until the server closes
 * (the connection timeout, 1 s, bounds the wait). */
static void exchange(const uint8_t *data, size_t size)
{
    int fd = connect_to_server(data);
    size_t sent = 0;
    while (sent < size) {
        ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* closed early: refused */
        sent += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char buf[65536];
    int64_t until = now_ms() + 5000;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0 && recv(fd, buf, sizeof(buf), 0) <= 0)
            break;
        if (now_ms() > until)
            fail("the server left the connection open for 5 s", data, size);
    }
    close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[512];
    /* Small limits, so that inputs of a few kilobytes reach them; the
     * corpus's requests say "Host: t", which must reach the routes rather
     * than the Host check alone. */
    static const char *const args[] = {"fuzz_http",
                                       "--listen",
                                       "127.0.0.1:0",
                                       "--threads",
                                       "2",
                                       "--max-body-bytes",
                                       "8192",
                                       "--max-inflight-bytes",
                                       "16384",
                                       "--connection-timeout",
                                       "1",
                                       "--log-level",
                                       "error",
                                       "--allowed-hosts",
                                       "t"};
    int nargs = (int)(sizeof(args) / sizeof(args[0]));
    if (config_load(&cfg, nargs, (char **)args, err, sizeof(err)) != 0 ||
        metrics_init(&(metrics_routes){route_count(), route_pattern, route_metrics}) != 0) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        exit(1);
    }
    json_object_seed(1);
    the_app.cfg = &cfg;
    the_app.hosts = (host_rules){cfg.allowed_hosts, cfg.allowed_origins, cfg.mcp_allowed_origins};
    http_handlers h = app_http_handlers(&the_app);
    app_dispatch = h.dispatch;
    h.dispatch = count_dispatch;
    http_settings hs = config_http_settings(&cfg);
    server = http_server_start(&hs, &h, err, sizeof(err));
    if (!server) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    atomic_store(&dispatched, 0);
    exchange(data, size);
    /* The connection's end reaches the server a moment after the client's. */
    int64_t until = now_ms() + 5000;
    while (!http_server_idle(server)) {
        if (now_ms() > until)
            fail("the server did not come back to idle (a request in flight or bytes held)", data,
                 size);
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    if (ambiguous(data, size) && atomic_load(&dispatched) > 0)
        fail("a request was handled on a connection whose first request was ambiguous", data, size);
    return 0;
}
