/* The error-to-status table, written from spec/shared.json's error types
 * (ERROR_KINDS, shared_defs.h), which the clients' error classes are too. */
#include "error_status.h"

static const struct {
    int status;
    const char *type;
} kinds[] = {
    [ERR_NONE] = {200, "None"},
#define ERROR_KIND_ROW(kind, http_status, name) [kind] = {http_status, name},
    ERROR_KINDS(ERROR_KIND_ROW)
#undef ERROR_KIND_ROW
};

int error_status(error_kind kind)
{
    return kinds[kind].status;
}

const char *error_type(error_kind kind)
{
    return kinds[kind].type;
}
