/* One compaction, whatever format the request came in: the format-neutral
 * request every decoder produces and the plan made of it (commit.h makes the
 * plan durable before it is answered). Pure. */
#ifndef COMPACTD_COMPACTION_H
#define COMPACTD_COMPACTION_H

#include "error.h"
#include "identifiers.h"
#include "plan.h"
#include "sha256.h"
#include "tokenizer.h"

/* What a unit carries besides what the planner reads: what the answer
 * echoes, and which costs the caller gave (the pricing step fills the
 * others). Strings are borrowed from the decoded request. */
typedef struct {
    int has_tokens;      /* plan_unit.tokens was given */
    const char *summary; /* NULL when the unit has no summary */
    size_t summary_len;
    int has_summary_tokens; /* plan_unit.summary_tokens was given */
    const char *reacquire;  /* NULL when not given */
    size_t reacquire_len;
    /* The caller's metadata about the unit as a JSON object's text (at
     * most UNIT_METADATA_MAX_BYTES), echoed and stored with its spill but
     * never read; NULL when not given. */
    const char *metadata;
    size_t metadata_len;
} unit_detail;

#define UNIT_METADATA_MAX_BYTES 4096
#define UNIT_METADATA_MAX_MEMBERS 8

/* A compaction request. units, detail and sha256 have n entries each and
 * are owned by the request (compaction_request_init()); the strings they
 * point to are borrowed from whoever decoded the request. sha256[i] is the
 * digest of unit i's text, filled by the pricing step for every unit that
 * may be externalized, and empty ("") for the others. */
typedef struct {
    int64_t budget;
    plan_mode mode;
    int dry_run;
    const tokenizer *tokenizer; /* never NULL: the decoders resolve the default */
    plan_unit *units;
    unit_detail *detail;
    char (*sha256)[SHA256_HEX_LEN + 1];
    size_t n;
} compaction_request;

/* Prepares req for n units, every field zero. Returns 0, or -1 when out of
 * memory (then req holds nothing to free). Release with
 * compaction_request_free(). */
int compaction_request_init(compaction_request *req, size_t n);
void compaction_request_free(compaction_request *req);

/* The domain's rules for one unit, whatever format it came in: NULL when u
 * (with detail d) is acceptable; else what is wrong, and in *field the name
 * of the offending field ("text", "summary", ...) for the decoder to turn
 * into a path. */
const char *compaction_unit_problem(const plan_unit *u, const unit_detail *d, const char **field);

typedef struct {
    plan_result plan;
    char created_at[32];
} compaction;

/* Prices req (pricing.h) and plans it into out. Returns 0; or -1 with err
 * set: InvalidRequest when a unit breaks compaction_unit_problem()'s rules,
 * CompactionFailure when the protected units cannot fit even as pointers
 * (out->plan then names the unit and the required budget), Internal when
 * out of memory. Either way the caller releases out with compaction_free().
 * Writes nothing. */
int compaction_plan(compaction_request *req, compaction *out, compactd_error *err);

/* The identifiers of unit i's text that its summary does not carry, for a
 * unit the plan summarized (none for any other): never changes the plan,
 * but tells the caller its summary is weaker than it looks. Returns 0, or
 * -1 when out of memory (then *out is empty). */
int compaction_lost_identifiers(const compaction_request *req, const compaction *c, size_t i,
                                identifiers_result *out);

void compaction_free(compaction *c);

/* Writes the current UTC time as "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf. */
void compaction_timestamp(char buf[32]);

#endif
