/* The outcomes' one table (service/outcome.c): every outcome has a name,
 * names are distinct and lower-case snake_case (they are Prometheus label
 * values and JSON strings as they are), and the ones the metrics, the
 * access log and the decision log already report keep their spelling. */
#include "check.h"
#include "outcome.h"

#include <string.h>

int main(void)
{
    check(strcmp(outcome_name(OUTCOME_NONE), "") == 0, "OUTCOME_NONE has no name");
    for (int o = OUTCOME_NONE + 1; o < OUTCOMES; o++) {
        const char *name = outcome_name((call_outcome)o);
        check(name[0] != '\0', "outcome %d has a name", o);
        check(strspn(name, "abcdefghijklmnopqrstuvwxyz_") == strlen(name), "'%s' is snake_case",
              name);
        for (int p = OUTCOME_NONE + 1; p < o; p++)
            check(strcmp(name, outcome_name((call_outcome)p)) != 0, "'%s' is named twice", name);
    }
    static const struct {
        call_outcome o;
        const char *name;
    } reported[] = {
        {OUTCOME_OK, "ok"},
        {OUTCOME_FAILURE, "failure"},
        {OUTCOME_INVALID, "invalid"},
        {OUTCOME_STORE_UNAVAILABLE, "store_unavailable"},
        {OUTCOME_SAFE, "safe"},
        {OUTCOME_SILENT_TRUNCATION, "silent_truncation"},
        {OUTCOME_REPAIRED, "repaired"},
        {OUTCOME_ERROR, "error"},
        {OUTCOME_TOOL_ERROR, "tool_error"},
    };
    check(sizeof(reported) / sizeof(reported[0]) == OUTCOMES - 1, "every outcome is listed here");
    for (size_t i = 0; i < sizeof(reported) / sizeof(reported[0]); i++)
        check(strcmp(outcome_name(reported[i].o), reported[i].name) == 0, "%s: got '%s'",
              reported[i].name, outcome_name(reported[i].o));
    return check_done("outcome_cases");
}
