/* One compaction end to end, whatever format the request came in: the
 * format-neutral request every decoder produces, the plan made of it, and
 * the commit that makes the plan durable before it is answered. */
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
 * with ERR_CONFLICT (409), nothing written: so a key is checked, and held,
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
