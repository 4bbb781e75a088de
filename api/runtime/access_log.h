/* One JSON line per request on stderr. Never unit texts, never API keys.
 * An error answer's type and path are on its line (what was refused and
 * where), its message too at debug. */
#ifndef COMPACTD_ACCESS_LOG_H
#define COMPACTD_ACCESS_LOG_H

#include "api_call.h"
#include "config.h"

/* Writes req's line: its method, and from its call (api_call_of(req),
 * NULL for a request refused before it was matched) the route, session,
 * tenant, outcome and units. */
void access_log_write(log_level level, const api_request *req, int status, const char *body,
                      size_t len, double seconds);

#endif
