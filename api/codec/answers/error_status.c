/* How each kind of error is answered over HTTP: the one place that maps
 * what went wrong (error.h) to the type of the error body, and so to its
 * status. The types and their statuses are the spec's (error_types.h,
 * written from spec/shared.json, as the clients' error classes are);
 * several kinds may share a status, each keeps the type it always had. */
#include "error_status.h"

#include "error_types.h"

#include <assert.h>

/* The types by their ids, ERROR_TYPE_COUNT of them. */
#define TYPE_ID(id, status, name) id,
typedef enum { ERROR_TYPES(TYPE_ID) ERROR_TYPE_COUNT } error_type_id;
#undef TYPE_ID

static const struct {
    int status;
    const char *name;
} types[ERROR_TYPE_COUNT] = {
#define TYPE_ROW(id, status, name) [id] = {status, name},
    ERROR_TYPES(TYPE_ROW)
#undef TYPE_ROW
};

/* What each kind is answered as (ERR_NONE, which is no error, as none). */
static const error_type_id answered_as[ERR_KIND_COUNT] = {
    [ERR_INVALID_REQUEST] = ERROR_TYPE_INVALID_REQUEST,
    [ERR_NOT_JSON] = ERROR_TYPE_UNSUPPORTED_MEDIA_TYPE,
    [ERR_TOO_LARGE] = ERROR_TYPE_PAYLOAD_TOO_LARGE,
    [ERR_UNKNOWN_CALLER] = ERROR_TYPE_UNAUTHORIZED,
    [ERR_FOREIGN_ORIGIN] = ERROR_TYPE_FORBIDDEN,
    [ERR_NOT_FOUND] = ERROR_TYPE_NOT_FOUND,
    [ERR_WRONG_METHOD] = ERROR_TYPE_METHOD_NOT_ALLOWED,
    [ERR_AMBIGUOUS] = ERROR_TYPE_AMBIGUOUS,
    [ERR_KEY_REUSED] = ERROR_TYPE_CONFLICT,
    [ERR_COMPACTION_FAILURE] = ERROR_TYPE_COMPACTION_FAILURE,
    [ERR_STORE_UNAVAILABLE] = ERROR_TYPE_STORE_UNAVAILABLE,
    [ERR_OVERLOADED] = ERROR_TYPE_OVERLOADED,
    [ERR_INTERNAL] = ERROR_TYPE_INTERNAL,
};

int error_status(error_kind kind)
{
    assert(kind >= ERR_NONE && kind < ERR_KIND_COUNT);
    return kind == ERR_NONE ? 200 : types[answered_as[kind]].status;
}

const char *error_type(error_kind kind)
{
    assert(kind >= ERR_NONE && kind < ERR_KIND_COUNT);
    return kind == ERR_NONE ? "None" : types[answered_as[kind]].name;
}
