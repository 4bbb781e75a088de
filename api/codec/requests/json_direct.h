/* The compact route's body read straight into the typed request: one pass
 * over the bytes, no tree, no field tables. It takes only what it is sure
 * the tree path (json_decode.c) would accept into the same request, and
 * gives up on anything else, unusual or wrong, without a word: the tree
 * path then decodes the body and words every error as it always has.
 * direct_cases holds it to that with the tree path as its oracle. */
#ifndef COMPACTD_JSON_DIRECT_H
#define COMPACTD_JSON_DIRECT_H

#include "json_decode.h"

enum { DIRECT_TAKEN = 0, DIRECT_GAVE_UP = 1 };

/* Decodes body[0..len) into in (prepared here) as json_decode_compact()
 * would. Returns DIRECT_TAKEN: in holds the request, its strings copied
 * into in->strings, and the price of the tree the other path would have
 * built held from the thread's answer account, as that path holds it;
 * release with compact_input_free(). DIRECT_GAVE_UP when it does not take
 * the body: in holds nothing, no error is set, nothing is held. -1 when
 * memory ran out: in holds nothing, err says Internal (the tree path,
 * which needs more, is not worth trying). */
int json_direct_compact(const char *body, size_t len, const decode_limits *lim, compact_input *in,
                        compactd_error *err);

#endif
