/* The Host and Origin checks that keep a page served by a DNS-rebinding
 * attacker from reaching a loopback compactd. */
#include "host_guard.h"

#include <string.h>
#include <strings.h>

/* Length of the host part of "host[:port]" ("[v6]" kept whole), or 0 when
 * what follows it is not an optional ":digits" and then the end. */
static size_t host_part(const char *host)
{
    size_t n;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (!close)
            return 0;
        n = (size_t)(close - host) + 1;
    } else {
        n = strcspn(host, ":");
    }
    const char *rest = host + n;
    if (*rest == ':') {
        size_t d = strspn(rest + 1, "0123456789");
        if (d == 0 || d > 5)
            return 0;
        rest += 1 + d;
    }
    return *rest == '\0' ? n : 0;
}

int host_guard_loopback_host(const char *host)
{
    size_t n = host_part(host);
    if (n == 0)
        return 0;
    if (n == 5 && strncmp(host, "[::1]", 5) == 0)
        return 1;
    if (n == 9 && strncasecmp(host, "localhost", 9) == 0)
        return 1;
    if (n < 7 || strncmp(host, "127.", 4) != 0)
        return 0;
    int dots = 1;
    for (size_t i = 4; i < n; i++) {
        if (host[i] == '.') {
            if (host[i - 1] == '.')
                return 0;
            dots++;
        } else if (host[i] < '0' || host[i] > '9') {
            return 0;
        }
    }
    return dots == 3 && host[n - 1] != '.';
}

/* 1 when item (len bytes) is one of the comma-separated entries of list,
 * compared without case and without the blanks around entries. */
static int listed(const char *list, const char *item, size_t len)
{
    /* No list is an empty one. */
    for (const char *p = list ? list : ""; *p;) {
        p += strspn(p, " ,");
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && p[m - 1] == ' ')
            m--;
        if (m > 0 && m == len && strncasecmp(p, item, m) == 0)
            return 1;
        p += n;
    }
    return 0;
}

/* An Origin is scheme://host[:port]; a loopback one names a loopback host. */
static int loopback_origin(const char *origin)
{
    if (strncasecmp(origin, "http://", 7) == 0)
        return host_guard_loopback_host(origin + 7);
    if (strncasecmp(origin, "https://", 8) == 0)
        return host_guard_loopback_host(origin + 8);
    return 0;
}

/* A listed host matches with or without the port: "proxy.internal" admits
 * "proxy.internal:8080", "proxy.internal:8080" only that port. */
static int host_listed(const char *list, const char *host)
{
    size_t n = host_part(host);
    return n > 0 && (listed(list, host, strlen(host)) || listed(list, host, n));
}

const char *host_guard_refusal(const host_rules *rules, int check_host, const char *host,
                               const char *origin)
{
    if (origin && !loopback_origin(origin) &&
        !listed(rules->allowed_origins, origin, strlen(origin)) &&
        !listed(rules->mcp_allowed_origins, origin, strlen(origin)))
        return "this Origin may not use compactd (loopback origins and those in "
               "COMPACTD_ALLOWED_ORIGINS may)";
    if (check_host && host && !host_guard_loopback_host(host) &&
        !host_listed(rules->allowed_hosts, host))
        return "the Host header names neither a loopback host nor one in COMPACTD_ALLOWED_HOSTS "
               "(without API keys compactd answers only those)";
    return NULL;
}
