/* How the operations write their decision-log entries: private to the
 * operations (service/ops_*.c). */
#ifndef COMPACTD_OPS_LOG_H
#define COMPACTD_OPS_LOG_H

#include "ops.h"

/* Appends an entry whose answer does not depend on it (a refusal is
 * answered either way, a read is answered before it is logged): a failure
 * is only reported on stderr. Frees event (NULL: out of memory, reported). */
void ops_log_best_effort(const ops_scope *s, char *event, size_t len);

/* Reports on stderr that the session's entry was not written and why, and
 * counts it (ops_log_lost_count()). */
void ops_log_lost(const ops_scope *s, const compactd_error *err);

#endif
