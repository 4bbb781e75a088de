/* What a call came to, named once: the metrics count calls by it, the
 * access log reports it, and a decision-log entry records it. The
 * operations (ops.h) set it, the fronts set OUTCOME_INVALID for a request
 * they refused before any operation ran, and the MCP server counts each
 * JSON-RPC message by it. */
#ifndef COMPACTD_OUTCOME_H
#define COMPACTD_OUTCOME_H

typedef enum {
    OUTCOME_NONE = 0,          /* the call counts as none: nothing is reported */
    OUTCOME_OK,                /* done as asked */
    OUTCOME_FAILURE,           /* refused: the protected units cannot fit (CompactionFailure) */
    OUTCOME_INVALID,           /* refused as it was sent: nothing ran */
    OUTCOME_STORE_UNAVAILABLE, /* the store did not answer */
    OUTCOME_SAFE,              /* an audit found every protected unit */
    OUTCOME_SILENT_TRUNCATION, /* an audit found protected units missing */
    OUTCOME_REPAIRED,          /* ... and planned their repair (an audit's log entry) */
    OUTCOME_ERROR,             /* an MCP message answered with a JSON-RPC error */
    OUTCOME_TOOL_ERROR,        /* an MCP tool call answered with isError */
    OUTCOMES
} call_outcome;

/* The name o is reported by ("ok", "silent_truncation", ...): static, never
 * NULL; "" for OUTCOME_NONE. */
const char *outcome_name(call_outcome o);

#endif
