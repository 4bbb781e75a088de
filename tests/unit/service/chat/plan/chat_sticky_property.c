/* Sticky plans over many seeded random histories that grow turn by turn, in
 * the three formats, under bytes and o200k_base, each planned from the plan
 * of the turn before (chat_prior_from_plan(), as plan_memory.c keeps it):
 * an extended plan keeps every old message's decision and every marker of
 * old messages as it was (its run, place and text: the answer starts with
 * the last answer); a recompacted one lands at or under its low-water mark,
 * which is at most the budget and at least compact_to and the required
 * budget; no plan passes its budget; a plan planned down to its mark puts
 * the task behind a pointer only where the budget cannot hold it; a
 * history that is not the last one plus new messages, or a budget that
 * changed, is planned fresh; each kind of plan occurs.
 *   chat_sticky_property RANKS_DIR [SEQUENCES [SEED]]  (default 300, seeded) */
#define XORSHIFT_SEED 0x571c4eu

#include "chat_codec.h"
#include "unit/service/chat/chat_history.h"
#include "chat_plan.h"
#include "loss_markers.h"
#include "chat_own.h"
#include "sticky_plan.h"
#include "check.h"
#include "token_cache.h"
#include "tokenizer.h"
#include "xorshift.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQUENCES 300

static int64_t count_encoding(const void *ctx, const char *text, size_t len)
{
    return tokenizer_count(ctx, text, len);
}

static const char *const TOOLS[] = {"read_file", "grep", "run_tests"};
static chat_str read_only[] = {{"read_file", 9}, {"grep", 4}};

/* Appends one agent step to h: a tool exchange (a third of them narrated,
 * some with side effects), or prose, or a user turn, keeping the format's
 * turns. Returns 0 when h is full. */
static int grow(history *h, char (*ids)[8], size_t *calls)
{
    if (h->req.n + 3 > MAX_MSGS)
        return 0;
    int alternating = h->req.rules->alternating;
    chat_role last = h->m[h->req.n - 1].role;
    h->pad = 10 + below(300);
    if (below(3) != 0 && (!alternating || last == ROLE_USER)) {
        snprintf(ids[*calls], 8, "c%zu", *calls);
        chat_message *res = add_exchange_as(h, alternating ? ROLE_USER : ROLE_TOOL, TOOLS[below(3)],
                                            "{\"p\":1}", ids[*calls]);
        (*calls)++;
        chat_message *caller = res - 1;
        if (below(3) == 0) { /* narration beside the call */
            caller->payload[caller->n_payload++] = caller->json;
            caller->text_slots = 1;
        }
        return 1;
    }
    chat_role role = alternating ? (last == ROLE_USER ? ROLE_ASSISTANT : ROLE_USER)
                                 : (below(2) ? ROLE_ASSISTANT : ROLE_USER);
    add(h, role, role == ROLE_USER ? "ask" : "say");
    return 1;
}

typedef struct {
    size_t fresh, extended, recompacted, refused;
    size_t kept_beside;  /* runs that end before a message dropped too */
    size_t task_spilled; /* plans with the task behind a pointer */
    size_t prefix_kept;  /* recompactions that kept a prefix of the last plan */
    size_t reason_kept;  /* reads made redundant since they went, still over budget */
} kinds;

/* Whether marker m of p is one of q's, as it was. */
static int marker_kept(const chat_marker *m, const chat_plan *q)
{
    for (size_t k = 0; k < q->n_markers; k++) {
        const chat_marker *o = &q->markers[k];
        if (o->first == m->first && o->last == m->last && o->place == m->place && o->at == m->at &&
            o->len == m->len && memcmp(o->text, m->text, m->len) == 0)
            return 1;
    }
    return 0;
}

/* A plan planned down to its mark reaches it by what may go, never by a
 * pointer to the task (message 0, protected) where the budget holds it in
 * full: pr is the last plan's prior, or NULL. */
static void check_task(long id, size_t turn, const history *h, const chat_plan *p,
                       const chat_prior *pr, kinds *seen)
{
    const chat_request *req = &h->req;
    const plan_entry *e = p->c.plan.entries;
    seen->task_spilled += e[0].decision == DECISION_EXTERNALIZED;
    /* A mark at the budget plans as full as fits, where the planner's own
     * order picks what goes behind pointers when not all protected fit. */
    if (p->low_water > 0 && p->low_water < req->budget && req->policy.keep_last == 0 &&
        !chat_sticky_externalized(pr, 0)) {
        const plan_unit *task = &p->units[0];
        int64_t ceiling = req->budget - req->budget * STICKY_MARK_SLACK_PERCENT / 100;
        check(e[0].decision != DECISION_EXTERNALIZED ||
                  p->required_budget + task->tokens - task->pointer_tokens > ceiling,
              "#%ld turn %zu: planned down to %lld, the task (%lld tokens) behind a pointer "
              "though %lld of the budget %lld holds it beside the required %lld",
              id, turn, (long long)p->low_water, (long long)task->tokens, (long long)ceiling,
              (long long)req->budget, (long long)p->required_budget);
    }
}

