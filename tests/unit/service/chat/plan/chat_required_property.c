/* required_budget is the least budget at which a chat plan exists, over
 * many seeded random histories in the three formats (OpenAI, Anthropic,
 * Responses) under four counters: bytes, o200k_base and cl100k_base (which
 * count by parts: the search prices every marker exactly,
 * least_budget_parts.c), and one that counts four bytes a token without
 * saying it counts by parts (the search's other ways). The plan at
 * required_budget succeeds within it, one token less is refused with
 * CompactionFailure, and no plan costs less: every choice of drops is tried
 * where a history has at most 12 derivable items, else an independent
 * search over runs prices each run's marker by rendering it
 * (chat_marker_text) and counting it. A quarter of the histories are
 * longer; half of those are long runs of derivable exchanges with nothing
 * protected between them, with re-acquire hints made to test the cuts
 * where markers are priced by parts (punctuation, digits, white space,
 * non-ASCII text, bytes that are not UTF-8), lists of calls that already
 * ran, hints of the caller's own, and narration beside read-only calls
 * (kept while the calls and their results go). Under the last counter the search
 * may price the longer runs by estimate: there required_budget is checked
 * to be no less than the least, and how often it is more is printed.
 *   chat_required_property RANKS_DIR [HISTORIES [SEED]]  (default 900, seeded) */
#define XORSHIFT_SEED 0x5eed18u

#include "chat_codec.h"
#include "unit/service/chat/chat_history.h"
#include "least_budget.h"
#include "least_budget_parts.h"
#include "loss_markers.h"
#include "chat_own.h"
#include "chat_plan.h"
#include "chat_price.h"
#include "required_budget.h"
#include "check.h"
#include "token_cache.h"
#include "tokenizer.h"
#include "xorshift.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORIES 900
#define BRUTE_MAX_ITEMS 12

/* A tokenizer that is not additive: four bytes a token, rounded up. */
static int64_t count_quarters(const void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (int64_t)(len + 3) / 4;
}

static int64_t count_encoding(const void *ctx, const char *text, size_t len)
{
    return tokenizer_count(ctx, text, len);
}

static const char *const TOOLS[] = {"read_file", "grep", "list_dir", "run_tests"};

/* Arguments, and re-acquire hints of the caller's own, whose ends meet a
 * marker's "; ", ". " and "]" in every way a pre-tokenizer could join them. */
static const char *const ARGS[] = {"{\"p\":1}",
                                   "{\"p\":2}",
                                   "{\"path\":\"src/a.c\"}",
                                   "a.c  ",
                                   "  ",
                                   "x;",
                                   "12",
                                   "v1.2.3",
                                   "don't",
                                   "na\xc3\xafve caf\xc3\xa9",
                                   "\xff\xfe",
                                   "\xe2\x82",
                                   "line\nnext",
                                   "tab\t",
                                   "a; b",
                                   "...",
                                   "\xe6\x97\xa5\xe6\x9c\xac",
                                   "x'",
                                   "a/b/",
                                   "(1)",
                                   "",
                                   "1 2 345678",
                                   "\r\n",
                                   "] [",
                                   "'s",
                                   ":"};
#define N_ARGS (sizeof(ARGS) / sizeof(ARGS[0]))

/* compactd's own markers, as a history fed back holds them. */
static const char *const OWN[] = {
    "[compactd: message 4 was dropped to fit the token budget. Re-acquire before relying on "
    "them: read_file {\"p\":1}]",
    "[compactd: messages 2-19 were dropped to fit the token budget. Re-acquire before relying on "
    "them: grep x; list_dir a/b/. Already ran, not to be run again (results not kept): "
    "write_file (c1)]",
    "[compactd: messages 5-6 were dropped as redundant]",
    "[compactd: message 1 was dropped to fit the token budget; no re-acquire hint was given]"};

static chat_message *add_own_marker(history *h, chat_role role)
{
    chat_message *m = add(h, role, "x");
    char *t = h->text[h->req.n - 1];
    snprintf(t, sizeof(h->text[0]), "%s", OWN[below(4)]);
    m->json = m->payload[0] = (chat_str){t, strlen(t)};
    return m;
}

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
typedef enum { HISTORY_SHORT, HISTORY_LONG, HISTORY_RUNS, HISTORY_TURNS } history_kind;

