/* How a handler answers: the response helpers every front (REST, MCP, the
 * proxy) fills its api_response with. */
#ifndef COMPACTD_RESPOND_H
#define COMPACTD_RESPOND_H

#include "error.h"
#include "request.h"

/* Answers with err's status and JSON body. */
void respond_error(api_response *res, const compactd_error *err);

/* Answers with kind and a printf-style message. */
void respond_fail(api_response *res, error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Answers status with body (owned; NULL means out of memory: answered 500). */
void respond_json(api_response *res, int status, char *body, size_t len);

#endif
