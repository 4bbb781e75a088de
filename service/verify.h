/* The truncation audit: does a compacted context still carry every
 * protected unit, verbatim or behind a pointer that still resolves? And if
 * not, what is the cheapest repair within the budget that is left? */
#ifndef COMPACTD_VERIFY_H
#define COMPACTD_VERIFY_H

#include "compaction.h"
#include "error.h"
#include "plan.h"
#include "sha256.h"

typedef enum { FOUND_VERBATIM = 0, FOUND_POINTER, FOUND_MISSING } verify_found;

typedef struct {
    const char *context; /* borrowed */
    size_t context_len;
    const plan_unit *units;    /* protected units, borrowed */
    const unit_detail *detail; /* one per unit, borrowed */
    size_t n;
    int repair; /* plan a repair within budget - context_tokens */
    int64_t budget;
    int64_t context_tokens;
    int dry_run;
    const tokenizer *tokenizer; /* prices the repair; never NULL */
} verify_request;

typedef struct {
    verify_found *found;                /* one per unit */
    char (*sha256)[SHA256_HEX_LEN + 1]; /* one per unit */
    size_t n_missing;
    /* The repair, when asked for and something is missing: the missing
     * units in request order (repair_req.units), planned as a compaction of
     * their own. */
    size_t *missing_index; /* index in the request of each missing unit */
    compaction_request repair_req;
    compaction repair;
    int has_repair;
} verify_result;

/* Finds each unit in the context in one pass over it (Aho-Corasick over the
 * units' texts and pointers), confirms in the store that each pointer found
 * still resolves, and plans the repair if asked. Writes nothing. Returns 0;
 * or -1 with err set: StoreUnavailable, Internal, or CompactionFailure when
 * the repair cannot fit (out->repair.plan then names the unit). The caller
 * releases out with verify_result_free() either way. */
int verify_run(const char *ns, const verify_request *req, verify_result *out, compactd_error *err);

/* Makes the audit's outcome durable: the repair's spills and the event (may
 * be NULL) in one transaction, waited for; for a dry run or a result
 * without spills, only the event, whose loss does not change the answer.
 * Returns a commit_outcome (compaction.h), or -1 with StoreUnavailable when
 * repair spills are not acknowledged. */
int verify_commit(const char *ns, const verify_result *r, const char *event, size_t event_len,
                  compactd_error *err);

void verify_result_free(verify_result *r);

#endif
