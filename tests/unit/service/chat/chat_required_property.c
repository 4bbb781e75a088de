/* required_budget is tight, over many random histories in both formats
 * (seeded): the plan at required_budget succeeds within it, the plan at
 * required_budget - 1 is refused with CompactionFailure, and, for histories
 * with few enough derivable items to try every choice, no choice of which
 * items to drop (each kept in its cheapest form, the markers priced as they
 * would be placed) costs less than required_budget. A quarter of the
 * histories are longer, too long to try every choice: for those the first
 * two are checked. Half of the longer ones are long runs of read-only tool
 * exchanges with nothing protected between them, most of which pass the
 * search's bound on exact pricing (chat_least.c) and have their markers
 * priced by estimate: required_budget is checked there to be no less than
 * the least plan (it may be more, as docs/chat.md says), and how often and
 * by how much it is more is printed. */
#define XORSHIFT_SEED 0x5eed18u

#include "chat_codec.h"
#include "chat_history.h"
#include "chat_least.h"
#include "chat_markers.h"
#include "chat_plan.h"
#include "check.h"
#include "token_cache.h"
#include "xorshift.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HISTORIES 600
#define BRUTE_MAX_ITEMS 12

/* A tokenizer that is not additive: four bytes a token, rounded up. */
static int64_t count_quarters(const void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)(len + 3) / 4;
}

static const char *const TOOLS[] = {"read_file", "grep", "list_dir", "run_tests"};

static void annotate(chat_message *m)
{
    size_t r = below(10);
    if (r < 3) {
        m->note.has_class = 1;
        m->note.cls = r == 0 ? UNIT_PROTECTED : r == 1 ? UNIT_REDUNDANT : UNIT_DERIVABLE;
    }
    if (below(4) == 0) {
        static const char *const SUMMARIES[] = {"ok", "read a.c: 3 functions", "no match"};
        const char *s = SUMMARIES[below(3)];
        m->note.has_summary = 1;
        m->note.summary = (chat_str){s, strlen(s)};
    }
}

/* A random history under the rules of one format: a task, then turns of
 * text and tool exchanges (Anthropic's alternate from user, its results in
 * a user turn). */
typedef enum { HISTORY_SHORT, HISTORY_LONG, HISTORY_RUNS } history_kind;

static void random_history(history *h, const chat_rules *rules, history_kind kind, char (*ids)[8])
{
    static chat_str read_only[] = {
        {"read_file", 9}, {"grep", 4}, {"list_dir", 8}, {"run_tests", 9}};
    int longer = kind != HISTORY_SHORT, runs = kind == HISTORY_RUNS;
    history_init(h, rules);
    h->req.policy.keep_last = runs ? 0 : below(3);
    if (runs)
        h->req.policy.read_only_tools = (chat_names){read_only, 4};
    h->req.mode = below(3) == 0 ? PLAN_DISCOVERY : PLAN_STRICT;
    int alternating = rules->alternating;
    /* Runs of read-only exchanges pass the exact search's bound (chat_least.c). */
    size_t target = longer ? 70 + below(MAX_MSGS - 72) : 2 + below(60);
    h->pad = 20 + below(200);
    add(h, ROLE_USER, "task");
    chat_role last = ROLE_USER;
    size_t calls = 0;
    while (h->req.n + 2 <= target) {
        h->pad = 10 + below(300);
        if ((runs ? below(12) != 0 : below(2) == 0) && (!alternating || last == ROLE_USER)) {
            snprintf(ids[calls], 8, "c%zu", calls);
            const char *tool = TOOLS[below(4)];
            chat_message *res = add_exchange_as(h, alternating ? ROLE_USER : ROLE_TOOL, tool,
                                                below(2) ? "{\"p\":1}" : "{\"p\":2}", ids[calls]);
            calls++;
            if (!runs) /* a run is broken by nothing protected */
                annotate(res);
            last = ROLE_USER;
            continue;
        }
        chat_role role = alternating ? (last == ROLE_USER ? ROLE_ASSISTANT : ROLE_USER)
                                     : (below(2) ? ROLE_ASSISTANT : ROLE_USER);
        annotate(add(h, role, role == ROLE_USER ? "ask" : "say"));
        last = role;
    }
}

/* The derivable items of a plan: messages of one exchange together. */
static size_t items_of(const chat_plan *p, int discovery, chat_item *items)
{
    size_t k = 0;
    for (size_t i = 0; i < p->c.plan.n; i++) {
        if (p->units[i].cls != UNIT_DERIVABLE)
            continue;
        chat_item *it = &items[k++];
        size_t own = p->classes.owner[i];
        it->first = it->last = i;
        while (own != SIZE_MAX && it->last + 1 < p->c.plan.n &&
               p->classes.owner[it->last + 1] == own)
            it->last++;
        /* Its cheapest kept form: whole, its summaries, or (discovery)
         * its pointers; a member without a summary stays whole. */
        int64_t whole = 0, summed = 0, ptrs = 0;
        int summary = 0;
        for (size_t j = it->first; j <= it->last; j++) {
            const plan_unit *u = &p->units[j];
            whole += u->tokens;
            ptrs += u->pointer_tokens;
            summed += u->has_summary ? u->summary_tokens : u->tokens;
            summary |= u->has_summary;
        }
        it->keep_how = DECISION_PRESERVED;
        it->keep_cost = whole;
        if (summary && summed < it->keep_cost)
            it->keep_how = DECISION_SUMMARIZED, it->keep_cost = summed;
        if (discovery && ptrs < it->keep_cost)
            it->keep_how = DECISION_EXTERNALIZED, it->keep_cost = ptrs;
        i = it->last;
    }
    return k;
}

