/* The pricing step: runs before the planner and fills every cost the
 * planner reads that the caller did not give, through the request's
 * tokenizer, which must be set: the decoders resolve a request that names
 * none to the configured default, and pricing asserts it. The planner sees
 * only costs. */
#ifndef COMPACTD_PRICING_H
#define COMPACTD_PRICING_H

#include "compaction.h"
#include "error.h"

/* Fills, for each unit of req: tokens from its text where they were not
 * given; summary_tokens from its summary where they were not given; and,
 * for each unit the plan may externalize (a protected unit; a derivable
 * unit with text in discovery mode), its pointer's cost and the digest of
 * its text in req->sha256[i] (unless already there). The digest is left
 * out (req->sha256[i] stays "") where the tokenizer counts by length alone,
 * since the pointer then costs the same whatever the digest:
 * pricing_digest_spills() takes it for the units the plan externalizes.
 * Returns 0, or -1 with err set: InvalidRequest when a unit has neither
 * tokens nor text, Internal when the tokenizer ran out of memory. */
int pricing_run(compaction_request *req, compactd_error *err);

/* Fills req->sha256[i] for every unit plan p externalizes that has none
 * yet: the spill's name, which its pointer, the commit and the answer
 * carry. */
void pricing_digest_spills(compaction_request *req, const plan_result *p);

/* Only the first part: tokens and summary_tokens where they were not given
 * (the audit's units, which it reports with their counts). Same errors. */
int pricing_count_tokens(compaction_request *req, compactd_error *err);

#endif