static void random_history(history *h, const chat_rules *rules, history_kind kind, char (*ids)[8])
{
    static chat_str read_only[] = {
        {"read_file", 9}, {"grep", 4}, {"list_dir", 8}, {"run_tests", 9}};
    int longer = kind != HISTORY_SHORT, runs = kind == HISTORY_RUNS;
    history_init(h, rules);
    h->req.policy.keep_last = runs ? 0 : below(3);
    /* Runs declare their reads, and a quarter of the others, where
     * narration beside a read parts from it (below). */
    int reads = runs || below(4) == 0;
    if (reads)
        h->req.policy.read_only_tools = (chat_names){read_only, 4};
    h->req.mode = below(3) == 0 ? PLAN_DISCOVERY : PLAN_STRICT;
    int alternating = rules->alternating;
    /* Runs of read-only exchanges pass the exact search's bound (least_budget.c). */
    size_t target = longer ? 70 + below(MAX_MSGS - 72) : 2 + below(60);
    h->pad = 20 + below(200);
    add(h, ROLE_USER, "task");
    chat_role last = ROLE_USER;
    size_t calls = 0;
    while (h->req.n + 2 <= target) {
        h->pad = 10 + below(300);
        if ((runs ? below(12) != 0 : below(2) == 0) && (!alternating || last == ROLE_USER)) {
            snprintf(ids[calls], 8, "c%zu", calls);
            /* In runs, one exchange in eight has side effects and is made
             * derivable (a list of calls that already ran). */
            int ran = runs && below(8) == 0;
            const char *tool = ran ? "write_file" : TOOLS[below(4)];
            const char *args = runs ? ARGS[below(N_ARGS)] : ARGS[below(2)];
            chat_message *res =
                add_exchange_as(h, alternating ? ROLE_USER : ROLE_TOOL, tool, args, ids[calls]);
            calls++;
            if (!runs) /* a run is broken by nothing protected */
                annotate(res);
            for (int k = 0; ran && k < 2; k++)
                (res - k)->note.has_class = 1, (res - k)->note.cls = UNIT_DERIVABLE;
            if (reads && !ran && below(3) == 0) { /* narration beside the call: it stays */
                chat_message *caller = res - 1;
                caller->payload[caller->n_payload++] = caller->json;
                caller->text_slots = 1;
            }
            if (runs && below(8) == 0) { /* a second entry of its own, in its own JSON */
                static char own[MAX_MSGS][64];
                size_t at = h->req.n - 1;
                snprintf(own[at], sizeof(own[at]), "%s", ARGS[below(N_ARGS)]);
                res->note.has_reacquire = 1;
                res->note.reacquire = (chat_str){own[at], strlen(own[at])};
            }
            last = ROLE_USER;
            continue;
        }
        chat_role role = alternating ? (last == ROLE_USER ? ROLE_ASSISTANT : ROLE_USER)
                                     : (below(2) ? ROLE_ASSISTANT : ROLE_USER);
        if (runs && below(3) == 0) { /* one of compactd's markers, fed back */
            chat_message *m = add_own_marker(h, role);
            m->note.has_class = below(3) == 0; /* protected, it goes only with a neighbour */
            m->note.cls = UNIT_PROTECTED;
        } else
            annotate(add(h, role, role == ROLE_USER ? "ask" : "say"));
        last = role;
    }
}

/* Turns of text only, user and assistant in turn, each protected,
 * derivable or redundant: where a run of dropped turns meets a user turn
 * on both sides of the alternation, so that its marker is appended to a
 * turn before or after it. */
static void random_turns(history *h, const chat_rules *rules)
{
    history_init(h, rules);
    h->req.policy.keep_last = 0;
    h->req.mode = below(3) == 0 ? PLAN_DISCOVERY : PLAN_STRICT;
    size_t target = 2 + below(30);
    for (size_t i = 0; i < target; i++) {
        h->pad = 10 + below(200);
        chat_message *m = add(h, i % 2 ? ROLE_ASSISTANT : ROLE_USER, i % 2 ? "say" : "ask");
        size_t r = below(5);
        m->note.has_class = 1;
        m->note.cls = r == 0 ? UNIT_REDUNDANT : r < 3 ? UNIT_DERIVABLE : UNIT_PROTECTED;
    }
}

