/* What floor.c calls, in the builds that link a floor of their own, to do a
 * floor's work on each POST body instead of the JSON parse (floor_parse: the
 * simdjson floors in floor_parse.cpp). The HTTP side stays floor.c's, so
 * every floor reads its bodies and answers alike. */
#ifndef COMPACTD_BENCH_FLOOR_HOOK_H
#define COMPACTD_BENCH_FLOOR_HOOK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes floor.c keeps allocated and readable past the end of every body:
 * simdjson reads up to 64 bytes beyond the input. */
#define FLOOR_HOOK_PADDING 64

enum { FLOOR_HOOK_OK = 0, FLOOR_HOOK_BAD_BODY = 1, FLOOR_HOOK_UNAVAILABLE = 2 };

/* Takes a command-line option the floor itself does not know: returns 1
 * when name (with value, which may be NULL at the end of argv) was its own
 * and used both, 0 when it is not the hook's, -1 when its value is bad. */
int floor_hook_option(const char *name, const char *value);

/* A word for the log line: which floor this is. */
const char *floor_hook_name(void);

/* Does the floor's work on one body of len bytes (FLOOR_HOOK_PADDING more
 * are readable) sent to url. Called on libmicrohttpd's threads, several at
 * once. Returns one of FLOOR_HOOK_*. */
int floor_hook_body(const char *url, const char *body, size_t len);

#ifdef __cplusplus
}
#endif

#endif
