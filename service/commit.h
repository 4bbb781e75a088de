/* The commit: a planned compaction made durable, by the commit policy,
 * before it is answered. */
#ifndef COMPACTD_COMMIT_H
#define COMPACTD_COMMIT_H

#include "compaction.h"
#include "error.h"

#include <stddef.h>

/* How a commit went, when it did not fail. */
typedef enum {
    COMMIT_DONE = 0,    /* everything the plan needs is written (or nothing was needed) */
    COMMIT_LOG_LOST = 1 /* the plan stands, but its log entry was not written: err says why */
} commit_outcome;

/* Makes a planned compaction durable, by the commit policy: a dry run
 * writes nothing; a plan with spills, or with an Idempotency-Key
 * (idempotency_key not NULL), writes them and event (may be NULL) in one
 * transaction and waits for it; a plan without either sends event without
 * waiting (it is read before the connection's next command), so the answer
 * costs no round trip and stands without the store. ns is
 * "tenant:session". Returns a commit_outcome, or -1 with StoreUnavailable
 * (or Internal) when spills are not acknowledged. A plan without spills
 * stands without the store: COMMIT_LOG_LOST when its entry could not be
 * written (dropped, or with a key refused by a Redis that wrote nothing);
 * -1 only when a keyed one's outcome is unknown or short of replicas.
 *
 * A commit that waits is named, deterministically, for what it writes
 * (ns, the budget, the units' count, each spill's key and digest) and, when
 * idempotency_key is not NULL, for ns and that key too: sent again after a
 * lost answer or a 503, it writes no second log entry
 * (store_commit_keyed()); without a key only right after itself, with one
 * even after other commits. The same key with other content is refused
 * with ERR_KEY_REUSED, nothing written: so a key is checked, and held,
 * whether its compaction spills or not. */
int compaction_commit(const char *ns, const char *idempotency_key, const compaction_request *req,
                      const compaction *c, const char *event, size_t event_len,
                      compactd_error *err);

/* 1 when compaction_commit() of plan c (with an entry to log when
 * has_event, under idempotency_key or NULL) would wait on Redis: its
 * spills or its key are acknowledged, or the store awaits a log entry's
 * answer. 0 when it never waits: a front that must not wait on Redis can
 * commit it where it runs. */
int compaction_commit_waits(const compaction_request *req, const compaction *c, int has_event,
                            const char *idempotency_key);

#endif
