/* The decoders' common parts: where a value sits (its JSON path, spelled out
 * only for an error), the one reader per kind of value (integer, string,
 * boolean, enumerated name, tokenizer), and the table-driven reader of an
 * object's members that every route's fields go through. For the decoders
 * only (json_decode.c, json_units.c, chat_decode.c and the chat codecs). */
#ifndef COMPACTD_JSON_FIELDS_H
#define COMPACTD_JSON_FIELDS_H

#include "chat_format.h"
#include "error.h"
#include "json_text.h"
#include "tokenizer.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define TOKENS_MAX 2147483647LL

/* Where a value sits, as the links of its JSON path: a member of its
 * parent (name set) or an element of it (index), or, for callers that keep
 * their paths as text, the whole path already spelled out (path set). The
 * path is written out only when there is an error to report. Every string
 * is borrowed. */
typedef struct field_ref {
    const struct field_ref *parent; /* NULL: a member of the document */
    const char *name;               /* NULL for an array element */
    size_t index;
    const char *path; /* when set, the whole path; the links above are unused */
} field_ref;

/* Writes the JSON path of r into out (cut to size; "$" for the document). */
void field_path(const field_ref *r, char *out, size_t size);

/* The path of a member: $.name, or $["na me"] when the name is not a plain
 * identifier (cut at a character boundary, bytes that are not UTF-8 as
 * '?'), so that it goes into a JSON answer as it is. */
void field_member_path(char *out, size_t size, const char *parent, const char *name,
                       size_t name_len);

/* An InvalidRequest at path (a spelled-out JSON path), its message made
 * safe for a JSON answer. Returns -1 (err may be NULL). */
int field_invalid(compactd_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same at the path of at. */
int field_invalid_at(compactd_error *err, const field_ref *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Readers: 0 with *out set, or -1 with an InvalidRequest at at ---- */

/* An integer in [lo, hi]. */
int field_read_int(const json_t *v, const field_ref *at, long long lo, long long hi, int64_t *out,
                   compactd_error *err);

/* A string of min to max bytes, borrowed from v. setting, when not NULL,
 * names the limit max comes from ("COMPACTD_MAX_TEXT_BYTES"), and an
 * over-long string is refused naming it. */
int field_read_string(const json_t *v, const field_ref *at, size_t min, size_t max,
                      const char *setting, const char **out, size_t *len, compactd_error *err);

int field_read_bool(const json_t *v, const field_ref *at, int *out, compactd_error *err);

/* A string that is one of names[0..n), compared by length so that a name
 * with an embedded NUL matches none; *out is its index. */
int field_read_enum(const json_t *v, const field_ref *at, const char *const *names, int n, int *out,
                    compactd_error *err);

/* The encoding a request counts with when it names none, decided here
 * only: a chat request's, its format's (chat_format_tokenizer(): NULL when
 * that one's rank file is missing); any other's (format NULL), the
 * configured default (COMPACTD_TOKENIZER). */
const tokenizer *field_default_tokenizer(const chat_format *format);

/* A request's "tokenizer": the name of a known encoding (borrowed, for the
 * life of the process). The refusal lists the tokenizer table's names. */
int field_read_tokenizer(const json_t *v, const field_ref *at, const tokenizer **out,
                         compactd_error *err);

/* ---- Tables of fields ---- */

/* Reads member v (at at) into ctx, the object being decoded. */
typedef int (*field_read_fn)(const json_t *v, const field_ref *at, void *ctx, compactd_error *err);

enum {
    FIELD_OPTIONAL,
    FIELD_REQUIRED,     /* missing: "\"name\" is required" at the object */
    FIELD_REQUIRED_HERE /* missing: "is required" at the member's path */
};

/* One member of an object the decoder knows: its name, whether it must be
 * there, whether admit() must pass it first (a field only some objects may
 * carry), and how it is read. read NULL: known, read elsewhere. */
typedef struct {
    const char *name;
    int required;
    int restricted;
    field_read_fn read;
} field_spec;

#define FIELDS_MAX 16 /* rows of the longest table: fits the "seen" mask */

/* Whether the object in ctx may carry field f (a restricted row): 0, or -1
 * with err set. */
typedef int (*field_admit_fn)(void *ctx, const field_spec *f, const field_ref *at,
                              compactd_error *err);

/* Reads the members of the object v (at at) by the table spec[0..n), in
 * member order so that the first offending member is the one reported:
 * unknown members are refused, then the first required row (in table
 * order) that is missing. admit may be NULL when no row is restricted.
 * 0, or -1 with err set. */
int field_read_object(const json_t *v, const field_ref *at, const field_spec *spec, size_t n,
                      void *ctx, field_admit_fn admit, compactd_error *err);

/* A member no row of the table names (name, its value v at at), handed to
 * the object being decoded: 0, or -1 with err set. */
typedef int (*field_other_fn)(void *ctx, const char *name, const json_t *v, const field_ref *at,
                              compactd_error *err);

/* field_read_object() for an object that may carry members compactd does
 * not interpret (a provider's message): each goes to other instead of
 * being refused. */
int field_read_object_open(const json_t *v, const field_ref *at, const field_spec *spec, size_t n,
                           void *ctx, field_admit_fn admit, field_other_fn other,
                           compactd_error *err);

/* The number of entries of a field table. */
#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* v's string when v is a string with no NUL in it, else NULL: for a value
 * that must be one of a set of names (a role, a type, a method), so that
 * "user\u0000x" is no name rather than "user". Borrowed from v. */
const char *json_name(const json_t *v);

/* How an error message names the kind of a JSON value: "an object", "a
 * string", "a non-integer number", ... Static strings. */
const char *json_type_name(const json_t *v);

#endif
