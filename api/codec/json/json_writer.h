/* A streaming JSON writer into one growing buffer: responses are written
 * once, in order, with no tree of values and no copy of the request's texts.
 * Commas are placed by the writer, which tracks nesting. */
#ifndef COMPACTD_JSON_WRITER_H
#define COMPACTD_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define JW_MAX_DEPTH 16

typedef struct {
    char *buf;
    size_t len;
    size_t cap;
    int oom; /* sticky: once set (out of memory, or refused), every call is a no-op */
    int depth;
    int after_member;                  /* a member name was written; its value comes next */
    unsigned char first[JW_MAX_DEPTH]; /* no member written yet at this depth */
} jw;

/* Starts an empty document with room for about cap_hint bytes. */
void jw_init(jw *w, size_t cap_hint);

/* Takes the buffer: returns the NUL-terminated document (the caller frees
 * it with free()) and its length in *len, or NULL when memory ran out or
 * the answer account refused the bytes (answer_account.h; the buffer is
 * then already freed). Room past 64 KiB that the document does not use
 * is given back; the rest stays counted in the account of the request
 * until its answer has been sent. */
char *jw_finish(jw *w, size_t *len);

/* Frees the buffer and gives its bytes back to the answer account. */
void jw_discard(jw *w);

/* A point of a document to come back to (jw_rewind()). */
typedef struct {
    size_t len;
    int depth, after_member;
    unsigned char first[JW_MAX_DEPTH];
} jw_mark;

jw_mark jw_mark_here(const jw *w);

/* Drops what was written since m, and a refusal or failure since with it
 * (the buffer is what it was, only perhaps larger): for a writer that
 * writes one part of a document in place and puts an error in its stead
 * when the part does not fit. A writer that never had a buffer stays
 * failed. */
void jw_rewind(jw *w, const jw_mark *m);

/* Makes room for more bytes: 0, or -1 when memory or the answer account
 * cannot hold them; the writer is then unchanged (not failed). */
int jw_try_reserve(jw *w, size_t more);

void jw_object_open(jw *w);
void jw_object_close(jw *w);
void jw_array_open(jw *w);
void jw_array_close(jw *w);

/* Starts a member of the current object, its name name[0..len); follow
 * with one value. */
void jw_member_n(jw *w, const char *name, size_t len);

/* jw_member_n() for a name known to hold nothing to escape: compactd's
 * own names, written as literals. */
void jw_member_plain(jw *w, const char *name, size_t len);

/* The same for a NUL-terminated name: inline, so that a literal's length
 * is known where it is written, and a literal (every name compactd
 * writes, a member name or more per unit of every answer) is not scanned
 * for escapes at run time. */
static inline void jw_member(jw *w, const char *name)
{
#if defined(__GNUC__)
    if (__builtin_constant_p(strlen(name))) {
        jw_member_plain(w, name, strlen(name));
        return;
    }
#endif
    jw_member_n(w, name, strlen(name));
}

/* Values: inside an array each one is an element. */
void jw_string(jw *w, const char *s, size_t len);
void jw_cstring(jw *w, const char *s);
void jw_int(jw *w, int64_t v);
void jw_bool(jw *w, int v);
void jw_null(jw *w);
void jw_double(jw *w, double v);

/* A value that is already a JSON document (one compactd wrote itself). */
void jw_raw(jw *w, const char *json, size_t len);
/* Appends len bytes as they are, with no separator: for text a document
 * is only part of (server-sent events). */
void jw_append(jw *w, const char *s, size_t len);

/* Adds the members of obj, a JSON object compactd wrote itself ("{...}"),
 * to the object being written. */
void jw_members_raw(jw *w, const char *obj, size_t len);

/* Shorthands for a member and its value. */
static inline void jw_member_string(jw *w, const char *name, const char *s, size_t len)
{
    jw_member(w, name);
    jw_string(w, s, len);
}

static inline void jw_member_cstring(jw *w, const char *name, const char *s)
{
    jw_member(w, name);
    jw_cstring(w, s);
}

static inline void jw_member_int(jw *w, const char *name, int64_t v)
{
    jw_member(w, name);
    jw_int(w, v);
}

#endif
