/* The response helpers (respond.h, and respond_answer() of answers.h):
 * an error, an answer document or a JSON body into the api_response. */
#include "respond.h"

#include "answers.h"

#include <stdarg.h>
#include <stdio.h>

void respond_json(api_response *res, int status, char *body, size_t len)
{
    if (!body) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        return;
    }
    res->status = status;
    res->body = body;
    res->len = len;
    res->content_type = "application/json";
}

void respond_answer(api_response *res, answer *a)
{
    res->status = a->status;
    res->body = a->body;
    res->len = a->len;
    res->content_type = "application/json";
    a->body = NULL;
}

void respond_error(api_response *res, const compactd_error *err)
{
    answer a;
    answer_error(&a, err);
    respond_answer(res, &a);
}

void respond_fail(api_response *res, error_kind kind, const char *fmt, ...)
{
    compactd_error err = {kind, "", ""};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.message, sizeof(err.message), fmt, ap);
    va_end(ap);
    respond_error(res, &err);
}
