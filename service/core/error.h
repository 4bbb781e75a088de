/* The error every layer reports through: a kind (which the API layer maps
 * to an HTTP status and an error type, see api/codec/answers/error_status.h), a message, and for
 * invalid requests the JSON path of the offending field. Modelled on jansson's json_error_t:
 * functions return -1 (or NULL) and fill the optional compactd_error the caller passes in. */
#ifndef COMPACTD_ERROR_H
#define COMPACTD_ERROR_H

#include "shared_defs.h"

#include <stddef.h>

/* The kinds, one per error type of spec/shared.json (ERROR_KINDS). */
typedef enum {
    ERR_NONE = 0,
#define ERROR_KIND_NAME(kind, status, type) kind,
    ERROR_KINDS(ERROR_KIND_NAME)
#undef ERROR_KIND_NAME
} error_kind;

#define ERROR_PATH_MAX 320

typedef struct {
    error_kind kind;
    char message[256];
    char path[ERROR_PATH_MAX]; /* "$.units[3].tokens"; empty when not about a field */
} compactd_error;

/* Sets kind and a printf-style message; err may be NULL. Always returns -1
 * so callers can write `return error_set(err, ...)`. */
int error_set(compactd_error *err, error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* How many bytes of s (len bytes of UTF-8) to quote in a message: at most
 * 64, cut on a character boundary so the message stays valid UTF-8. */
int error_quote_len(const char *s, size_t len);

#endif
