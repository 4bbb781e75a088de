/* One compaction end to end: plan the units, name the externalized texts by
 * digest, and write their spills (with the decision-log entry) to the store
 * before anything is acknowledged. */
#ifndef COMPACTD_COMPACTION_H
#define COMPACTD_COMPACTION_H

#include "error.h"
#include "plan.h"
#include "sha256.h"
#include "store.h"

typedef struct {
    int64_t budget;
    plan_mode mode;
    int dry_run;
    plan_unit *units; /* borrowed */
    size_t n;
} compaction_request;

typedef struct {
    plan_result plan;
    /* Digest of each externalized unit's text, in request order: the k-th
     * externalized unit's digest is ext_sha256[k]. */
    char (*ext_sha256)[SHA256_HEX_LEN + 1];
    char created_at[32];
} compaction;

/* Plans req into out. Returns 0; or -1 with err set: CompactionFailure when
 * the protected units cannot fit even as pointers (out->plan then names the
 * unit and the required budget), Internal when out of memory. Either way the
 * caller releases out with compaction_free(). Writes nothing. */
int compaction_plan(const compaction_request *req, compaction *out, compactd_error *err);

/* Writes the spills of a planned compaction and the event (may be NULL) in
 * one transaction; does nothing for a dry run. ns is "tenant:session".
 * Returns 0, or -1 with StoreUnavailable (nothing acknowledged). */
int compaction_commit(store *st, const char *ns, const compaction_request *req, const compaction *c,
                      const char *event, size_t event_len, compactd_error *err);

void compaction_free(compaction *c);

/* Writes the current UTC time as "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf. */
void compaction_timestamp(char buf[32]);

#endif
