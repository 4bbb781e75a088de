/* The history an answer renders, in its order (chat_output.c). */
#ifndef COMPACTD_CHAT_OUTPUT_H
#define COMPACTD_CHAT_OUTPUT_H

#include "chat_codec.h"

/* Called for each kept message i with the markers appended to it (extra),
 * or for a marker of its own (standalone, i == SIZE_MAX). */
typedef void (*chat_emit_fn)(void *ctx, const chat_input *in, const chat_plan *p, size_t i,
                             const chat_marker *standalone, const chat_marker *const *extra,
                             size_t n_extra);

/* Walks the output history in order: each kept message with the markers
 * appended to it, and each standalone marker. Markers come in order of
 * position (runs never overlap). */
void chat_output_walk(const chat_input *in, const chat_plan *p, chat_emit_fn emit, void *ctx);

#endif
