/* The headers of a proxied request: compactd's own (X-Compactd-*), checked
 * and refused by name, and the provider's, copied for the upstream from a
 * fixed list and nothing else (no Host, framing or hop-by-hop header, no
 * header the client adds). */
#include "proxy_internal.h"

#include "json_fields.h"
#include "session_id.h"
#include "tenants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Overwrites a copy of a credential before its memory goes back: writes
 * through a volatile pointer are not optimised away. */
static void wipe(char *s, size_t n)
{
    volatile char *p = s;
    while (n--)
        *p++ = 0;
}

static void bad_header(api_response *res, const proxy_api *api, const char *name, const char *why)
{
    proxy_fail(res, api, 400, "invalid_request_error", "invalid_header", name, -1, -1,
               "header %s %s; nothing was sent upstream or written", name, why);
}

/* 1 when every byte of v is a visible character, a space or a tab: what a
 * header value may hold. A bare CR or a NUL would split it on the way on. */
static int value_clean(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return 0;
    return 1;
}

/* The value of header name when sent once; NULL when absent. Sent more
 * than once, or with a control byte, it is refused (-1). */
static int single(const api_request *req, const proxy_api *api, const char *name,
                  const char **value, api_response *res)
{
    *value = NULL;
    size_t n = api_header_count(req, name);
    if (n == 0)
        return 0;
    if (n > 1) {
        bad_header(res, api, name, "is sent more than once");
        return -1;
    }
    *value = api_header(req, name);
    if (!value_clean(*value)) {
        bad_header(res, api, name, "holds a control character");
        return -1;
    }
    return 0;
}

static int read_budget(const char *v, int64_t *out)
{
    int64_t n = 0;
    if (!*v || strlen(v) > 12)
        return -1;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
    }
    if (n < 1 || n > TOKENS_MAX)
        return -1;
    *out = n;
    return 0;
}

/* The policy header: one JSON object (its members are checked with the
 * history, as /messages/compact checks "policy"). */
static int read_policy(const char *v, char **out)
{
    json_error_t jerr;
    json_t *doc = json_loads(v, JSON_REJECT_DUPLICATES, &jerr);
    int ok = json_is_object(doc);
    json_decref(doc);
    if (!ok)
        return -1;
    *out = strdup(v);
    return *out ? 0 : -1;
}

static int read_own(const api_request *req, const proxy_api *api, proxy_headers *h,
                    api_response *res)
{
    const char *v;
    if (single(req, api, "X-Compactd-Budget", &v, res) != 0)
        return -1;
    if (v && read_budget(v, &h->budget) != 0) {
        bad_header(res, api, "X-Compactd-Budget", "must be a whole number of tokens from 1");
        return -1;
    }
    if (single(req, api, "X-Compactd-Session", &v, res) != 0)
        return -1;
    if (v && !session_id_valid(v, strlen(v))) {
        bad_header(res, api, "X-Compactd-Session", "must be " SESSION_ID_RULE);
        return -1;
    }
    if (v)
        snprintf(h->session, sizeof(h->session), "%s", v);
    if (single(req, api, "X-Compactd-Policy", &v, res) != 0)
        return -1;
    if (v && read_policy(v, &h->policy) != 0) {
        bad_header(res, api, "X-Compactd-Policy",
                   "must be one JSON object, as \"policy\" of "
                   "/messages/compact");
        return -1;
    }
    if (single(req, api, "Idempotency-Key", &v, res) != 0)
        return -1;
    if (v && !(h->idempotency_key = strdup(v))) {
        proxy_fail(res, api, 500, "api_error", "internal", NULL, -1, -1, "out of memory");
        return -1;
    }
    return 0;
}

int proxy_headers_read(const api_request *req, const proxy_api *api, proxy_headers *h,
                       api_response *res)
{
    memset(h, 0, sizeof(*h));
    h->budget = -1;
    if (read_own(req, api, h, res) != 0)
        return -1;
    for (const char *const *name = api->forwarded; *name; name++) {
        const char *v;
        if (single(req, api, *name, &v, res) != 0)
            return -1;
        if (!v)
            continue;
        size_t n = strlen(*name) + 2 + strlen(v) + 1;
        char *line = h->n_forwarded < PROXY_FORWARDED_MAX ? malloc(n) : NULL;
        if (!line) {
            proxy_fail(res, api, 500, "api_error", "internal", NULL, -1, -1, "out of memory");
            return -1;
        }
        snprintf(line, n, "%s: %s", *name, v);
        h->forwarded[h->n_forwarded++] = line;
    }
    return 0;
}

void proxy_headers_free(proxy_headers *h)
{
    free(h->policy);
    free(h->idempotency_key);
    for (size_t i = 0; i < h->n_forwarded; i++) {
        /* A copy of the caller's credential: wiped before it goes back. */
        wipe(h->forwarded[i], strlen(h->forwarded[i]));
        free(h->forwarded[i]);
    }
    memset(h, 0, sizeof(*h));
}

const char *proxy_tenant(const app *a, const api_request *req)
{
    if (!a->keys)
        return "default";
    if (api_header_count(req, "X-Compactd-Key") != 1)
        return NULL;
    const char *key = api_header(req, "X-Compactd-Key");
    char bearer[320];
    if (strlen(key) > 256)
        return NULL;
    snprintf(bearer, sizeof(bearer), "Bearer %s", key);
    const char *tenant = tenants_authenticate(a->keys, bearer);
    wipe(bearer, sizeof(bearer));
    return tenant;
}
