/* Table-driven planner cases: each row is a request and the plan the
 * normative rules of the compaction plan give for it. */
#include "check.h"
#include "plan.h"
#include "pointer.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#define MAX_UNITS 8

/* One unit of a case. Every pointer costs pointer_length(key, strlen(key)), so a
 * one-letter key has a 40-token pointer. want is the expected outcome:
 * 'P' preserved, 'S' summarized, 'X' externalized, 'D' dropped over_budget,
 * 'R' dropped redundant, '-' not checked (failed plans). */
typedef struct {
    const char *key;
    unit_class cls;
    int64_t tokens;
    char want;
    int no_text; /* derivable only: the request carries no text */
    int64_t priority;
    const char *group;
    int has_summary;
    int64_t summary_tokens;
} case_unit;

typedef struct {
    const char *name;
    int64_t budget;
    plan_mode mode;
    int rc;
    int64_t used;
    int64_t required;
    int64_t verbatim;
    size_t failed_index;
    case_unit units[MAX_UNITS];
} plan_case;

/* The table is laid out by hand: one request per row group. */
/* clang-format off */
#define PROT(k, t, w) {.key = (k), .cls = UNIT_PROTECTED, .tokens = (t), .want = (w)}
#define RED(k, t) {.key = (k), .cls = UNIT_REDUNDANT, .tokens = (t), .want = 'R'}
#define DER(k, t, w) {.key = (k), .cls = UNIT_DERIVABLE, .tokens = (t), .want = (w)}
#define DERX(k, t, w, ...)                                                                         \
    {.key = (k), .cls = UNIT_DERIVABLE, .tokens = (t), .want = (w), __VA_ARGS__}
#define SUM(n) .has_summary = 1, .summary_tokens = (n)

#define OK(u, r, v) .rc = PLAN_OK, .used = (u), .required = (r), .verbatim = (v)
#define FAILS(at, r, v) .rc = PLAN_FAILED, .failed_index = (at), .required = (r), .verbatim = (v)

