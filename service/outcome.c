/* The names outcomes are reported by: the one table of them. */
#include "outcome.h"

#include <assert.h>

static const char *const names[OUTCOMES] = {
    [OUTCOME_NONE] = "",
    [OUTCOME_OK] = "ok",
    [OUTCOME_FAILURE] = "failure",
    [OUTCOME_INVALID] = "invalid",
    [OUTCOME_STORE_UNAVAILABLE] = "store_unavailable",
    [OUTCOME_SAFE] = "safe",
    [OUTCOME_SILENT_TRUNCATION] = "silent_truncation",
    [OUTCOME_REPAIRED] = "repaired",
    [OUTCOME_ERROR] = "error",
    [OUTCOME_TOOL_ERROR] = "tool_error",
};

const char *outcome_name(call_outcome o)
{
    assert(o >= OUTCOME_NONE && o < OUTCOMES && names[o]);
    return names[o];
}
