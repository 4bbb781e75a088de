/* DNS-rebinding protection for every route: which Host and Origin headers
 * compactd answers. */
#ifndef COMPACTD_HOST_GUARD_H
#define COMPACTD_HOST_GUARD_H

/* The lists a deployment allows besides loopback: comma-separated, borrowed
 * from the settings (COMPACTD_ALLOWED_HOSTS, COMPACTD_ALLOWED_ORIGINS and
 * the older COMPACTD_MCP_ALLOWED_ORIGINS). */
typedef struct {
    const char *allowed_hosts;
    const char *allowed_origins;
    const char *mcp_allowed_origins;
} host_rules;

/* NULL when a request with these headers (either may be NULL: absent) may
 * be answered, else why not (a static string for a 403). Origin: a request
 * that carries one passes only when it is a loopback origin or listed in
 * COMPACTD_ALLOWED_ORIGINS (or COMPACTD_MCP_ALLOWED_ORIGINS). Host: when
 * check_host is set (no API keys), only a loopback name or address, or one
 * listed in COMPACTD_ALLOWED_HOSTS. */
const char *host_guard_refusal(const host_rules *rules, int check_host, const char *host,
                               const char *origin);

/* 1 when host (a Host header's value: name or address, optional port) is
 * localhost, 127.x.x.x or [::1]. */
int host_guard_loopback_host(const char *host);

#endif
