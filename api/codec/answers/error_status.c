/* How each kind of error is answered over HTTP: the one place that maps
 * what went wrong (error.h) to a status and the "type" of the error body.
 * Several kinds may share a status; each keeps the type it always had. */
#include "error_status.h"

#include <assert.h>

static const struct {
    int status;
    const char *type;
} kinds[ERROR_KINDS] = {
    [ERR_NONE] = {200, "None"},
    [ERR_INVALID_REQUEST] = {400, "InvalidRequest"},
    [ERR_NOT_JSON] = {415, "UnsupportedMediaType"},
    [ERR_TOO_LARGE] = {413, "PayloadTooLarge"},
    [ERR_UNKNOWN_CALLER] = {401, "Unauthorized"},
    [ERR_FOREIGN_ORIGIN] = {403, "Forbidden"},
    [ERR_NOT_FOUND] = {404, "NotFound"},
    [ERR_WRONG_METHOD] = {405, "MethodNotAllowed"},
    [ERR_AMBIGUOUS] = {409, "Ambiguous"},
    [ERR_KEY_REUSED] = {409, "Conflict"},
    [ERR_COMPACTION_FAILURE] = {422, "CompactionFailure"},
    [ERR_STORE_UNAVAILABLE] = {503, "StoreUnavailable"},
    [ERR_OVERLOADED] = {503, "Overloaded"},
    [ERR_INTERNAL] = {500, "Internal"},
};

int error_status(error_kind kind)
{
    assert(kind >= ERR_NONE && kind < ERROR_KINDS && kinds[kind].type);
    return kinds[kind].status;
}

const char *error_type(error_kind kind)
{
    assert(kind >= ERR_NONE && kind < ERROR_KINDS && kinds[kind].type);
    return kinds[kind].type;
}
