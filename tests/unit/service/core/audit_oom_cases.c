/* Out of memory: acmatch_new(), identifiers_lost() and plan_run() are run
 * with their k-th allocation failing, for every k, until a run sees no injected failure (which
 * every loop must reach). They must report the failure (or,
 * where only a shrinking realloc failed, still be right) and leak nothing,
 * which the sanitizer build's leak check verifies. malloc, calloc and
 * realloc are wrapped at link time (-Wl,--wrap). */
#include "acmatch.h"
#include "check.h"
#include "oom.h"
#include "identifiers.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* ---- acmatch ---- */

static int matcher_right(const acmatch *m)
{
    unsigned char found[5];
    acmatch_scan(m, "say hello there, shelly", 23, found);
    return found[0] && found[1] && !found[2] && found[3] && found[4];
}

static void acmatch_oom(void)
{
    /* Shared prefixes, a tail, a duplicate and an empty pattern: every
     * allocation site is reached. */
    static const acmatch_pattern pats[] = {
        {"hello", 5}, {"he", 2}, {"help me", 7}, {"", 0}, {"he", 2},
    };
    long k;
    int clean = 0;
    for (k = 0; k < OOM_MAX_SITES; k++) {
        arm(k);
        acmatch *m = acmatch_new(pats, 5);
        disarm();
        if (!injected) {
            clean = 1;
            check(m && matcher_right(m), "acmatch: builds once allocations succeed");
            acmatch_free(m);
            break;
        }
        if (m) {
            check(matcher_right(m), "acmatch: right despite failing allocation %ld", k);
            acmatch_free(m);
        }
    }
    check(clean, "acmatch: no run without an injected failure in %ld", k);
    check(k > 3, "acmatch: %ld allocation sites exercised", k);
}

/* ---- identifiers ---- */

static void identifiers_oom(void)
{
    static const char text[] = "wrote /srv/a.conf with retries=3 in 30s, see https://x.io/b";
    static const char summary[] = "wrote /srv/a.conf";
    long k;
    int clean = 0;
    for (k = 0; k < OOM_MAX_SITES; k++) {
        identifiers_result r;
        arm(k);
        int rc = identifiers_lost(text, sizeof(text) - 1, summary, sizeof(summary) - 1, &r);
        disarm();
        if (!injected) {
            clean = 1;
            check(rc == 0 && r.n == 3 && r.total == 3,
                  "identifiers: right once allocations "
                  "succeed (rc %d, n %zu)",
                  rc, r.n);
            break;
        }
        check(rc == -1 ? r.n == 0 && r.total == 0 : r.n == 3,
              "identifiers: failing allocation %ld gives rc %d, n %zu", k, rc, r.n);
    }
    check(clean, "identifiers: no run without an injected failure in %ld", k);
    check(k > 3, "identifiers: %ld allocation sites exercised", k);
}

/* ---- planner ---- */

static void planner_oom(void)
{
    /* Protected units to externalize and a group of derivable units: every
     * allocation of plan_run() is reached. */
    plan_unit u[5] = {
        {.key = "a",
         .key_len = 1,
         .cls = UNIT_PROTECTED,
         .tokens = 90,
         .pointer_tokens = 40,
         .has_text = 1,
         .text = "a",
         .text_len = 1},
        {.key = "b",
         .key_len = 1,
         .cls = UNIT_PROTECTED,
         .tokens = 30,
         .pointer_tokens = 40,
         .has_text = 1,
         .text = "b",
         .text_len = 1},
        {.key = "c",
         .key_len = 1,
         .cls = UNIT_DERIVABLE,
         .tokens = 20,
         .group = "g",
         .group_len = 1},
        {.key = "d",
         .key_len = 1,
         .cls = UNIT_DERIVABLE,
         .tokens = 10,
         .group = "g",
         .group_len = 1},
        {.key = "e", .key_len = 1, .cls = UNIT_REDUNDANT, .tokens = 5},
    };
    long k;
    int clean = 0;
    for (k = 0; k < OOM_MAX_SITES; k++) {
        plan_result r;
        arm(k);
        int rc = plan_run(u, 5, 110, PLAN_STRICT, &r);
        disarm();
        if (!injected) {
            clean = 1;
            check(rc == PLAN_OK && r.used_tokens == 100 && r.n_externalized == 1 &&
                      r.entries[0].decision == DECISION_EXTERNALIZED &&
                      r.entries[2].decision == DECISION_PRESERVED,
                  "planner: right once allocations succeed (rc %d, used %lld)", rc,
                  (long long)r.used_tokens);
            plan_result_free(&r);
            break;
        }
        check(rc == PLAN_NOMEM, "planner: failing allocation %ld gives rc %d", k, rc);
        plan_result_free(&r);
    }
    check(clean, "planner: no run without an injected failure in %ld", k);
    check(k >= 3, "planner: %ld allocation sites exercised", k);
}

int main(void)
{
    acmatch_oom();
    identifiers_oom();
    planner_oom();
    return check_done("oom_cases");
}