static const plan_case cases[] = {
    /* ---- The seed listing's traps ---- */
    {"seed trap: derivable must not take budget before protected", 150, PLAN_STRICT,
     OK(100, 40, 100),
     .units = {DER("a", 100, 'D'), PROT("b", 100, 'P')}},
    {"seed trap: derivable eats the budget, seed fails, a plan exists", 120, PLAN_STRICT,
     OK(100, 40, 100),
     .units = {DER("a", 100, 'D'), PROT("b", 100, 'P')}},
    {"seed trap: in-order placement fails, externalizing the earlier unit fits", 90, PLAN_STRICT,
     OK(85, 80, 100),
     .units = {PROT("a", 55, 'X'), PROT("b", 45, 'P')}},
    {"seed trap: both at once, everything protected fits verbatim", 120, PLAN_STRICT,
     OK(100, 80, 100),
     .units = {DER("d", 30, 'D'), PROT("a", 55, 'P'), PROT("b", 45, 'P')}},
    {"seed trap: leftover after protected goes to derivable (discovery)", 150, PLAN_DISCOVERY,
     OK(140, 40, 100),
     .units = {DER("a", 100, 'X'), PROT("b", 100, 'P')}},

    /* ---- Everything fits ---- */
    {"all fit", 200, PLAN_STRICT,
     OK(170, 40, 100),
     .units = {PROT("a", 100, 'P'), DER("b", 50, 'P'), RED("c", 30), DER("d", 20, 'P')}},
    {"all fit exactly at the budget", 170, PLAN_DISCOVERY,
     OK(170, 40, 100),
     .units = {PROT("a", 100, 'P'), DER("b", 50, 'P'), RED("c", 30), DER("d", 20, 'P')}},
    {"empty request", 0, PLAN_STRICT, OK(0, 0, 0), .units = {{0}}},
    {"a budget below nothing fits no plan, and names no protected unit", -30, PLAN_STRICT,
     FAILS(SIZE_MAX, 0, 0),
     .units = {DER("a", 50, 'D'), RED("b", 30)}},

    /* ---- Protected externalization ---- */
    {"largest saving first, not the earliest", 350, PLAN_STRICT,
     OK(340, 120, 600),
     .units = {PROT("a", 100, 'P'), PROT("b", 300, 'X'), PROT("c", 200, 'P')}},
    {"largest saving first even when a smaller saving would do", 450, PLAN_STRICT,
     OK(340, 120, 600),
     .units = {PROT("a", 100, 'P'), PROT("b", 300, 'X'), PROT("c", 200, 'P')}},
    {"equal savings: earliest first", 250, PLAN_STRICT,
     OK(241, 121, 301),
     .units = {PROT("bb", 101, 'X'), PROT("a", 100, 'P'), PROT("c", 100, 'P')}},
    {"equal savings after the largest: earliest of the tie", 200, PLAN_STRICT,
     OK(180, 120, 500),
     .units = {PROT("a", 100, 'X'), PROT("b", 300, 'X'), PROT("c", 100, 'P')}},
    {"one large saving beats three small ones", 200, PLAN_STRICT,
     OK(190, 160, 225),
     .units = {PROT("a", 50, 'P'), PROT("b", 50, 'P'), PROT("c", 50, 'P'), PROT("d", 75, 'X')}},
    {"exact fit after one externalization stops there", 140, PLAN_STRICT,
     OK(140, 80, 200),
     .units = {PROT("a", 100, 'X'), PROT("b", 100, 'P')}},
    {"every protected unit externalized", 80, PLAN_STRICT,
     OK(80, 80, 200),
     .units = {PROT("a", 100, 'X'), PROT("b", 100, 'X')}},
    {"pointer as large as the unit: never externalized", 80, PLAN_STRICT,
     OK(80, 80, 140),
     .units = {PROT("a", 40, 'P'), PROT("b", 100, 'X')}},
    {"pointer larger than the unit: never externalized", 50, PLAN_STRICT,
     OK(50, 50, 110),
     .units = {PROT("a", 10, 'P'), PROT("b", 100, 'X')}},
    {"long key: 139-token pointer for a 100-token unit stays verbatim", 150, PLAN_STRICT,
     OK(140, 140, 300),
     .units = {PROT("kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
           "kkkkkkkkkkkkkkkk",
           100, 'P'),
      PROT("a", 200, 'X')}},
    {"units below pointer size exactly at the required budget", 60, PLAN_STRICT,
     OK(60, 60, 60),
     .units = {PROT("a", 30, 'P'), PROT("b", 30, 'P')}},
    {"protected externalized, the rest fills derivables", 60, PLAN_STRICT,
     OK(60, 40, 200),
     .units = {PROT("a", 200, 'X'), DER("b", 30, 'D'), DER("c", 20, 'P')}},
    {"protected verbatim leaves nothing for derivables", 100, PLAN_DISCOVERY,
     OK(100, 40, 100),
     .units = {PROT("a", 100, 'P'), DER("b", 1, 'D')}},

    /* ---- CompactionFailure ---- */
    {"failure: cheapest forms exceed the budget", 100, PLAN_STRICT,
     FAILS(2, 120, 300),
     .units = {PROT("a", 100, '-'), PROT("b", 100, '-'), PROT("c", 100, '-')}},
    {"failure names the first unit that overflows, not the last", 50, PLAN_STRICT,
     FAILS(1, 120, 300),
     .units = {PROT("a", 100, '-'), PROT("b", 100, '-'), PROT("c", 100, '-')}},
    {"failure index counts every unit in request order", 70, PLAN_STRICT,
     FAILS(3, 80, 200),
     .units = {RED("r", 10), DER("d", 5, '-'), PROT("a", 100, '-'), PROT("b", 100, '-')}},
    {"failure: units below pointer size alone exceed", 50, PLAN_DISCOVERY,
     FAILS(1, 60, 60),
     .units = {PROT("a", 30, '-'), PROT("b", 30, '-')}},
    {"failure one token short of the required budget", 79, PLAN_STRICT,
     FAILS(1, 80, 200),
     .units = {PROT("a", 100, '-'), PROT("b", 100, '-')}},
    {"failure on the first unit", 39, PLAN_STRICT,
     FAILS(0, 40, 40),
     .units = {PROT("a", 40, '-'), DER("d", 0, '-')}},

    /* ---- Budget 0 ---- */
    {"budget 0: zero-token units fit", 0, PLAN_STRICT,
     OK(0, 0, 0),
     .units = {PROT("a", 0, 'P'), DER("b", 0, 'P'), RED("c", 0), DER("d", 5, 'D')}},
    {"budget 0: a one-token protected unit fails", 0, PLAN_STRICT,
     FAILS(1, 1, 1),
     .units = {DER("d", 0, '-'), PROT("a", 1, '-')}},
    {"budget 0: discovery cannot externalize", 0, PLAN_DISCOVERY,
     OK(0, 0, 0),
     .units = {DERX("a", 10, 'D', SUM(1)), DERX("b", 0, 'P', SUM(0))}},
    {"budget 0: a zero-token summary fits", 0, PLAN_STRICT,
     OK(0, 0, 0),
     .units = {DERX("a", 10, 'S', SUM(0))}},

    /* ---- Redundant ---- */
    {"redundant dropped even with room", 1000, PLAN_DISCOVERY,
     OK(10, 10, 10),
     .units = {RED("a", 5), PROT("b", 10, 'P'), RED("c", 0)}},

    /* ---- Derivable order ---- */
    {"priority first, then newest first", 30, PLAN_STRICT,
     OK(30, 0, 0),
     .units = {DER("a", 10, 'D'), DERX("b", 10, 'P', .priority = 5), DER("c", 10, 'P'), DER("d", 10, 'P')}},
    {"negative priority ranks below the default", 15, PLAN_STRICT,
     OK(10, 0, 0),
     .units = {DER("a", 10, 'P'), DERX("b", 10, 'D', .priority = -1)}},
    {"extreme priorities", 15, PLAN_STRICT,
     OK(10, 0, 0),
     .units = {DERX("a", 10, 'P', .priority = INT64_MAX), DERX("b", 10, 'D', .priority = INT64_MIN)}},
    {"newest first among equals", 25, PLAN_STRICT,
     OK(20, 0, 0),
     .units = {DER("a", 10, 'D'), DER("b", 10, 'P'), DER("c", 10, 'P')}},
    {"fill continues past a unit that did not fit", 25, PLAN_STRICT,
     OK(20, 0, 0),
     .units = {DER("a", 10, 'P'), DER("b", 100, 'D'), DER("c", 10, 'P')}},
    {"a zero-token derivable fits after the budget is spent", 50, PLAN_STRICT,
     OK(50, 40, 50),
     .units = {DER("a", 0, 'P'), PROT("b", 50, 'P'), DER("c", 5, 'D')}},

    /* ---- Groups ---- */
    {"group ranked by best priority and latest position", 30, PLAN_STRICT,
     OK(30, 0, 0),
     .units = {DERX("a", 10, 'P', .group = "g"), DERX("b", 10, 'D', .priority = 3),
      DERX("c", 10, 'P', .priority = 3, .group = "g"), DERX("d", 10, 'P', .priority = 3)}},
    {"group dropped whole though a member alone fits", 35, PLAN_STRICT,
     OK(5, 0, 0),
     .units = {DER("c", 5, 'P'), DERX("a", 10, 'D', .group = "g"), DERX("b", 30, 'D', .group = "g")}},
    {"interleaved groups with similar names", 25, PLAN_STRICT,
     OK(20, 0, 0),
     .units = {DERX("a", 10, 'P', .group = "g"), DERX("b", 10, 'D', .group = "gg"),
      DERX("c", 10, 'P', .group = "g"), DERX("d", 16, 'D', .group = "gg")}},
    {"group with protected and redundant units between its members", 60, PLAN_STRICT,
     OK(60, 20, 20),
     .units = {DERX("a", 10, 'P', .group = "g"), PROT("p", 20, 'P'), RED("r", 50),
      DERX("b", 30, 'P', .group = "g"), DERX("c", 1, 'D', .priority = -1)}},

    /* ---- Strict fallback ---- */
    {"strict: summarized form, members without a summary whole", 20, PLAN_STRICT,
     OK(15, 0, 0),
     .units = {DERX("a", 50, 'S', .group = "g", SUM(5)), DERX("b", 10, 'P', .group = "g")}},
    {"strict: a summary that does not fit is dropped", 20, PLAN_STRICT,
     OK(0, 0, 0),
     .units = {DERX("a", 50, 'D', SUM(30))}},
    {"strict: never externalizes a derivable", 50, PLAN_STRICT,
     OK(45, 0, 0),
     .units = {DERX("a", 100, 'S', SUM(45)), DER("b", 100, 'D')}},
    {"strict: preserved when it fits, even with a summary", 100, PLAN_STRICT,
     OK(100, 0, 0),
     .units = {DERX("a", 100, 'P', SUM(1))}},

    /* ---- Discovery fallback ---- */
    {"discovery: externalized before summarized", 50, PLAN_DISCOVERY,
     OK(40, 0, 0),
     .units = {DERX("a", 100, 'X', SUM(5))}},
    {"discovery: summarized when the pointer does not fit", 30, PLAN_DISCOVERY,
     OK(5, 0, 0),
     .units = {DERX("a", 100, 'S', SUM(5))}},
    {"discovery: no text, no pointer", 50, PLAN_DISCOVERY,
     OK(5, 0, 0),
     .units = {DERX("a", 100, 'S', SUM(5), .no_text = 1), DERX("b", 100, 'D', .no_text = 1)}},
    {"discovery: group externalized whole", 90, PLAN_DISCOVERY,
     OK(80, 0, 0),
     .units = {DERX("a", 100, 'X', .group = "g"), DERX("b", 100, 'X', .group = "g")}},
    {"discovery: a member without text keeps the group from a pointer", 110, PLAN_DISCOVERY,
     OK(110, 0, 0),
     .units = {DERX("a", 100, 'P', .group = "g"), DERX("b", 100, 'S', .group = "g", .no_text = 1, SUM(10))}},
    {"discovery: a member its pointer cannot shrink stays verbatim in the group's pointer form", 60,
     PLAN_DISCOVERY,
     OK(50, 0, 0),
     .units = {DERX("c", 10, 'P', .group = "g"), DERX("r", 500, 'X', .group = "g")}},
    {"discovery: a group no pointer shrinks has no pointer form", 30, PLAN_DISCOVERY,
     OK(0, 0, 0),
     .units = {DERX("c", 20, 'D', .group = "g"), DERX("d", 40, 'D', .group = "g")}},
    {"discovery: group pointers do not fit, its summaries do", 60, PLAN_DISCOVERY,
     OK(10, 0, 0),
     .units = {DERX("a", 100, 'S', .group = "g", SUM(5)), DERX("b", 100, 'S', .group = "g", SUM(5))}},
    {"discovery: nothing fits, dropped", 30, PLAN_DISCOVERY,
     OK(0, 0, 0),
     .units = {DERX("a", 100, 'D', SUM(31))}},
    {"discovery: protected externalized and derivable externalized", 90, PLAN_DISCOVERY,
     OK(80, 40, 100),
     .units = {DER("d", 60, 'X'), PROT("a", 100, 'X')}},
};
/* clang-format on */