/* Some user turns end in one of compactd's markers, as a history fed back
 * holds them where a marker was appended to a turn: a new marker placed
 * there takes it in, else keeping the turn keeps it. Returns how many. */
static size_t add_tails(history *h, size_t one_in)
{
    static char tails[MAX_MSGS][300];
    size_t n = 0;
    for (size_t i = 0; i < h->req.n; i++) {
        chat_message *m = &h->m[i];
        if (m->role != ROLE_USER || below(one_in) != 0)
            continue;
        snprintf(tails[i], sizeof(tails[i]), "%s", OWN[below(4)]);
        m->tail_marker = 1;
        m->tail = (chat_str){tails[i], strlen(tails[i])};
        n++;
    }
    return n;
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
        if (chat_markers_merge_own(p, req->n, r.entries)) /* as any plan's own markers go */
            chat_plan_recount(&r);
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

/* ---- An independent search over runs ---- */

typedef enum { KEEP_ALWAYS, KEEP_OR_DROP, DROP_ALWAYS } unit_kind;

typedef struct {
    size_t first, last;
    unit_kind kind;
    int64_t keep;
    /* One of compactd's markers: never kept beside a dropped message; held
     * (protected): dropped only with a dropped neighbour. */
    int own, held;
} unit_row;

/* The marker for the messages between units u and v of the row (u + 1 < v,
 * 0 before the history, m + 1 after it), every unit between them dropped:
 * placed, rendered and counted as a plan's markers are. */
static int64_t rendered_run(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                            const plan_entry *e, const unit_row *row, size_t m, size_t u, size_t v)
{
    size_t first = u == 0 ? 0 : row[u].last + 1;
    size_t last = v == m + 1 ? req->n - 1 : row[v].first - 1;
    int lost = 0;
    for (size_t w = u + 1; w < v; w++)
        lost |= row[w].kind == KEEP_OR_DROP;
    chat_role prev = u == 0 ? ROLE_USER : req->m[row[u].last].role;
    chat_placement pl = chat_marker_place_run(req, first, last, lost, u == 0, prev);
    if (!pl.need)
        return 0;
    size_t len;
    char *t = chat_marker_text(p, e, first, last, SIZE_MAX, lost, &len);
    if (!t)
        abort();
    int64_t c = chat_price_text_message(chat_role_name(pl.role), t, len, cnt);
    free(t);
    return c;
}

/* The least total by a shortest path over the units kept, every run between
 * two of them priced by rendered_run(): quadratic in the units, each run's
 * marker rendered in full. */
static int64_t least_by_runs(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                             const plan_result *base, const chat_item *items, size_t nitems)
{
    static unit_row row[MAX_MSGS + 2];
    static int64_t dp[MAX_MSGS + 2];
    static plan_entry e[MAX_MSGS];
    const int64_t none = INT64_MAX / 4;
    size_t m = 0, k = 0;
    memcpy(e, base->entries, req->n * sizeof(*e));
    for (size_t i = 0; i < req->n; i++) {
        unit_row *r = &row[++m];
        int own = p->classes.own[i] == CHAT_OWN_MARKER;
        *r = (unit_row){i, i, DROP_ALWAYS, 0, own, 0};
        if (p->units[i].cls == UNIT_PROTECTED) {
            r->kind = own ? KEEP_OR_DROP : KEEP_ALWAYS;
            r->keep = base->entries[i].cost;
            r->held = own;
            if (own)
                e[i] = (plan_entry){.decision = DECISION_DROPPED, .reason = DROP_OVER_BUDGET};
        } else if (k < nitems && items[k].first == i) {
            *r = (unit_row){i, items[k].last, KEEP_OR_DROP, items[k].keep_cost, own, 0};
            /* What a run that takes it lists. */
            for (size_t j = i; j <= items[k].last; j++)
                e[j] = (plan_entry){.decision = DECISION_DROPPED, .reason = DROP_OVER_BUDGET};
            i = items[k++].last;
        }
    }
    dp[0] = 0;
    for (size_t v = 1; v <= m + 1; v++) {
        int64_t best = none;
        int held_only = 1; /* the run between u and v */
        for (size_t u = v - 1;; u--) {
            int run = u + 1 < v;
            int beside = run && ((u > 0 && row[u].own) || (v <= m && row[v].own));
            if (dp[u] < none && !beside && !(run && held_only)) {
                int64_t c = dp[u] + (run ? rendered_run(req, p, cnt, e, row, m, u, v) : 0);
                best = c < best ? c : best;
            }
            if (u == 0 || row[u].kind == KEEP_ALWAYS)
                break; /* nothing kept joins a run */
            held_only &= row[u].held;
        }
        dp[v] = v <= m && row[v].kind == DROP_ALWAYS ? none : best + (v <= m ? row[v].keep : 0);
    }
    return dp[m + 1];
}

/* ---- The checks ---- */

typedef struct {
    const char *name;
    chat_counter cnt;
    size_t brute, runs_search, estimated, above; /* checked by each way, and above the least */
    size_t tails_brute, tails_unchecked;         /* with turns that end in a marker */
    int64_t gap;                                 /* by how much at most */
} counter_row;

/* Histories whose narration parted from the calls it made. */
static size_t narrated;

static void one(history *h, counter_row *c, long id, history_kind kind, int tails)
{
    const chat_counter *cnt = &c->cnt;
    chat_plan p;
    compactd_error err = {0};
    h->req.budget = INT64_C(1) << 40;
    if (chat_plan_run(&h->req, cnt, &p, &err) != 0) {
        check(0, "#%ld: planned at an ample budget: %s", id, err.message);
        chat_plan_free(&p);
        return;
    }
    for (size_t i = 0; i < h->req.n; i++)
        if (p.classes.calls_with[i] != SIZE_MAX) {
            narrated++;
            break;
        }
    int64_t need = p.required_budget;
    chat_item items[MAX_MSGS];
    size_t nitems = items_of(&p, h->req.mode == PLAN_DISCOVERY, items);
    /* Each kept item's form does not change the markers: the least plan
     * keeps every kept item in its cheapest kept form. */
    plan_result base;
    int64_t cheapest = 0;
    for (size_t i = 0; i < h->req.n; i++)
        if (p.units[i].cls == UNIT_PROTECTED)
            cheapest += p.units[i].tokens < p.units[i].pointer_tokens ? p.units[i].tokens
                                                                      : p.units[i].pointer_tokens;
    check(plan_run(p.units, h->req.n, cheapest, h->req.mode, &base) == PLAN_OK,
          "#%ld: the protected messages fit in their cheapest forms", id);
    int brute = nitems <= BRUTE_MAX_ITEMS;
    if (tails && !brute) {
        /* least_by_runs() knows nothing of turns that end in a marker:
         * only the budget's two sides are checked here. */
        plan_result_free(&base);
        chat_plan_free(&p);
        c->tails_unchecked++;
        goto sides;
    }
    c->tails_brute += tails;
    int64_t least =
        p.system_tokens + (brute ? brute_least(&h->req, &p, cnt, &base, items, nitems)
                                 : least_by_runs(&h->req, &p, cnt, &base, items, nitems));
    if (cnt->by_parts) {
        /* The search's own total is the least: every run it weighed was
         * priced as rendered, not only the one it chose. */
        unsigned char drop[MAX_MSGS];
        int64_t found = -1;
        int exact = chat_least_exact(&h->req, &p, cnt, &base, items, nitems, drop, &found);
        check(exact == 1 && p.system_tokens + found == least,
              "#%ld %s: the search by parts (%d) found %lld, the least plan is %lld", id, c->name,
              exact, (long long)(p.system_tokens + found), (long long)least);
    }
    plan_result_free(&base);
    /* Only a counter that does not count by parts may leave the search to
     * estimates (on the long runs) or price markers as though they took no
     * turn's marker in (where turns end in one). */
    if (!cnt->by_parts && (kind == HISTORY_RUNS || tails)) {
        check(need >= least, "#%ld %s: required_budget %lld below the least plan %lld", id, c->name,
              (long long)need, (long long)least);
        c->estimated++;
        c->above += need > least;
        c->gap = need - least > c->gap ? need - least : c->gap;
    } else {
        check(need == least, "#%ld %s (%s): required_budget %lld, the least plan %lld", id, c->name,
              brute ? "every choice" : "by runs", (long long)need, (long long)least);
        *(brute ? &c->brute : &c->runs_search) += 1;
    }
    chat_plan_free(&p);

sides:
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
    if (rc != 0) {
        check(p.failed_index == SIZE_MAX ||
                  (p.failed_index < h->req.n && p.units[p.failed_index].cls == UNIT_PROTECTED),
              "#%ld: the message named is protected", id);
        /* Its breakdown by kind adds up to it, largest first. */
        chat_required_share shares[REQUIRED_KINDS];
        size_t nk = chat_required_shares(&h->req, &p, shares);
        int64_t sum = 0;
        for (size_t k = 0; k < nk; k++) {
            sum += shares[k].tokens;
            check(shares[k].tokens > 0 && (k == 0 || shares[k].tokens <= shares[k - 1].tokens),
                  "#%ld: kind %zu of %zu out of order", id, k, nk);
        }
        check(sum == need, "#%ld: the kinds add up to %lld, not %lld", id, (long long)sum,
              (long long)need);
    }
    chat_plan_free(&p);
}

int main(int argc, char **argv)
{
    static history h;
    static char ids[MAX_MSGS][8];
    char err[512];
    if (argc < 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: chat_required_property RANKS_DIR [HISTORIES [SEED]] (%s)\n",
                argc >= 2 ? err : "");
        return 1;
    }
    size_t histories = argc > 2 ? (size_t)atol(argv[2]) : HISTORIES;
    if (argc > 3)
        rng_state = strtoull(argv[3], NULL, 0) * 2 + 1; /* odd, and one per seed */
    const chat_rules *rules[] = {&chat_openai_rules, &chat_anthropic_rules, &chat_responses_rules};
    const tokenizer *o200k = tokenizer_find("o200k_base", 10);
    const tokenizer *cl100k = tokenizer_find("cl100k_base", 11);
    counter_row counters[] = {
        {"bytes", {count_bytes, NULL, 1}, 0, 0, 0, 0, 0, 0, 0},
        {"o200k_base",
         {count_encoding, o200k, tokenizer_counts_by_parts(o200k)},
         0,
         0,
         0,
         0,
         0,
         0,
         0},
        {"cl100k_base",
         {count_encoding, cl100k, tokenizer_counts_by_parts(cl100k)},
         0,
         0,
         0,
         0,
         0,
         0,
         0},
        {"quarters", {count_quarters, NULL, 0}, 0, 0, 0, 0, 0, 0, 0},
    };
    for (long id = 0; (size_t)id < histories; id++) {
        history_kind kind = id % 8 == 7   ? HISTORY_RUNS
                            : id % 8 == 5 ? HISTORY_TURNS
                            : id % 4 == 3 ? HISTORY_LONG
                                          : HISTORY_SHORT;
        counter_row *c = &counters[below(4)];
        const chat_rules *r = rules[below(3)];
        if (kind == HISTORY_TURNS)
            random_turns(&h, r);
        else
            random_history(&h, r, kind, ids);
        int tails =
            kind == HISTORY_TURNS ? add_tails(&h, 3) > 0 : below(4) == 0 && add_tails(&h, 6) > 0;
        token_cache_clear();
        one(&h, c, id, kind, tails);
    }
    for (size_t k = 0; k < 4; k++) {
        counter_row *c = &counters[k];
        printf("%s: %zu least by every choice (%zu of them with turns that end in a marker), %zu "
               "by runs; %zu priced by estimate, %zu of them above the least (by at most %lld); "
               "%zu long with turns that end in a marker, only their budget's two sides checked\n",
               c->name, c->brute, c->tails_brute, c->runs_search, c->estimated, c->above,
               (long long)c->gap, c->tails_unchecked);
        check(c->brute >= histories / 20, "%s: enough histories small enough to try every choice",
              c->name);
        check(k == 3 || c->runs_search >= histories / 80, "%s: enough long histories by runs",
              c->name);
        check(c->tails_brute >= histories / 100, "%s: enough with turns that end in a marker",
              c->name);
    }
    check(counters[3].estimated >= histories / 60, "enough runs under the counter without parts");
    printf("%zu histories with narration apart from its calls\n", narrated);
    check(narrated >= histories / 20, "enough histories with narration apart from its calls");
    tokenizer_unload();
    return check_done("chat_required_property");
}
