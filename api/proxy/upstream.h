/* Calls to the providers' APIs the proxy forwards to, over libcurl: the
 * only code that includes curl.h. The URL is always one the operator
 * configured (COMPACTD_UPSTREAM_*) with a fixed path after it; nothing of a
 * request chooses the host. */
#ifndef COMPACTD_UPSTREAM_H
#define COMPACTD_UPSTREAM_H

#include "config.h"

#include <stddef.h>

/* Sets the upstream client up once, before any thread calls: checks each
 * base URL (http or https, a host, no user, query or fragment) and makes
 * the pool of max_connections handles, each keeping its connection for the
 * next call. 0, or -1 with a message in err. */
int upstream_init(const proxy_settings *ps, char *err, size_t errlen);
void upstream_cleanup(void);

/* What the caller does with the answer as it comes. */
typedef struct {
    /* The status line and headers are in: status, the Content-Type (or
     * ""), and the headers worth relaying ("name\0value\0" pairs ending in
     * an empty name, borrowed for the call). 0 to read the body, -1 to
     * stop. */
    int (*on_head)(void *ctx, int status, const char *content_type, const char *relayed,
                   size_t relayed_len);
    /* Some bytes of the body. 0, or -1 to stop. */
    int (*on_body)(void *ctx, const char *data, size_t len);
    /* 1 when the call should be given up (the server is stopping). */
    int (*abandoned)(void *ctx);
    void *ctx;
} upstream_sink;

typedef enum {
    UPSTREAM_DONE,        /* the whole answer went to the sink */
    UPSTREAM_UNREACHABLE, /* no connection was made, or it broke before the status */
    UPSTREAM_TIMEOUT,     /* connected, then nothing for COMPACTD_UPSTREAM_TIMEOUT_S */
    UPSTREAM_STOPPED,     /* the sink or the server stopped it */
    UPSTREAM_BROKEN       /* the answer was cut short after its status */
} upstream_outcome;

/* POSTs body (a JSON document) to url with headers ("Name: value" lines,
 * n of them, already checked), handing the answer to sink. why gets a
 * short reason on failure, naming no header value. */
upstream_outcome upstream_post(const char *url, const char *const *headers, size_t n,
                               const char *body, size_t len, const upstream_sink *sink, char *why,
                               size_t whylen);

/* The base URL of a provider ("openai", "anthropic"), as configured. */
const char *upstream_base(const char *provider);

#endif
