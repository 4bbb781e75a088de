/* compactd's own output recognised in a history it is sent back: the loss
 * markers it wrote and the messages it externalized behind a pointer. A
 * caller that feeds an answer back as the next request gets the same
 * marker and the same pointer again, never a marker about a marker or a
 * pointer to a pointer. Pure. */
#ifndef COMPACTD_CHAT_OWN_H
#define COMPACTD_CHAT_OWN_H

#include "chat.h"

/* The loss marker's grammar, written by loss_markers.c and read back here:
 *   [compactd: message 7 was dropped to fit the token budget.
 *    Re-acquire before relying on them: read_file {...}; grep {...}.
 *    Already ran, not to be run again (results not kept): write_file (call_3)]
 * (one line), or "... were dropped as redundant]". */
#define CHAT_MARKER_OPEN "[compactd: message"
#define CHAT_MARKER_ONE CHAT_MARKER_OPEN " %zu was dropped"
#define CHAT_MARKER_RUN CHAT_MARKER_OPEN "s %zu-%zu were dropped"
#define CHAT_MARKER_LOST " to fit the token budget"
#define CHAT_MARKER_REDUNDANT " as redundant]"
#define CHAT_MARKER_REACQUIRE ". Re-acquire before relying on them: "
#define CHAT_MARKER_RAN ". Already ran, not to be run again (results not kept): "
#define CHAT_MARKER_NO_HINT "; no re-acquire hint was given"

typedef enum { CHAT_OWN_NONE = 0, CHAT_OWN_MARKER, CHAT_OWN_POINTER } chat_own_kind;

/* What message m is: one of compactd's loss markers (a message whose one
 * text is a marker, no calls, no results), a message compactd externalized
 * (every text is the same pointer, or {"compactd": "<pointer>"} where a
 * tool call's arguments were; narration's calls keep their arguments), or
 * neither. */
chat_own_kind chat_own_kind_of(const chat_message *m);

/* The pointer in a pointer message's text t: t itself, or the one its
 * {"compactd": ...} carrier holds. Returns whether t is either. */
int chat_own_pointer_of(chat_str t, chat_str *pointer);

/* Whether text is a loss marker compactd wrote. */
int chat_own_is_marker(chat_str text);

/* The two lists of a marker's text: its re-acquire hints and the calls it
 * says already ran ("" when it has none). Borrowed from text. */
void chat_own_marker_lists(chat_str text, chat_str *reacquire, chat_str *ran);

/* The same for a text of one or more markers, one a line (the markers
 * appended to one turn): for one, borrowed from text; for more, each list
 * the markers' own joined by "; ", written into buf, which has room for
 * CHAT_OWN_LISTS_ROOM(text.len) bytes. Returns the bytes of buf used. */
#define CHAT_OWN_LISTS_ROOM(len) (2 * (len) + 8)
size_t chat_own_marker_lists_all(chat_str text, char *buf, chat_str *reacquire, chat_str *ran);

#endif
