/* The upstream client: a bounded pool of libcurl handles, each keeping its
 * connection for the next call, with TLS verification on, no redirects, no
 * proxy from the environment and a timeout for connecting and one for
 * silence. */
#include "upstream.h"

#include <curl/curl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- The pool ---- */

static struct {
    CURL **free; /* the idle handles, a stack */
    int n_free, size;
    pthread_mutex_t lock;
    pthread_cond_t back;
    proxy_settings ps;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .back = PTHREAD_COND_INITIALIZER};

/* A handle of the pool, waiting for one to come back when all are out. */
static CURL *take(void)
{
    pthread_mutex_lock(&pool.lock);
    while (pool.n_free == 0)
        pthread_cond_wait(&pool.back, &pool.lock);
    CURL *c = pool.free[--pool.n_free];
    pthread_mutex_unlock(&pool.lock);
    return c;
}

static void give_back(CURL *c)
{
    pthread_mutex_lock(&pool.lock);
    pool.free[pool.n_free++] = c;
    pthread_cond_signal(&pool.back);
    pthread_mutex_unlock(&pool.lock);
}

/* 0 when url is http(s)://host[:port][/path], with no user, query or
 * fragment: the only shape an upstream is given in. */
static int check_base(const char *name, const char *url, char *err, size_t errlen)
{
    const char *rest = strncmp(url, "https://", 8) == 0  ? url + 8
                       : strncmp(url, "http://", 7) == 0 ? url + 7
                                                         : NULL;
    if (!rest || !*rest || *rest == '/' || strpbrk(url, "@?# \t\r\n\\") ||
        url[strlen(url) - 1] == '/') {
        snprintf(err, errlen,
                 "%s: '%s' is not a base URL: http:// or https://, a host, an optional port and "
                 "path, no user, query, fragment or trailing '/'",
                 name, url);
        return -1;
    }
    return 0;
}

int upstream_init(const proxy_settings *ps, char *err, size_t errlen)
{
    if (check_base("COMPACTD_UPSTREAM_OPENAI", ps->openai, err, errlen) != 0 ||
        check_base("COMPACTD_UPSTREAM_ANTHROPIC", ps->anthropic, err, errlen) != 0)
        return -1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "libcurl could not be set up");
        return -1;
    }
    pool.ps = *ps;
    pool.free = calloc((size_t)ps->max_connections, sizeof(*pool.free));
    for (int i = 0; pool.free && i < ps->max_connections; i++) {
        CURL *c = curl_easy_init();
        if (!c)
            break;
        pool.free[pool.n_free++] = c;
    }
    pool.size = pool.n_free;
    if (!pool.free || pool.size != ps->max_connections) {
        upstream_cleanup();
        snprintf(err, errlen, "out of memory making %d upstream handles", ps->max_connections);
        return -1;
    }
    return 0;
}

void upstream_cleanup(void)
{
    for (int i = 0; i < pool.n_free; i++)
        curl_easy_cleanup(pool.free[i]);
    free(pool.free);
    pool.free = NULL;
    pool.n_free = pool.size = 0;
    curl_global_cleanup();
}

const char *upstream_base(const char *provider)
{
    return strcmp(provider, "anthropic") == 0 ? pool.ps.anthropic : pool.ps.openai;
}

/* ---- One call ---- */

/* The answer's headers worth relaying to the client: the provider's request
 * id (what its support asks for) and its rate-limit figures (what an SDK
 * backs off by). Every other header of the upstream's stays there. */
static int relayed_header(const char *name, size_t n)
{
    static const char *const exact[] = {"request-id", "x-request-id", "retry-after"};
    static const char *const prefix[] = {"x-ratelimit-", "anthropic-ratelimit-"};
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strlen(exact[i]) == n && strncasecmp(name, exact[i], n) == 0)
            return 1;
    for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
        if (n > strlen(prefix[i]) && strncasecmp(name, prefix[i], strlen(prefix[i])) == 0)
            return 1;
    return 0;
}

#define RELAYED_MAX 4096

typedef struct {
    const upstream_sink *sink;
    CURL *c;
    char content_type[256];
    char relayed[RELAYED_MAX];
    size_t relayed_len;
    int head_sent, stopped;
} call;