/* Checks plan p of a history whose last plan was q (its prior pr). */
static void check_turn(long id, size_t turn, const history *h, const chat_plan *p,
                       const chat_plan *q, const chat_prior *pr, kinds *seen)
{
    /* A run that ends before a message dropped too: the marker sent for it
     * kept, what went beside it later on its own. */
    const plan_entry *e = p->c.plan.entries;
    for (size_t i = 1; i < p->c.plan.n; i++)
        seen->kept_beside += p->run_start[i] && e[i - 1].decision == DECISION_DROPPED &&
                             e[i].decision == DECISION_DROPPED;
    const chat_request *req = &h->req;
    check(p->used_tokens + p->reserve_tokens <= req->budget, "#%ld turn %zu: used %lld of %lld", id,
          turn, (long long)p->used_tokens, (long long)req->budget);
    if (p->kind == CHAT_PLAN_EXTENDED) {
        for (size_t i = 0; i < pr->n; i++)
            check(p->c.plan.entries[i].decision == (plan_decision)pr->decision[i] ||
                      (req->m[i].stale && p->c.plan.entries[i].decision == DECISION_DROPPED),
                  "#%ld turn %zu: extended, message %zu changed its decision", id, turn, i);
        for (size_t k = 0; k < p->n_markers; k++)
            if (p->markers[k].last < pr->n && !req->m[p->markers[k].first].stale)
                check(marker_kept(&p->markers[k], q),
                      "#%ld turn %zu: extended, the marker of %zu-%zu is not the one sent", id,
                      turn, p->markers[k].first, p->markers[k].last);
        check(p->low_water == 0, "#%ld turn %zu: extended, yet planned down", id, turn);
    } else if (p->kind == CHAT_PLAN_RECOMPACTED) {
        check(p->low_water > 0 && p->used_tokens <= p->low_water && p->low_water <= req->budget &&
                  p->low_water >= p->required_budget &&
                  (p->low_water >= req->compact_to || req->compact_to >= req->budget),
              "#%ld turn %zu: recompacted to %lld, low water %lld (compact_to %lld, required "
              "%lld, budget %lld)",
              id, turn, (long long)p->used_tokens, (long long)p->low_water,
              (long long)req->compact_to, (long long)p->required_budget, (long long)req->budget);
        /* After the prefix it kept, only the newest reads: none kept where
         * a newer one went (it would head a later rewrite). */
        size_t newest_dropped = SIZE_MAX;
        for (size_t i = p->c.plan.n; p->kept_prefix > 0 && i-- > p->kept_prefix;) {
            if (p->units[i].cls != UNIT_DERIVABLE || p->classes.own[i] != CHAT_OWN_NONE)
                continue;
            if (e[i].decision == DECISION_DROPPED)
                newest_dropped = newest_dropped == SIZE_MAX ? i : newest_dropped;
            else
                check(newest_dropped == SIZE_MAX,
                      "#%ld turn %zu: recompacted after %zu, message %zu kept, %zu dropped", id,
                      turn, p->kept_prefix, i, newest_dropped);
        }
        /* A read the last plan dropped over budget, dropped again, keeps
         * its re-run hint in its marker, redundant since or not. */
        for (size_t i = p->kept_prefix; p->kept_prefix > 0 && i < pr->n; i++)
            if (pr->decision[i] == DECISION_DROPPED && pr->reason[i] == DROP_OVER_BUDGET &&
                e[i].decision == DECISION_DROPPED) {
                check(e[i].reason == DROP_OVER_BUDGET,
                      "#%ld turn %zu: message %zu dropped over budget, now as redundant", id, turn,
                      i);
                seen->reason_kept += p->units[i].cls == UNIT_REDUNDANT;
            }
        seen->prefix_kept += p->kept_prefix > 0;
    }
}

/* One sequence: a history grown over up to 30 turns, each planned from the
 * last plan. */
