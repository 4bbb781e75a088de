/* DNS-rebinding protection for every route: which Host and Origin headers
 * compactd answers. */
#ifndef COMPACTD_HOST_GUARD_H
#define COMPACTD_HOST_GUARD_H

#include "config.h"

/* NULL when a request with these headers (either may be NULL: absent) may
 * be answered, else why not (a static string for a 403). Origin: a request
 * that carries one passes only when it is a loopback origin or listed in
 * COMPACTD_ALLOWED_ORIGINS (or COMPACTD_MCP_ALLOWED_ORIGINS). Host: when
 * check_host is set (no API keys), only a loopback name or address, or one
 * listed in COMPACTD_ALLOWED_HOSTS. */
const char *host_guard_refusal(const config *cfg, int check_host, const char *host,
                               const char *origin);

/* 1 when host (a Host header's value: name or address, optional port) is
 * localhost, 127.x.x.x or [::1]. */
int host_guard_loopback_host(const char *host);

#endif
