/* The decision-log writes the operations share: entries whose loss does not
 * change the answer, and the report of one that was lost. */
#include "ops_log.h"

#include "log_line.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_uint_fast64_t lost;

uint64_t ops_log_lost_count(void)
{
    return atomic_load_explicit(&lost, memory_order_relaxed);
}

void ops_log_lost(const ops_scope *s, const compactd_error *err)
{
    atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
    log_line(LOG_WARN, "decision log entry for session %s not written: %s", s->session,
             err->message);
}

void ops_log_best_effort(const ops_scope *s, char *event, size_t len)
{
    compactd_error err = {ERR_INTERNAL, "out of memory", ""};
    if (!event || session_log_append(s->ns, event, len, &err) != 0)
        ops_log_lost(s, &err);
    free(event);
}
