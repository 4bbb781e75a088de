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
 * writes nothing; a plan with spills writes them and event (may be NULL)
 * in one transaction and waits for it; a plan without spills sends event
 * without waiting (it is read before the connection's next command), so
 * the answer costs no round trip and stands without the store. ns is
 * "tenant:session". Returns a commit_outcome, or -1 with StoreUnavailable
 * (or Internal) when spills were needed and are not acknowledged.
 *
 * A commit with spills is named, deterministically, for what it writes
 * (ns, the budget, the units' count, each spill's key and digest) and, when
 * idempotency_key is not NULL (a client's Idempotency-Key), for ns and that
 * key too: sent again after a lost answer or a 503, it writes no second log
 * entry (store_commit_keyed()); without a key only right after itself,
 * with one even after other commits. The same key with other content is
 * refused with ERR_CONFLICT (409), nothing written. */
int compaction_commit(const char *ns, const char *idempotency_key, const compaction_request *req,
                      const compaction *c, const char *event, size_t event_len,
                      compactd_error *err);

/* 1 when compaction_commit() of plan c (with an entry to log when
 * has_event) would wait on Redis: its spills are acknowledged, or the
 * store awaits a log entry's answer. 0 when it never waits: a front that
 * must not wait on Redis can commit it where it runs. */
int compaction_commit_waits(const compaction_request *req, const compaction *c, int has_event);

#endif
