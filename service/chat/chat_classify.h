/* Which class each message of a chat history takes, and which messages
 * travel together: the defaults (stated constraints, assistant prose and the
 * turn in flight are protected; an exchange calling a tool with side effects
 * is protected, one calling read-only tools derivable, and a superseded one
 * redundant), the request's policy, compactd's own markers and pointers fed
 * back (chat_own.h), then its annotations, then the group rule (within a
 * tool exchange the strongest class wins). */
#ifndef COMPACTD_CHAT_CLASSIFY_H
#define COMPACTD_CHAT_CLASSIFY_H

#include "chat.h"

/* Arguments longer than this are cut in a re-acquire hint (on a character
 * boundary, followed by "..."): a hint names the call, it need not carry a
 * file's worth of arguments into a loss marker. */
#define CHAT_HINT_ARGS_MAX 256

typedef struct {
    unit_class *cls; /* effective class of each message */
    size_t *owner;   /* first message of the tool exchange it belongs to, or SIZE_MAX */
    /* Of each message: its re-acquire hint, the read-only calls its exchange
     * would make again; and the calls of its exchange that must not run again
     * ("name (id)"). len 0: none. Borrowed from buf or req. */
    chat_str *hint;
    chat_str *ran;
    /* The lists of the marker at the end of a message (chat_message's
     * tail_marker), which a marker placed there or standing for it takes. */
    chat_str *tail_hint, *tail_ran;
    unsigned char *own; /* chat_own_kind of each message */
    /* Narration kept apart from what it calls: an assistant message whose
     * prose is all that protects a read-only exchange leaves the exchange
     * (protected, in no group) and the rest of it is planned on its own.
     * Of such a message that makes the calls itself (every format but
     * Responses, where prose is an item of its own): the first message of
     * the rest, the results; while they are dropped, the message is
     * rendered without its calls. In Responses, of the reasoning that led
     * to the narration and the calls (chat_leads_calls()): the same, and
     * it is sent while they are kept; and of the narration after it, which
     * goes without its id while they are dropped. SIZE_MAX for every other
     * message. */
    size_t *calls_with;
    char *buf;
} chat_classes;

/* Classifies req's messages into out. Returns 0, or -1 when out of memory.
 * Either way release out with chat_classes_free(). */
int chat_classify(const chat_request *req, chat_classes *out);
void chat_classes_free(chat_classes *c);

/* Whether m is an assistant message with text of its own (prose): a
 * payload that is not a call's arguments. */
int chat_has_prose(const chat_message *m);

/* Whether message i is reasoning that goes with the calls it led to while
 * the narration between stays (chat_classes.calls_with): a unit of no
 * tokens of its own, priced with the calls' results and sent while they
 * are kept. */
static inline int chat_leads_calls(const chat_request *req, const chat_classes *c, size_t i)
{
    return c->calls_with[i] != SIZE_MAX && req->m[i].sealed_state;
}

/* The strongest of two classes: protected > derivable > redundant. */
static inline unit_class chat_stronger(unit_class a, unit_class b)
{
    return a < b ? a : b;
}

#endif
