/* The one table from what went wrong to how it is answered
 * (api/codec/answers/error_status.c): every kind of error.h keeps the HTTP
 * status and error type it was answered with when the kinds were the
 * status list, so that no route answers a client differently; and every
 * kind is in the table. */
#include "check.h"
#include "error_status.h"

#include <string.h>

int main(void)
{
    static const struct {
        error_kind kind;
        const char *name;
        int status;
        const char *type;
    } answered[] = {
        {ERR_NONE, "ERR_NONE", 200, "None"},
        {ERR_INVALID_REQUEST, "ERR_INVALID_REQUEST", 400, "InvalidRequest"},
        {ERR_UNKNOWN_CALLER, "ERR_UNKNOWN_CALLER", 401, "Unauthorized"},
        {ERR_FOREIGN_ORIGIN, "ERR_FOREIGN_ORIGIN", 403, "Forbidden"},
        {ERR_NOT_FOUND, "ERR_NOT_FOUND", 404, "NotFound"},
        {ERR_WRONG_METHOD, "ERR_WRONG_METHOD", 405, "MethodNotAllowed"},
        {ERR_AMBIGUOUS, "ERR_AMBIGUOUS", 409, "Ambiguous"},
        {ERR_TOO_LARGE, "ERR_TOO_LARGE", 413, "PayloadTooLarge"},
        {ERR_NOT_JSON, "ERR_NOT_JSON", 415, "UnsupportedMediaType"},
        {ERR_COMPACTION_FAILURE, "ERR_COMPACTION_FAILURE", 422, "CompactionFailure"},
        {ERR_INTERNAL, "ERR_INTERNAL", 500, "Internal"},
        {ERR_STORE_UNAVAILABLE, "ERR_STORE_UNAVAILABLE", 503, "StoreUnavailable"},
        {ERR_OVERLOADED, "ERR_OVERLOADED", 503, "Overloaded"},
        {ERR_KEY_REUSED, "ERR_KEY_REUSED", 409, "Conflict"},
    };
    enum { N = sizeof(answered) / sizeof(answered[0]) };
    check((int)N == (int)ERR_KIND_COUNT, "%d kinds listed here, %d in error.h", (int)N,
          (int)ERR_KIND_COUNT);
    unsigned char seen[ERR_KIND_COUNT] = {0};
    for (size_t i = 0; i < N; i++) {
        error_kind k = answered[i].kind;
        check(!seen[k], "%s listed twice", answered[i].name);
        seen[k] = 1;
        check(error_status(k) == answered[i].status, "%s: status %d, want %d", answered[i].name,
              error_status(k), answered[i].status);
        check(strcmp(error_type(k), answered[i].type) == 0, "%s: type %s, want %s",
              answered[i].name, error_type(k), answered[i].type);
    }
    return check_done("error_status_cases");
}
