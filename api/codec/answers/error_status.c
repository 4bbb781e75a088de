/* The error-to-status table. */
#include "error_status.h"

static const struct {
    int status;
    const char *type;
} kinds[] = {
    [ERR_NONE] = {200, "None"},
    [ERR_INVALID_REQUEST] = {400, "InvalidRequest"},
    [ERR_UNAUTHORIZED] = {401, "Unauthorized"},
    [ERR_FORBIDDEN] = {403, "Forbidden"},
    [ERR_NOT_FOUND] = {404, "NotFound"},
    [ERR_METHOD_NOT_ALLOWED] = {405, "MethodNotAllowed"},
    [ERR_AMBIGUOUS] = {409, "Ambiguous"},
    [ERR_PAYLOAD_TOO_LARGE] = {413, "PayloadTooLarge"},
    [ERR_UNSUPPORTED_MEDIA_TYPE] = {415, "UnsupportedMediaType"},
    [ERR_COMPACTION_FAILURE] = {422, "CompactionFailure"},
    [ERR_INTERNAL] = {500, "Internal"},
    [ERR_STORE_UNAVAILABLE] = {503, "StoreUnavailable"},
    [ERR_OVERLOADED] = {503, "Overloaded"},
    [ERR_CONFLICT] = {409, "Conflict"},
};

int error_status(error_kind kind)
{
    return kinds[kind].status;
}

const char *error_type(error_kind kind)
{
    return kinds[kind].type;
}
