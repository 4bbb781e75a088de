/* How a Responses item renders in an answer (chat_responses_render.c), and
 * what the renderer asks of the codec's table of item types
 * (chat_responses.c). */
#ifndef COMPACTD_CHAT_RESPONSES_RENDER_H
#define COMPACTD_CHAT_RESPONSES_RENDER_H

#include "chat_codec.h"

/* The member of item v a replaced form carries its text in ("content",
 * "arguments", ...), or NULL for an item with nowhere to carry one. */
const char *chat_responses_payload(const json_t *v);
/* Whether item v is a message item. */
int chat_responses_is_message(const json_t *v);

/* The codec's render functions (chat_codec.h). */
void chat_responses_render_replaced(jw *w, const chat_input *in, size_t i, const char *text,
                                    size_t len, const chat_marker *const *extra, size_t n_extra);
void chat_responses_render_narration(jw *w, const chat_input *in, size_t i, const char *text,
                                     size_t len, int calls);
void chat_responses_render_appended(jw *w, const chat_input *in, size_t i,
                                    const chat_marker *const *extra, size_t n_extra);
void chat_responses_render_marker(jw *w, const chat_marker *mk);

#endif
