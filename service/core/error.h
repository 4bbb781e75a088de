/* The error every layer reports through: a kind (what went wrong, in the
 * domain's words), a message, and for invalid input the JSON path of the
 * offending field. Modelled on jansson's json_error_t: functions return -1
 * (or NULL) and fill the optional compactd_error the caller passes in. How
 * each kind is answered (an HTTP status and an error type) is the API
 * layer's business, decided in one table: api/codec/answers/error_status.c. */
#ifndef COMPACTD_ERROR_H
#define COMPACTD_ERROR_H

#include <stddef.h>

typedef enum {
    ERR_NONE = 0,
    /* What was sent */
    ERR_INVALID_REQUEST, /* a value breaks the contract: missing, of the wrong type, out of range */
    ERR_NOT_JSON,        /* a body that is not declared as JSON */
    ERR_TOO_LARGE,       /* more than one request or one client may hold: a body, its parse
                          * tree, an answer */
    /* Who sent it, and to what */
    ERR_UNKNOWN_CALLER, /* no valid API key names the caller */
    ERR_FOREIGN_ORIGIN, /* sent to a host name, or from a page's origin, compactd does not serve */
    ERR_NOT_FOUND,      /* nothing by that name: no route, no spill, no such page */
    ERR_WRONG_METHOD,   /* the path exists, but does nothing for that method */
    /* What the session holds */
    ERR_AMBIGUOUS,  /* a digest's prefix matches several versions of a key */
    ERR_KEY_REUSED, /* an Idempotency-Key already names another request's commit */
    /* What compacting cannot do */
    ERR_COMPACTION_FAILURE, /* the protected units cannot fit the budget, even behind pointers */
    /* What failed on compactd's side */
    ERR_STORE_UNAVAILABLE, /* the store did not answer, or a write's outcome is unknown */
    ERR_OVERLOADED,        /* the server holds all it may for now, or is shutting down */
    ERR_INTERNAL,          /* compactd failed itself: out of memory, or a broken invariant */
    ERR_KIND_COUNT
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
