/* Parsing of COMPACTD_REDIS_URL into a store_config: which kind of store
 * and where its nodes are. */
#include "store.h"

#include <stdio.h>
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
        const char *host = p, *host_end;
        if (*host == '[') { /* [::1]:7000 */
            host_end = strchr(host, ']');
            if (!host_end)
                goto bad;
            host++;
            p = host_end + 1;
        } else {
            host_end = host + strcspn(host, ":,/");
            p = host_end;
        }
        size_t host_len = (size_t)(host_end - host);
        if (host_len == 0 || host_len >= sizeof(a->host) || *p != ':')
            goto bad;
        const char *port = ++p;
        p += strcspn(p, ",/");
        if (parse_int(port, (size_t)(p - port), 1, 65535, &a->port) != 0)
            goto bad;
        memcpy(a->host, host, host_len);
        cfg->n_nodes++;
        if (*p == ',' && (*++p == '\0' || *p == '/'))
            goto bad; /* a comma names one more node */
    }
    if (cfg->n_nodes == 0 || (*p == '/' && p[1] != '\0'))
        goto bad;
    return 0;
bad:
    snprintf(err, errlen, "redis url '%s': expected redis+cluster://host:port,host:port/", url);
    return -1;
}

int store_config_parse_url(const char *url, store_config *cfg, char *err, size_t errlen)
{
    static const char redis_scheme[] = "redis://", unix_scheme[] = "unix://",
                      cluster_scheme[] = "redis+cluster://";

    store_node_addr *node = &cfg->nodes[0];
    memset(node, 0, sizeof(*node));
    node->port = 6379;
    cfg->kind = STORE_SINGLE;
    cfg->n_nodes = 1;
    cfg->db = 0;
    if (strncmp(url, cluster_scheme, sizeof(cluster_scheme) - 1) == 0)
        return parse_cluster_url(url, url + sizeof(cluster_scheme) - 1, cfg, err, errlen);
    if (strncmp(url, unix_scheme, sizeof(unix_scheme) - 1) == 0) {
        const char *path = url + sizeof(unix_scheme) - 1;
        if (path[0] != '/' || strlen(path) >= sizeof(node->unix_path)) {
            snprintf(err, errlen, "redis url '%s': expected unix:///absolute/path.sock", url);
            return -1;
        }
        strcpy(node->unix_path, path);
        return 0;
    }
    if (strncmp(url, redis_scheme, sizeof(redis_scheme) - 1) != 0) {
        snprintf(err, errlen,
                 "redis url '%s': expected redis://host:port/db, unix:///path or "
                 "redis+cluster://host:port,host:port/",
                 url);
        return -1;
    }

    const char *host = url + sizeof(redis_scheme) - 1, *host_end, *p;
    if (*host == '[') { /* [::1]:6379 */
        host_end = strchr(host, ']');
        if (!host_end)
            goto bad;
        host++;
        p = host_end + 1;
    } else {
        host_end = host + strcspn(host, ":/");
        p = host_end;
    }
    size_t host_len = (size_t)(host_end - host);
    if (host_len == 0 || host_len >= sizeof(node->host))
        goto bad;
    memcpy(node->host, host, host_len);
    node->host[host_len] = '\0';

    if (*p == ':') {
        const char *port = ++p;
        p += strcspn(p, "/");
        if (parse_int(port, (size_t)(p - port), 1, 65535, &node->port) != 0)
            goto bad;
    }
    if (*p == '/' && p[1] != '\0') {
        if (parse_int(p + 1, strlen(p + 1), 0, 1000000, &cfg->db) != 0)
            goto bad;
    } else if (*p != '\0' && strcmp(p, "/") != 0) {
        goto bad;
    }
    return 0;
bad:
    snprintf(err, errlen, "redis url '%s': expected redis://host:port/db", url);
    return -1;
}
