/* The account an answer is built against: while a request's handler runs,
 * every byte a JSON writer (json_writer.c) allocates for it is taken from
 * the account bound to the handler's thread before it is allocated, so that
 * an answer that would pass what the request may hold is refused instead
 * of built. The HTTP front binds an account per request (http_pool.c);
 * without one, every take succeeds. */
#ifndef COMPACTD_ANSWER_ACCOUNT_H
#define COMPACTD_ANSWER_ACCOUNT_H

#include <stddef.h>

/* Why a take was refused. */
typedef enum {
    ANSWER_OK = 0,
    ANSWER_TOO_LARGE, /* past what one client may hold (COMPACTD_MAX_CLIENT_INFLIGHT_BYTES) */
    ANSWER_OVERLOADED /* the server's budget is full (COMPACTD_MAX_INFLIGHT_BYTES) */
} answer_refusal;

typedef struct {
    /* ANSWER_OK when n more bytes may be held (they are then counted), else
     * why not (nothing counted). With force, counts them whatever the
     * limits say and returns ANSWER_OK. */
    answer_refusal (*take)(void *cls, size_t n, int force);
    void (*give)(void *cls, size_t n);
    void *cls;
    answer_refusal refused; /* the first refusal since answer_clear_refusal() */
    size_t taken;           /* taken and not given back, forced takes included */
    int lenient;            /* takes are counted and never refused (small error answers) */
    size_t limit;           /* what one request may hold in all, its body included */
} answer_account;

/* Whether n more bytes fit in limit beside the held bytes one request
 * already holds (its body and what it took): the rule a take past one
 * client's share is refused by (ANSWER_TOO_LARGE), and the one a caller
 * asks in advance whether a later answer could be given. */
static inline int answer_fits(size_t limit, size_t held, size_t n)
{
    return n <= limit && held <= limit - n;
}

/* Binds account to the calling thread (NULL unbinds). Borrowed: the
 * account must outlive the binding. */
void answer_bind(answer_account *account);

/* Takes n bytes from the thread's account: ANSWER_OK, or why not (nothing
 * taken, nothing recorded: the caller may try for less). */
answer_refusal answer_take(size_t n);

/* Records that an answer was refused, for why (the first refusal stays). */
void answer_refuse(answer_refusal why);

/* Gives back n bytes taken earlier on this thread. */
void answer_give(size_t n);

/* The account bound to the thread, or NULL: only to be compared, so that
 * bytes taken are given back to the account they came from. */
const answer_account *answer_current(void);

/* The limit of the thread's account (SIZE_MAX without one). */
size_t answer_limit(void);

/* Bytes the thread's account holds now (0 without one). */
size_t answer_taken(void);

/* Gives back all the account holds beyond keep bytes: for a caller that
 * knows that only keep bytes of what its callees took are still allocated
 * (buffers they freed without giving back). */
void answer_settle(size_t keep);

/* The first refusal since the last answer_clear_refusal() (ANSWER_OK: none). */
answer_refusal answer_refused(void);
void answer_clear_refusal(void);

/* While set, takes are counted and never refused: for the few bytes of the
 * error that stands in for a refused answer. Returns the previous setting. */
int answer_set_lenient(int lenient);

/* What the front that will send this thread's answer holds beyond the
 * answer itself while it wraps it (an envelope, copies): so that a
 * compaction's answer is known to be sendable before it commits. NULL (the
 * default): the answer is sent as it is. Returns the previous setting. */
typedef size_t (*answer_front_fn)(const char *body, size_t len);
answer_front_fn answer_set_front(answer_front_fn f);
/* The bytes the current front adds to body (0 without one). */
size_t answer_front_extra(const char *body, size_t len);

#endif
