/* Parsing of COMPACTD_REDIS_URL into a store_config: which kind of store
 * and where its nodes are. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_int(const char *s, size_t len, int lo, int hi, int *out)
{
    long v = 0;
    if (len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Reads host[:port] at *p (host may be [an:ipv6:address]), up to a ',' or
 * a '/' or the end, and leaves *p after it. Returns 0, or -1 when it is
 * malformed or the port is required and missing. */
static int parse_node(const char **p, store_node_addr *a, int port_required)
{
    const char *host = *p, *host_end, *q;
    if (*host == '[') { /* [::1]:6379 */
        host_end = strchr(host, ']');
        if (!host_end)
            return -1;
        host++;
        q = host_end + 1;
    } else {
        host_end = host + strcspn(host, ":,/");
        q = host_end;
    }
    size_t host_len = (size_t)(host_end - host);
    if (host_len == 0 || host_len >= sizeof(a->host))
        return -1;
    if (*q == ':') {
        const char *port = ++q;
        q += strcspn(q, ",/");
        if (parse_int(port, (size_t)(q - port), 1, 65535, &a->port) != 0)
            return -1;
    } else if (port_required) {
        return -1;
    }
    memcpy(a->host, host, host_len);
    a->host[host_len] = '\0';
    *p = q;
    return 0;
}

/* Parses the seed list of redis+cluster://host:port,host:port/ (the port
 * required, no db: a cluster has only db 0). */
static int parse_cluster_url(const char *url, const char *list, store_config *cfg, char *err,
                             size_t errlen)
{
    const char *p = list;
    cfg->kind = STORE_CLUSTER;
    cfg->n_nodes = 0;
    while (*p && *p != '/') {
        if (cfg->n_nodes == STORE_NODES_MAX) {
            snprintf(err, errlen, "redis url '%s': at most %d seed nodes", url, STORE_NODES_MAX);
            return -1;
        }
        store_node_addr *a = &cfg->nodes[cfg->n_nodes];
        memset(a, 0, sizeof(*a));
        if (parse_node(&p, a, 1) != 0)
            goto bad;
        cfg->n_nodes++;
        if (*p == ',' && (*++p == '\0' || *p == '/'))
            goto bad; /* a comma names one more node */
    }
    if (cfg->n_nodes == 0 || (*p == '/' && p[1] != '\0'))
        goto bad;
    return 0;
bad:
    snprintf(err, errlen, "redis url '%s': expected %s+cluster://host:port,host:port/", url,
             cfg->tls.on ? "rediss" : "redis");
    return -1;
}

/* ---- Credentials: [[user]:password@] after the scheme ---- */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..len) into out (size bytes, NUL-terminated).
 * Returns 0, or -1 when an escape is malformed, it decodes to a NUL or a
 * control byte (which no AUTH argument should carry), or it does not fit. */
static int decode_part(const char *s, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
            int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            i += 2;
        }
        if (c < 0x20 || c == 0x7f || n + 1 >= size)
            return -1;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return 0;
}

/* Where the authority after the scheme (rest) ends: at the first '/' (for
 * unix://, the path's). */
static const char *authority_end(const char *rest)
{
    const char *slash = strchr(rest, '/');
    return slash ? slash : rest + strlen(rest);
}

/* The '@' ending rest's credentials, or NULL when it has none: the last
 * '@' of the authority (a password holding '@' or '/' percent-encodes them). */
static const char *credentials_end(const char *rest)
{
    const char *end = authority_end(rest), *at = NULL;
    for (const char *p = rest; p < end; p++)
        if (*p == '@')
            at = p;
    return at;
}

/* Reads [[user]:password@] at *rest into cfg and moves *rest past it.
 * Returns 0, or -1 with err set (the password never in it). */
static int parse_credentials(const char *scheme, const char **rest, store_config *cfg, char *err,
                             size_t errlen)
{
    const char *at = credentials_end(*rest);
    if (!at)
        return 0;
    const char *colon = memchr(*rest, ':', (size_t)(at - *rest));
    if (!colon) {
        snprintf(err, errlen,
                 "redis url %s...: credentials are [user]:password@ (a user without a "
                 "password cannot authenticate)",
                 scheme);
        return -1;
    }
    if (decode_part(*rest, (size_t)(colon - *rest), cfg->user, sizeof(cfg->user)) != 0 ||
        decode_part(colon + 1, (size_t)(at - colon - 1), cfg->password, sizeof(cfg->password)) !=
            0 ||
        !cfg->password[0]) {
        snprintf(err, errlen,
                 "redis url %s...: the user and password must be non-empty (the password), "
                 "percent-encoded where they hold reserved characters, and under %d bytes each",
                 scheme, STORE_AUTH_MAX);
        return -1;
    }
    *rest = at + 1;
    return 0;
}