/* One header line ("Name: value\r\n", or the blank line that ends them). */
static size_t on_header(char *line, size_t size, size_t n, void *userdata)
{
    call *k = userdata;
    size_t len = size * n;
    if (k->head_sent)
        return len; /* trailers */
    if (len <= 2 && (line[0] == '\r' || line[0] == '\n')) {
        long status = 0;
        curl_easy_getinfo(k->c, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 100 && status < 200)
            return len; /* an interim answer: its headers are not the answer's */
        k->head_sent = 1;
        k->relayed[k->relayed_len] = '\0';
        if (k->sink->on_head(k->sink->ctx, (int)status, k->content_type, k->relayed,
                             k->relayed_len) != 0) {
            k->stopped = 1;
            return 0;
        }
        return len;
    }
    if (strncasecmp(line, "HTTP/", 5) == 0) { /* a new status line: a new block */
        k->content_type[0] = '\0';
        k->relayed_len = 0;
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return len;
    size_t name_len = (size_t)(colon - line);
    const char *v = colon + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t vlen = (size_t)(end - v);
    /* A value with a control byte is not passed on, whatever its name. */
    for (const char *p = v; p < end; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return len;
    if (name_len == 12 && strncasecmp(line, "content-type", 12) == 0 &&
        vlen < sizeof(k->content_type)) {
        memcpy(k->content_type, v, vlen);
        k->content_type[vlen] = '\0';
    } else if (relayed_header(line, name_len) &&
               k->relayed_len + name_len + vlen + 3 < RELAYED_MAX) {
        for (size_t i = 0; i < name_len; i++) /* lower case, as HTTP/2 sends them */
            k->relayed[k->relayed_len + i] =
                (char)(line[i] | ((line[i] >= 'A' && line[i] <= 'Z') ? 0x20 : 0));
        k->relayed_len += name_len;
        k->relayed[k->relayed_len++] = '\0';
        memcpy(k->relayed + k->relayed_len, v, vlen);
        k->relayed_len += vlen;
        k->relayed[k->relayed_len++] = '\0';
    }
    return len;
}

static size_t on_data(char *data, size_t size, size_t n, void *userdata)
{
    call *k = userdata;
    size_t len = size * n;
    if (k->sink->on_body(k->sink->ctx, data, len) != 0) {
        k->stopped = 1;
        return 0;
    }
    return len;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    call *k = userdata;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (k->sink->abandoned && k->sink->abandoned(k->sink->ctx)) {
        k->stopped = 1;
        return 1;
    }
    return 0;
}

static void set_options(CURL *c, const char *url, struct curl_slist *hl, const char *body,
                        size_t len, call *k)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never one from the environment */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_MAXCONNECTS, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)pool.ps.connect_timeout_ms);
    /* Silence, not length, is what times a call out: a stream may run long. */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)pool.ps.timeout_s);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    /* Asks for the body as it is (Accept-Encoding: identity), and decodes
     * one the upstream compressed all the same (gzip, deflate, br, zstd):
     * the proxy reads the answer's events and relays them without a
     * Content-Encoding of their own. */
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "identity");
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, k);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, k);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, k);
}

upstream_outcome upstream_post(const char *url, const char *const *headers, size_t n,
                               const char *body, size_t len, const upstream_sink *sink, char *why,
                               size_t whylen)
{
    struct curl_slist *hl = NULL, *next;
    /* The body's type, and no 100-continue round trip before it. */
    static const char *const fixed[] = {"Content-Type: application/json", "Expect:"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (!(next = curl_slist_append(hl, fixed[i])))
            goto oom;
        else
            hl = next;
    for (size_t i = 0; i < n; i++)
        if (!(next = curl_slist_append(hl, headers[i])))
            goto oom;
        else
            hl = next;

    CURL *c = take();
    call k = {.sink = sink, .c = c};
    set_options(c, url, hl, body, len, &k);
    CURLcode rc = curl_easy_perform(c);
    /* Set once the request could be sent: connected (or reusing one). */
    curl_off_t sent_at = 0;
    curl_easy_getinfo(c, CURLINFO_PRETRANSFER_TIME_T, &sent_at);
    /* What the handle keeps for the next call is its connection, nothing
     * of this one (headers, body, callbacks). */
    curl_easy_reset(c);
    give_back(c);
    curl_slist_free_all(hl);

    if (rc == CURLE_OK)
        return UPSTREAM_DONE;
    if (k.stopped)
        return UPSTREAM_STOPPED;
    snprintf(why, whylen, "%s", curl_easy_strerror(rc));
    if (k.head_sent)
        return rc == CURLE_OPERATION_TIMEDOUT ? UPSTREAM_TIMEOUT : UPSTREAM_BROKEN;
    /* Timed out waiting for the answer, or never connected at all. */
    return rc == CURLE_OPERATION_TIMEDOUT && sent_at > 0 ? UPSTREAM_TIMEOUT : UPSTREAM_UNREACHABLE;
oom:
    curl_slist_free_all(hl);
    snprintf(why, whylen, "out of memory");
    return UPSTREAM_UNREACHABLE;
}