static char decision_letter(const plan_entry *e)
{
    switch (e->decision) {
    case DECISION_PRESERVED:
        return 'P';
    case DECISION_SUMMARIZED:
        return 'S';
    case DECISION_EXTERNALIZED:
        return 'X';
    case DECISION_DROPPED:
        return e->reason == DROP_REDUNDANT ? 'R' : 'D';
    case DECISION_UNSET:
        break;
    }
    return '?';
}

static int64_t cost_of(char letter, const plan_unit *u)
{
    switch (letter) {
    case 'P':
        return u->tokens;
    case 'S':
        return u->summary_tokens;
    case 'X':
        return u->pointer_tokens;
    default:
        return 0;
    }
}

static void run_case(const plan_case *c)
{
    plan_unit units[MAX_UNITS];
    size_t n = 0;

    memset(units, 0, sizeof(units));
    for (; n < MAX_UNITS && c->units[n].key; n++) {
        const case_unit *cu = &c->units[n];
        plan_unit *u = &units[n];
        u->key = cu->key;
        u->key_len = strlen(cu->key);
        u->cls = cu->cls;
        u->tokens = cu->tokens;
        u->has_text = !(cu->cls == UNIT_DERIVABLE && cu->no_text);
        u->text = u->has_text ? "text" : NULL;
        u->text_len = u->has_text ? 4 : 0;
        u->priority = cu->priority;
        u->group = cu->group;
        u->group_len = cu->group ? strlen(cu->group) : 0;
        u->has_summary = cu->has_summary;
        u->summary_tokens = cu->summary_tokens;
        u->pointer_tokens = (int64_t)pointer_length(u->key, u->key_len);
    }

    plan_result r;
    int rc = plan_run(units, n, c->budget, c->mode, &r);
    check(rc == c->rc, "%s: plan_run returned %d, want %d", c->name, rc, c->rc);
    check(r.required_budget == c->required, "%s: required_budget %" PRId64 ", want %" PRId64,
          c->name, r.required_budget, c->required);
    check(r.verbatim_budget == c->verbatim, "%s: verbatim_budget %" PRId64 ", want %" PRId64,
          c->name, r.verbatim_budget, c->verbatim);
    check(r.budget == c->budget, "%s: budget %" PRId64 ", want %" PRId64, c->name, r.budget,
          c->budget);

    if (rc == PLAN_FAILED && c->rc == PLAN_FAILED) {
        check(r.failed_index == c->failed_index, "%s: failed_index %zu, want %zu", c->name,
              r.failed_index, c->failed_index);
    } else if (rc == PLAN_OK && c->rc == PLAN_OK) {
        int64_t sum = 0;
        size_t n_ext = 0;
        check(r.n == n, "%s: %zu entries, want %zu", c->name, r.n, n);
        for (size_t i = 0; i < n; i++) {
            const plan_entry *e = &r.entries[i];
            char got = decision_letter(e);
            check(got == c->units[i].want, "%s: unit %zu (%s): %c, want %c", c->name, i,
                  units[i].key, got, c->units[i].want);
            check(e->cost == cost_of(got, &units[i]),
                  "%s: unit %zu (%s): cost %" PRId64 " does not match decision %c", c->name, i,
                  units[i].key, e->cost, got);
            check((e->decision == DECISION_DROPPED) == (e->reason != DROP_NONE),
                  "%s: unit %zu (%s): reason %s with decision %s", c->name, i, units[i].key,
                  plan_reason_name(e->reason), plan_decision_name(e->decision));
            sum += e->cost;
            n_ext += e->decision == DECISION_EXTERNALIZED;
        }
        check(r.used_tokens == c->used, "%s: used_tokens %" PRId64 ", want %" PRId64, c->name,
              r.used_tokens, c->used);
        check(r.used_tokens == sum, "%s: used_tokens %" PRId64 " but costs add up to %" PRId64,
              c->name, r.used_tokens, sum);
        check(r.used_tokens <= c->budget, "%s: used_tokens %" PRId64 " over budget", c->name,
              r.used_tokens);
        check(r.n_externalized == n_ext, "%s: n_externalized %zu, want %zu", c->name,
              r.n_externalized, n_ext);
    }
    plan_result_free(&r);
}