void store_url_redacted(const char *url, char *out, size_t len)
{
    const char *scheme_end = strstr(url, "://");
    const char *rest = scheme_end ? scheme_end + 3 : NULL;
    const char *at = rest ? credentials_end(rest) : NULL;
    const char *colon = at ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
    if (!colon)
        snprintf(out, len, "%s", url);
    else
        snprintf(out, len, "%.*s:***%s", (int)(colon - url), url, at);
}

/* The scheme url starts with, among those of one kind (the TLS one
 * second): 0 for the first, 1 for the second (then *rest is after it), -1
 * for neither. */
static int scheme_of(const char *url, const char *plain, const char *tls, const char **rest)
{
    size_t n = strlen(plain), t = strlen(tls);
    if (strncmp(url, plain, n) == 0) {
        *rest = url + n;
        return 0;
    }
    if (strncmp(url, tls, t) == 0) {
        *rest = url + t;
        return 1;
    }
    return -1;
}

/* Parses url, which holds no credentials (store_config_parse_url() took
 * them out), so that every message may show it. */
static int parse_plain_url(const char *url, store_config *cfg, char *err, size_t errlen)
{
    static const char unix_scheme[] = "unix://";
    const char *p;

    store_node_addr *node = &cfg->nodes[0];
    memset(node, 0, sizeof(*node));
    node->port = 6379;
    cfg->kind = STORE_SINGLE;
    cfg->n_nodes = 1;
    cfg->db = 0;
    cfg->tls.on = 0;
    int tls = scheme_of(url, "redis+cluster://", "rediss+cluster://", &p);
    if (tls >= 0) {
        cfg->tls.on = tls;
        return parse_cluster_url(url, p, cfg, err, errlen);
    }
    if (strncmp(url, unix_scheme, sizeof(unix_scheme) - 1) == 0) {
        const char *path = url + sizeof(unix_scheme) - 1;
        if (path[0] != '/' || strlen(path) >= sizeof(node->unix_path)) {
            snprintf(err, errlen, "redis url '%s': expected unix:///absolute/path.sock", url);
            return -1;
        }
        strcpy(node->unix_path, path);
        return 0;
    }
    tls = scheme_of(url, "redis://", "rediss://", &p);
    if (tls < 0) {
        snprintf(err, errlen,
                 "redis url '%s': expected redis://host:port/db, rediss://host:port/db (TLS), "
                 "unix:///path or redis+cluster://host:port,host:port/ (rediss+cluster:// over "
                 "TLS)",
                 url);
        return -1;
    }
    cfg->tls.on = tls;
    if (parse_node(&p, node, 0) != 0)
        goto bad;
    if (*p == '/' && p[1] != '\0') {
        if (parse_int(p + 1, strlen(p + 1), 0, 1000000, &cfg->db) != 0)
            goto bad;
    } else if (*p != '\0' && strcmp(p, "/") != 0) {
        goto bad;
    }
    return 0;
bad:
    snprintf(err, errlen, "redis url '%s': expected %s://host:port/db", url,
             tls ? "rediss" : "redis");
    return -1;
}

int store_config_parse_url(const char *url, store_config *cfg, char *err, size_t errlen)
{
    cfg->user[0] = cfg->password[0] = '\0';
    const char *scheme_end = strstr(url, "://");
    if (!scheme_end)
        return parse_plain_url(url, cfg, err, errlen);
    size_t scheme_len = (size_t)(scheme_end + 3 - url);
    char scheme[32];
    snprintf(scheme, sizeof(scheme), "%.*s", (int)(scheme_len < 24 ? scheme_len : 24), url);
    const char *rest = url + scheme_len;
    if (parse_credentials(scheme, &rest, cfg, err, errlen) != 0)
        return -1;
    /* The URL without its credentials, for the parse and its messages. */
    size_t len = scheme_len + strlen(rest) + 1;
    char *plain = malloc(len);
    if (!plain) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(plain, len, "%.*s%s", (int)scheme_len, url, rest);
    int rc = parse_plain_url(plain, cfg, err, errlen);
    free(plain);
    return rc;
}
