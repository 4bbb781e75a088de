/* The sessions' last chat plans, kept in this process so that a session's
 * next compaction can start from its last one (sticky plans, sticky_plan.h).
 * Bounded by bytes, the least recently used plan going first. A session
 * that another compactd planned last, or that this one forgot or was
 * restarted since, is planned fresh once and is sticky again from then on:
 * the plans are a cache, never the record (the decision log is). Safe
 * from any thread. */
#ifndef COMPACTD_PLAN_MEMORY_H
#define COMPACTD_PLAN_MEMORY_H

#include "chat.h"

#include <stddef.h>

/* The default bound (COMPACTD_STICKY_PLANS_BYTES's), and how to set
 * another (0 keeps no plan: every plan is fresh). */
#define PLAN_MEMORY_DEFAULT_BYTES ((size_t)64 << 20)
void plan_memory_configure(size_t max_bytes);

/* A copy of the plan last kept for session ns in this format under this
 * tokenizer into out (release it with chat_prior_free()). Returns 1, 0
 * when there is none, -1 when out of memory. */
int plan_memory_get(const char *ns, const char *format, const char *encoding, chat_prior *out);

/* Whether plans are kept at all (a bound above 0). */
int plan_memory_keeps(void);

/* Keeps pr (copied) as session ns's last plan, in place of any other. A
 * plan that cannot be kept (out of memory, over the bound) is not: the
 * next compaction is then planned fresh. */
void plan_memory_put(const char *ns, const char *format, const char *encoding,
                     const chat_prior *pr);

/* Forgets session ns's plan (its session was deleted). */
void plan_memory_forget(const char *ns);

/* The plans kept and their bytes, for /metrics. */
void plan_memory_stats(size_t *plans, size_t *bytes);

#endif