/* The required budget is the least at which a request succeeds: every case
 * must succeed there and, when it is above 0, fail one token below. */
static void check_required_is_least(const plan_case *c)
{
    plan_unit units[MAX_UNITS];
    size_t n = 0;

    memset(units, 0, sizeof(units));
    for (; n < MAX_UNITS && c->units[n].key; n++) {
        units[n].key = c->units[n].key;
        units[n].key_len = strlen(c->units[n].key);
        units[n].cls = c->units[n].cls;
        units[n].tokens = c->units[n].tokens;
        units[n].pointer_tokens = (int64_t)pointer_length(units[n].key, units[n].key_len);
        units[n].has_text = 1;
    }
    plan_result r;
    int rc = plan_run(units, n, c->required, c->mode, &r);
    check(rc == PLAN_OK, "%s: fails at its own required budget %" PRId64, c->name, c->required);
    plan_result_free(&r);
    if (c->required > 0) {
        rc = plan_run(units, n, c->required - 1, c->mode, &r);
        check(rc == PLAN_FAILED, "%s: succeeds below its required budget", c->name);
        plan_result_free(&r);
    }
}

/* Names are part of the response; check the planner's spellings once. */
static void check_names(void)
{
    check(strcmp(plan_decision_name(DECISION_PRESERVED), "preserved") == 0, "preserved");
    check(strcmp(plan_decision_name(DECISION_SUMMARIZED), "summarized") == 0, "summarized");
    check(strcmp(plan_decision_name(DECISION_EXTERNALIZED), "externalized") == 0, "externalized");
    check(strcmp(plan_decision_name(DECISION_DROPPED), "dropped") == 0, "dropped");
    check(strcmp(plan_reason_name(DROP_REDUNDANT), "redundant") == 0, "redundant reason");
    check(strcmp(plan_reason_name(DROP_OVER_BUDGET), "over_budget") == 0, "over_budget reason");
    check(strcmp(unit_class_name(UNIT_PROTECTED), "protected") == 0, "protected class");
    check(strcmp(unit_class_name(UNIT_DERIVABLE), "derivable") == 0, "derivable class");
    check(strcmp(unit_class_name(UNIT_REDUNDANT), "redundant") == 0, "redundant class");
}

