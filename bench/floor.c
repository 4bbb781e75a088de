/* The benchmark floors: a bare libmicrohttpd server with compactd's threading
 * that reads each POST body whole and answers a fixed small JSON (the HTTP
 * floor), and with --json also parses the body with json_loadb (the JSON
 * floor). Built as floor_read (FLOOR_READ), --json parses it as compactd
 * does instead: its own reader into a region (api/codec/json/json_read.h), so
 * that what compactd costs beyond its parse shows on its own. Built as
 * floor_parse (FLOOR_HOOK), --json hands the body to floor_hook.h's
 * floor_hook_body() instead: the simdjson floors. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <jansson.h>

#include "mhd_compat.h"
#ifdef FLOOR_READ
#include "json_region.h"
#endif
#ifdef FLOOR_HOOK
#include "floor_hook.h"
#define BODY_PADDING FLOOR_HOOK_PADDING
#else
#define BODY_PADDING 0
#endif

static const char OK_BODY[] = "{\"ok\":true}";
static const char BAD_BODY[] = "{\"error\":{\"type\":\"InvalidRequest\",\"message\":\"bad JSON\"}}";
static const char BIG_BODY[] =
    "{\"error\":{\"type\":\"PayloadTooLarge\",\"message\":\"body too large\"}}";
#ifdef FLOOR_HOOK
static const char DOWN_BODY[] =
    "{\"error\":{\"type\":\"StoreUnavailable\",\"message\":\"Redis failed\"}}";
/* The body of an empty POST, with the padding the hook may read. */
static const char EMPTY_BODY[BODY_PADDING + 1];
#endif

typedef struct {
    int parse_json;
    size_t max_body;
} floor_config;

/* One request's body, collected chunk by chunk in the per-connection pointer
 * and freed in the request-completed callback, as compactd does. */
typedef struct {
    char *data;
    size_t len;
    size_t cap;
    int too_large;
} floor_body;

/* ---- Body collection ---- */

static int body_append(floor_body *b, const char *chunk, size_t n, size_t max)
{
    if (b->too_large || n > max - b->len) {
        b->too_large = 1;
        return 0;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap = cap > max / 2 ? max : cap * 2;
        char *p = realloc(b->data, cap + BODY_PADDING);
        if (!p)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, chunk, n);
    b->len += n;
    return 0;
}

static MHD_Result_t answer(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_Result_t ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---- Handlers ---- */

static MHD_Result_t on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    const floor_config *cfg = cls;
    (void)url; /* the hook's, when there is one */
    (void)version;

    if (!*con_cls) {
        floor_body *b = calloc(1, sizeof *b);
        if (!b)
            return MHD_NO;
        *con_cls = b;
        /* Size the buffer once when Content-Length is known, as compactd does. */
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
        if (want > 0 && want <= cfg->max_body) {
            b->data = malloc((size_t)want + BODY_PADDING);
            b->cap = b->data ? (size_t)want : 0;
        }
        return MHD_YES;
    }
    floor_body *b = *con_cls;
    if (*upload_data_size) {
        if (body_append(b, upload_data, *upload_data_size, cfg->max_body) < 0)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (b->too_large)
        return answer(conn, 413, BIG_BODY);
    if (strcmp(method, "POST") != 0)
        return answer(conn, MHD_HTTP_OK, OK_BODY);
    if (cfg->parse_json) {
#ifdef FLOOR_HOOK
        switch (floor_hook_body(url, b->data ? b->data : EMPTY_BODY, b->len)) {
        case FLOOR_HOOK_OK:
            break;
        case FLOOR_HOOK_BAD_BODY:
            return answer(conn, MHD_HTTP_BAD_REQUEST, BAD_BODY);
        default:
            return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE, DOWN_BODY);
        }
#elif defined(FLOOR_READ)
        json_error_t err;
        json_t *root = json_region_loadb(b->data ? b->data : "", b->len,
                                         JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        if (!root)
            return answer(conn, MHD_HTTP_BAD_REQUEST, BAD_BODY);
        json_region_release(root);
#else
        json_error_t err;
        json_t *root = json_loadb(b->data ? b->data : "", b->len, JSON_REJECT_DUPLICATES, &err);
        if (!root)
            return answer(conn, MHD_HTTP_BAD_REQUEST, BAD_BODY);
        json_decref(root);
#endif
    }
    return answer(conn, MHD_HTTP_OK, OK_BODY);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    floor_body *b = *con_cls;
    if (b) {
        free(b->data);
        free(b);
        *con_cls = NULL;
    }
}

/* ---- Startup ---- */

static void usage(void)
{
    fprintf(stderr, "usage: floor [--json] [--listen 127.0.0.1:PORT] [--threads N] "
                    "[--max-body-bytes N]\n");
#ifdef FLOOR_HOOK
    fprintf(stderr, "       floor_parse also: [--spill-redis 127.0.0.1:PORT]\n");
#endif
    exit(2);
}

static int parse_listen(const char *s, struct sockaddr_in *sa)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= INET_ADDRSTRLEN)
        return -1;
    char host[INET_ADDRSTRLEN];
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static unsigned long parse_count(const char *s, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || end == s || v == 0 || v > max)
        usage();
    return v;
}

int main(int argc, char **argv)
{
    floor_config cfg = {0, (size_t)32 << 20};
    const char *listen = "127.0.0.1:0";
    unsigned threads = 2;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            cfg.parse_json = 1;
        else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)parse_count(argv[++i], 1024);
        else if (strcmp(argv[i], "--max-body-bytes") == 0 && i + 1 < argc)
            cfg.max_body = parse_count(argv[++i], SIZE_MAX / 2);
#ifdef FLOOR_HOOK
        else if (floor_hook_option(argv[i], i + 1 < argc ? argv[i + 1] : NULL) == 1)
            i++;
#endif
        else
            usage();
    }
    struct sockaddr_in sa;
    if (parse_listen(listen, &sa) < 0) {
        fprintf(stderr, "floor: bad --listen address: %s\n", listen);
        return 2;
    }

    /* Workers inherit this mask, so only main receives the stop signal. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    json_object_seed(0);

    struct MHD_Daemon *d =
        MHD_start_daemon(COMPACTD_MHD_FLAGS, 0, NULL, NULL, on_request, &cfg, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE, threads,
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "floor: cannot listen on %s\n", listen);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
#ifdef FLOOR_HOOK
    const char *kind = cfg.parse_json ? floor_hook_name() : "http";
#else
    const char *kind = cfg.parse_json ? "json" : "http";
#endif
    fprintf(stderr, "floor: %s floor listening on %s:%u with %u threads\n", kind, host,
            info ? (unsigned)info->port : 0u, threads);

    int sig;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    return 0;
}