/* The least total over every choice of dropped items, each kept item in
 * its cheapest kept form, the protected messages as in base. */
static int64_t brute_least(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                           const plan_result *base, chat_item *items, size_t nitems)
{
    int64_t best = INT64_MAX;
    plan_result r = *base;
    r.entries = malloc(req->n * sizeof(plan_entry));
    unsigned char drop[BRUTE_MAX_ITEMS];
    for (unsigned mask = 0; mask < (1u << nitems); mask++) {
        memcpy(r.entries, base->entries, req->n * sizeof(plan_entry));
        for (size_t k = 0; k < nitems; k++)
            drop[k] = (mask >> k) & 1;
        chat_items_apply(p->units, items, nitems, drop, &r);
        chat_marker *mk = NULL;
        size_t nmk = 0;
        int64_t mtok = 0;
        if (chat_markers_build(req, p, r.entries, cnt, &mk, &nmk, &mtok) != 0)
            abort();
        if (r.used_tokens + mtok < best)
            best = r.used_tokens + mtok;
        chat_markers_free(mk, nmk);
    }
    free(r.entries);
    return best;
}

typedef struct {
    size_t tried, brute, tight_vs_brute, below_old;
    size_t runs_brute, runs_above; /* runs of read-only exchanges, above the least */
    int64_t runs_gap;              /* and by how much at most */
} tally;

static void one(history *h, const chat_counter *cnt, long id, history_kind kind, tally *t)
{
    chat_plan p;
    compactd_error err = {0};
    h->req.budget = INT64_C(1) << 40;
    if (chat_plan_run(&h->req, cnt, &p, &err) != 0) {
        check(0, "#%ld: planned at an ample budget: %s", id, err.message);
        chat_plan_free(&p);
        return;
    }
    int64_t need = p.required_budget;
    chat_item items[MAX_MSGS];
    size_t nitems = items_of(&p, h->req.mode == PLAN_DISCOVERY, items);
    if (nitems <= BRUTE_MAX_ITEMS) {
        /* Each kept item's form does not change the markers: trying every
         * choice of drops covers every plan the planner could make. */
        plan_result base;
        int64_t cheapest = 0;
        for (size_t i = 0; i < h->req.n; i++)
            if (p.units[i].cls == UNIT_PROTECTED)
                cheapest += p.units[i].tokens < p.units[i].pointer_tokens
                                ? p.units[i].tokens
                                : p.units[i].pointer_tokens;
        check(plan_run(p.units, h->req.n, cheapest, h->req.mode, &base) == PLAN_OK,
              "#%ld: the protected messages fit in their cheapest forms", id);
        int64_t brute = p.system_tokens + brute_least(&h->req, &p, cnt, &base, items, nitems);
        plan_result_free(&base);
        if (kind == HISTORY_RUNS) {
            /* Priced by estimate in the search: the plan it finds is priced
             * exactly, never below the least, and may be above it
             * (docs/chat.md says so). */
            check(need >= brute, "#%ld: required_budget %lld below the least plan %lld", id,
                  (long long)need, (long long)brute);
            t->runs_brute++;
            t->runs_above += need > brute;
            t->runs_gap = need - brute > t->runs_gap ? need - brute : t->runs_gap;
        } else {
            check(need == brute, "#%ld: required_budget %lld, least plan by brute force %lld", id,
                  (long long)need, (long long)brute);
            t->brute++;
            t->tight_vs_brute += need == brute;
        }
    }
    chat_plan_free(&p);

    h->req.budget = need;
    int rc = chat_plan_run(&h->req, cnt, &p, &err);
    check(rc == 0, "#%ld: planned at required_budget %lld: %s", id, (long long)need,
          rc ? err.message : "");
    if (rc == 0)
        check(p.used_tokens <= need && p.required_budget == need,
              "#%ld: used %lld of %lld, required_budget %lld", id, (long long)p.used_tokens,
              (long long)need, (long long)p.required_budget);
    chat_plan_free(&p);

    h->req.budget = need - 1;
    rc = chat_plan_run(&h->req, cnt, &p, &err);
    check(rc != 0 && err.kind == ERR_COMPACTION_FAILURE && p.required_budget == need,
          "#%ld: refused at required_budget - 1 (%lld) with the same required_budget", id,
          (long long)need - 1);
    if (rc != 0)
        check(p.failed_index == SIZE_MAX ||
                  (p.failed_index < h->req.n && p.units[p.failed_index].cls == UNIT_PROTECTED),
              "#%ld: the message named is protected", id);
    chat_plan_free(&p);
    t->tried++;
}

int main(void)
{
    static history h;
    static char ids[MAX_MSGS][8];
    const chat_rules *rules[] = {&chat_openai_rules, &chat_anthropic_rules};
    chat_counter counters[] = {{count_bytes, NULL}, {count_quarters, NULL}};
    tally t = {0};
    for (long id = 0; id < HISTORIES; id++) {
        history_kind kind = id % 8 == 7 ? HISTORY_RUNS : id % 4 == 3 ? HISTORY_LONG : HISTORY_SHORT;
        random_history(&h, rules[id % 2], kind, ids);
        token_cache_clear();
        one(&h, &counters[(id / 2) % 2], id, kind, &t);
    }
    printf(
        "%zu histories; %zu checked against brute force, %zu exactly least; of the runs "
        "of read-only exchanges, %zu against brute force, %zu above the least (by at most %lld)\n",
        t.tried, t.brute, t.tight_vs_brute, t.runs_brute, t.runs_above, (long long)t.runs_gap);
    check(t.runs_brute >= HISTORIES / 20, "enough runs were small enough to try every choice");
    check(t.brute >= HISTORIES / 10, "enough histories were small enough to try every choice");
    return check_done("chat_required_property");
}