/* The group rule: the strongest class of a group is every member's, and a
 * member raised to protected without text is never externalized. */
static void check_group_rule(void)
{
    plan_unit u[5] = {
        {.key = "call",
         .key_len = 4,
         .cls = UNIT_DERIVABLE,
         .tokens = 100,
         .group = "t1",
         .group_len = 2},
        {.key = "ledger",
         .key_len = 6,
         .cls = UNIT_PROTECTED,
         .tokens = 20,
         .group = "t1",
         .group_len = 2,
         .has_text = 1,
         .text = "migration applied",
         .text_len = 17},
        {.key = "old",
         .key_len = 3,
         .cls = UNIT_REDUNDANT,
         .tokens = 10,
         .group = "t2",
         .group_len = 2},
        {.key = "new",
         .key_len = 3,
         .cls = UNIT_DERIVABLE,
         .tokens = 10,
         .group = "t2",
         .group_len = 2},
        {.key = "lone", .key_len = 4, .cls = UNIT_REDUNDANT, .tokens = 10},
    };
    check(plan_apply_groups(u, 5) == 0, "group rule ran");
    check(u[0].cls == UNIT_PROTECTED, "a call grouped with a protected result is protected");
    check(u[1].cls == UNIT_PROTECTED, "the protected result stays protected");
    check(u[2].cls == UNIT_DERIVABLE && u[3].cls == UNIT_DERIVABLE,
          "redundant grouped with derivable is derivable");
    check(u[4].cls == UNIT_REDUNDANT, "an ungrouped unit keeps its class");

    /* "call" has no text: its 43-token pointer would be cheaper, but it
     * cannot be externalized, so the plan needs its full 100 tokens. */
    for (size_t i = 0; i < 5; i++)
        u[i].pointer_tokens = (int64_t)pointer_length(u[i].key, u[i].key_len);
    plan_result r;
    int rc = plan_run(u, 2, 120, PLAN_STRICT, &r);
    check(rc == PLAN_OK && r.entries[0].decision == DECISION_PRESERVED &&
              r.entries[1].decision == DECISION_PRESERVED,
          "a protected group kept whole (rc %d)", rc);
    plan_result_free(&r);
    rc = plan_run(u, 2, 119, PLAN_STRICT, &r);
    check(rc == PLAN_FAILED && r.required_budget == 100 + 20,
          "a textless protected unit costs its tokens (rc %d, required %" PRId64 ")", rc,
          r.required_budget);
    plan_result_free(&r);
}

int main(void)
{
    check_group_rule();
    size_t ncases = sizeof(cases) / sizeof(cases[0]);
    for (size_t i = 0; i < ncases; i++) {
        run_case(&cases[i]);
        check_required_is_least(&cases[i]);
    }
    check_names();
    printf("plan_cases: %zu cases\n", ncases);
    return check_done("plan_cases");
}