static void sequence(long id, const chat_counter *cnt, kinds *k)
{
    static history h;
    static char ids[MAX_MSGS][8];
    const chat_rules *rules[] = {&chat_openai_rules, &chat_anthropic_rules, &chat_responses_rules};
    history_init(&h, rules[below(3)]);
    h.req.policy.read_only_tools = (chat_names){read_only, 2};
    h.req.policy.keep_last = below(3);
    h.req.mode = below(4) == 0 ? PLAN_DISCOVERY : PLAN_STRICT;
    h.req.budget = 1500 + (int64_t)below(4000);
    h.req.compact_to = h.req.budget * (int64_t)(30 + below(71)) / 100;
    h.pad = 40 + below(311); /* a task long enough to be worth a pointer (pad at most 350) */
    add(&h, ROLE_USER, "task");
    size_t calls = 0;
    chat_plan last;
    chat_prior prior = {0};
    int has = 0;
    compactd_error err;
    for (size_t turn = 0; turn < 30; turn++) {
        for (size_t s = 1 + below(3); s > 0; s--)
            if (!grow(&h, ids, &calls))
                break;
        h.req.prior = has ? &prior : NULL;
        chat_plan p;
        int rc = chat_plan_run(&h.req, cnt, &p, &err);
        if (rc != 0) {
            check(err.kind == ERR_COMPACTION_FAILURE, "#%ld turn %zu: %s", id, turn, err.message);
            k->refused++;
            chat_plan_free(&p);
            continue; /* a refusal leaves the last plan as it was */
        }
        check(has || p.kind == CHAT_PLAN_FRESH, "#%ld turn %zu: no last plan, yet %s", id, turn,
              chat_plan_kind_name(p.kind));
        if (has)
            check_turn(id, turn, &h, &p, &last, &prior, k);
        check_task(id, turn, &h, &p, has ? &prior : NULL, k);
        *(p.kind == CHAT_PLAN_FRESH      ? &k->fresh
          : p.kind == CHAT_PLAN_EXTENDED ? &k->extended
                                         : &k->recompacted) += 1;
        if (has) {
            chat_plan_free(&last);
            chat_prior_free(&prior);
        }
        if (chat_prior_from_plan(&p, &prior) != 0) {
            fail("#%ld: out of memory", id);
            chat_plan_free(&p);
            return;
        }
        last = p;
        has = 1;
    }
    if (!has)
        return;
    /* Another budget, or an edited history: planned fresh. */
    chat_plan p;
    h.req.prior = &prior;
    h.req.budget += 1000;
    if (chat_plan_run(&h.req, cnt, &p, &err) == 0)
        check(p.kind == CHAT_PLAN_FRESH, "#%ld: another budget, yet %s", id,
              chat_plan_kind_name(p.kind));
    chat_plan_free(&p);
    h.req.budget -= 1000;
    h.text[0][0] = 'T'; /* the task, edited */
    if (chat_plan_run(&h.req, cnt, &p, &err) == 0)
        check(p.kind == CHAT_PLAN_FRESH, "#%ld: an edited history, yet %s", id,
              chat_plan_kind_name(p.kind));
    chat_plan_free(&p);
    chat_plan_free(&last);
    chat_prior_free(&prior);
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc < 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: chat_sticky_property RANKS_DIR [SEQUENCES [SEED]] (%s)\n",
                argc >= 2 ? err : "");
        return 1;
    }
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : SEQUENCES;
    if (argc > 3)
        rng_state = strtoull(argv[3], NULL, 0) * 2 + 1; /* odd, and one per seed */
    const tokenizer *o200k = tokenizer_find("o200k_base", 10);
    chat_counter counters[] = {{count_bytes, NULL, 1},
                               {count_encoding, o200k, tokenizer_counts_by_parts(o200k)}};
    kinds k = {0};
    for (long id = 0; (size_t)id < n; id++) {
        token_cache_clear();
        sequence(id, &counters[below(2)], &k);
    }
    printf("%zu fresh, %zu extended, %zu recompacted (%zu keeping a prefix), %zu refused; %zu "
           "runs kept apart from a run dropped beside them; %zu plans with the task behind a "
           "pointer\n",
           k.fresh, k.extended, k.recompacted, k.prefix_kept, k.refused, k.kept_beside,
           k.task_spilled);
    check(k.fresh > 0 && k.extended > n && k.recompacted > n / 4,
          "each kind of plan, often enough");
    check(k.kept_beside > 0, "a run kept apart from one dropped beside it");
    check(k.prefix_kept > 0, "a recompaction that kept a prefix");
    check(k.reason_kept > 0, "a read made redundant since it went over budget");
    tokenizer_unload();
    return check_done("chat_sticky_property");
}
