/* One JSON line per request on stderr. Never unit texts, never API keys. */
#ifndef COMPACTD_ACCESS_LOG_H
#define COMPACTD_ACCESS_LOG_H

#include "config.h"
#include "request.h"

void access_log_write(log_level level, const api_request *req, int status, double seconds);

#endif
