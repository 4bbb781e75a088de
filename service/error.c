/* Error kinds, their HTTP statuses and type names. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int error_set(compactd_error *err, error_kind kind, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    err->kind = kind;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return -1;
}

int error_quote_len(const char *s, size_t len)
{
    if (len <= 64)
        return (int)len;
    size_t n = 64;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return (int)n;
}

static const struct {
    int status;
    const char *type;
} kinds[] = {
    [ERR_NONE] = {200, "None"},
    [ERR_INVALID_REQUEST] = {400, "InvalidRequest"},
    [ERR_UNAUTHORIZED] = {401, "Unauthorized"},
    [ERR_NOT_FOUND] = {404, "NotFound"},
    [ERR_METHOD_NOT_ALLOWED] = {405, "MethodNotAllowed"},
    [ERR_PAYLOAD_TOO_LARGE] = {413, "PayloadTooLarge"},
    [ERR_UNSUPPORTED_MEDIA_TYPE] = {415, "UnsupportedMediaType"},
    [ERR_COMPACTION_FAILURE] = {422, "CompactionFailure"},
    [ERR_INTERNAL] = {500, "Internal"},
    [ERR_STORE_UNAVAILABLE] = {503, "StoreUnavailable"},
};

int error_status(error_kind kind)
{
    return kinds[kind].status;
}

const char *error_type(error_kind kind)
{
    return kinds[kind].type;
}
