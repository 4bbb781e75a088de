/* The format-neutral chat parts without a server: the provider rules
 * checker, classification (defaults, policy, annotations, the group rule),
 * and the token cache that makes a history sent again cost only its new
 * messages. */
#include "chat_check.h"
#include "chat_codec.h"
#include "chat_classify.h"
#include "chat_plan.h"
#include "chat_tools.h"
#include "chat_history.h"
#include "check.h"
#include "token_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S(lit) ((chat_str){(lit), sizeof(lit) - 1})

/* ---- The rules checker ---- */

static const chat_call CALLS_AB[] = {{S("a"), S("f"), S("{}")}, {S("b"), S("g"), S("{}")}};
static const chat_call CALLS_AA[] = {{S("a"), S("f"), S("{}")}, {S("a"), S("g"), S("{}")}};
static const chat_call CALLS_B_A[] = {{S("b"), S("f"), S("{}")}, {S("a"), S("g"), S("{}")}};
static const chat_str ANS_A[] = {S("a")}, ANS_B[] = {S("b")}, ANS_AB[] = {S("a"), S("b")},
                      ANS_Z[] = {S("z")};

#define MSG(r)                                                                                     \
    {                                                                                              \
        (r), NULL, 0, NULL, 0, 0, 0                                                                \
    }
/* A Responses reasoning item: the next message must join its turn. */
#define LEADER                                                                                     \
    {                                                                                              \
        ROLE_ASSISTANT, NULL, 0, NULL, 0, 0, 1                                                     \
    }
#define CALLER(c)                                                                                  \
    {                                                                                              \
        ROLE_ASSISTANT, (c), 2, NULL, 0, 0, 0                                                      \
    }
/* One call per message, joining the turn of the message before it. */
#define JOINED_CALL(c)                                                                             \
    {                                                                                              \
        ROLE_ASSISTANT, (c), 1, NULL, 0, 1, 0                                                      \
    }
#define ANSWER(r, a, n)                                                                            \
    {                                                                                              \
        (r), NULL, 0, (a), (n), 0, 0                                                               \
    }

typedef struct {
    const char *name;
    const chat_rules *rules;
    chat_check_msg m[6];
    size_t n;
    chat_check_problem want;
    size_t message, item;
} check_case;

static const chat_call CALL_A[] = {{S("a"), S("f"), S("{}")}},
                       CALL_B[] = {{S("b"), S("g"), S("{}")}};

static const check_case check_cases[] = {
    {"responses: reasoning followed by a call of its turn",
     &chat_responses_rules,
     {MSG(ROLE_USER), LEADER, JOINED_CALL(CALL_A), ANSWER(ROLE_TOOL, ANS_A, 1)},
     4,
     CHECK_OK,
     0,
     0},
    {"responses: reasoning followed by a message of another turn",
     &chat_responses_rules,
     {MSG(ROLE_USER), LEADER, MSG(ROLE_SYSTEM), JOINED_CALL(CALL_A), ANSWER(ROLE_TOOL, ANS_A, 1)},
     5,
     CHECK_LEADER_ALONE,
     1,
     0},
    {"responses: reasoning last",
     &chat_responses_rules,
     {MSG(ROLE_USER), LEADER},
     2,
     CHECK_LEADER_ALONE,
     1,
     0},
    {"responses: calls of one turn, one item each, answered after both",
     &chat_responses_rules,
     {MSG(ROLE_USER), JOINED_CALL(CALL_A), JOINED_CALL(CALL_B), ANSWER(ROLE_TOOL, ANS_A, 1),
      ANSWER(ROLE_TOOL, ANS_B, 1)},
     5,
     CHECK_OK,
     0,
     0},
    {"responses: a joined call left unanswered is named at its own item",
     &chat_responses_rules,
     {MSG(ROLE_USER), JOINED_CALL(CALL_A), JOINED_CALL(CALL_B), ANSWER(ROLE_TOOL, ANS_A, 1),
      MSG(ROLE_ASSISTANT)},
     5,
     CHECK_UNANSWERED_CALL,
     2,
     0},
    {"responses: a call after an answer opens a run of its own",
     &chat_responses_rules,
     {JOINED_CALL(CALL_A), ANSWER(ROLE_TOOL, ANS_A, 1), JOINED_CALL(CALL_B),
      ANSWER(ROLE_TOOL, ANS_A, 1)},
     4,
     CHECK_ORPHAN_RESULT,
     3,
     0},
    {"responses: a call id used twice in one turn",
     &chat_responses_rules,
     {JOINED_CALL(CALL_A), JOINED_CALL(CALL_A), ANSWER(ROLE_TOOL, ANS_A, 1)},
     3,
     CHECK_DUPLICATE_CALL_ID,
     1,
     0},
    {"openai: calls answered one by one",
     &chat_openai_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_TOOL, ANS_B, 1), ANSWER(ROLE_TOOL, ANS_A, 1),
      MSG(ROLE_ASSISTANT)},
     5,
     CHECK_OK,
     0,
     0},
    {"openai: orphaned result",
     &chat_openai_rules,
     {MSG(ROLE_USER), ANSWER(ROLE_TOOL, ANS_A, 1)},
     2,
     CHECK_ORPHAN_RESULT,
     1,
     0},
    {"openai: result after another message is orphaned",
     &chat_openai_rules,
     {CALLER(CALLS_AB), ANSWER(ROLE_TOOL, ANS_A, 1), MSG(ROLE_USER), ANSWER(ROLE_TOOL, ANS_B, 1)},
     4,
     CHECK_UNANSWERED_CALL,
     0,
     1},
    {"openai: unanswered call at the end",
     &chat_openai_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_TOOL, ANS_A, 1)},
     3,
     CHECK_UNANSWERED_CALL,
     1,
     1},
    {"openai: answered twice",
     &chat_openai_rules,
     {CALLER(CALLS_AB), ANSWER(ROLE_TOOL, ANS_A, 1), ANSWER(ROLE_TOOL, ANS_A, 1)},
     3,
     CHECK_DUPLICATE_ANSWER,
     2,
     0},
    {"openai: two calls with one id",
     &chat_openai_rules,
     {CALLER(CALLS_AA)},
     1,
     CHECK_DUPLICATE_CALL_ID,
     0,
     1},
    {"anthropic: results in the next turn",
     &chat_anthropic_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_USER, ANS_AB, 2), MSG(ROLE_ASSISTANT)},
     4,
     CHECK_OK,
     0,
     0},
    {"anthropic: a result of no call of the turn before",
     &chat_anthropic_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_USER, ANS_Z, 1)},
     3,
     CHECK_ORPHAN_RESULT,
     2,
     0},
    {"anthropic: a call not answered in the next turn",
     &chat_anthropic_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_USER, ANS_A, 1), MSG(ROLE_ASSISTANT)},
     4,
     CHECK_UNANSWERED_CALL,
     1,
     1},
    {"anthropic: two user turns",
     &chat_anthropic_rules,
     {MSG(ROLE_USER), MSG(ROLE_USER)},
     2,
     CHECK_ALTERNATION,
     1,
     0},
    {"anthropic: assistant first",
     &chat_anthropic_rules,
     {MSG(ROLE_ASSISTANT)},
     1,
     CHECK_ALTERNATION,
     0,
     0},
    {"anthropic: a tool_use id of an earlier turn used again",
     &chat_anthropic_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_USER, ANS_AB, 2), CALLER(CALLS_B_A),
      ANSWER(ROLE_USER, ANS_AB, 2)},
     5,
     CHECK_REUSED_CALL_ID,
     3,
     0},
    {"openai: an id of an earlier message used again",
     &chat_openai_rules,
     {MSG(ROLE_USER), CALLER(CALLS_AB), ANSWER(ROLE_TOOL, ANS_A, 1), ANSWER(ROLE_TOOL, ANS_B, 1),
      CALLER(CALLS_B_A), ANSWER(ROLE_TOOL, ANS_AB, 2)},
     6,
     CHECK_OK,
     0,
     0},
};

static void check_rules(void)
{
    for (size_t i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
        const check_case *c = &check_cases[i];
        chat_check_result r = chat_check(c->rules, c->m, c->n);
        check(r.problem == c->want, "%s: problem %d, want %d", c->name, r.problem, c->want);
        if (c->want != CHECK_OK)
            check(r.message == c->message && r.item == c->item, "%s: at %zu/%zu, want %zu/%zu",
                  c->name, r.message, r.item, c->message, c->item);
    }
    (void)ANS_B;
}

/* A million calls in one message, answered in one turn (Anthropic) or one
 * message each (OpenAI), the last answer missing: the checker must find it
 * in time linear in the calls. Comparing each id with every other, as a
 * pairwise search does, takes 5 x 10^11 comparisons, which no machine does
 * within the test's timeout; the hash map takes well under a second. */
#define MANY_CALLS 1000000

static void check_many_calls(void)
{
    char *ids = malloc((size_t)MANY_CALLS * 8);
    chat_call *calls = malloc((size_t)MANY_CALLS * sizeof(*calls));
    chat_str *answers = malloc((size_t)MANY_CALLS * sizeof(*answers));
    chat_check_msg *m = malloc(((size_t)MANY_CALLS + 2) * sizeof(*m));
    if (!ids || !calls || !answers || !m) {
        fail("out of memory for %d calls", MANY_CALLS);
        goto done;
    }
    for (size_t k = 0; k < MANY_CALLS; k++) {
        snprintf(ids + 8 * k, 8, "%07zu", k);
        calls[k] = (chat_call){{ids + 8 * k, 7}, S("f"), S("{}")};
    }
    for (size_t k = 0; k < MANY_CALLS; k++)
        answers[k] = calls[MANY_CALLS - 1 - k].id; /* answered in reverse */
    m[0] = (chat_check_msg)MSG(ROLE_USER);
    m[1] = (chat_check_msg){ROLE_ASSISTANT, calls, MANY_CALLS, NULL, 0, 0, 0};
    m[2] = (chat_check_msg){ROLE_USER, NULL, 0, answers, MANY_CALLS - 1, 0, 0};
    chat_check_result r = chat_check(&chat_anthropic_rules, m, 3);
    check(r.problem == CHECK_UNANSWERED_CALL && r.message == 1 && r.item == 0,
          "anthropic: %d calls, the first unanswered: problem %d at %zu/%zu", MANY_CALLS, r.problem,
          r.message, r.item);
    for (size_t k = 0; k + 1 < MANY_CALLS; k++)
        m[2 + k] = (chat_check_msg){ROLE_TOOL, NULL, 0, &answers[k], 1, 0, 0};
    r = chat_check(&chat_openai_rules, m, MANY_CALLS + 1);
    check(r.problem == CHECK_UNANSWERED_CALL && r.message == 1 && r.item == 0,
          "openai: %d calls, the first unanswered: problem %d at %zu/%zu", MANY_CALLS, r.problem,
          r.message, r.item);
    calls[MANY_CALLS - 1].id = calls[0].id;
    r = chat_check(&chat_openai_rules, m, 2);
    check(r.problem == CHECK_DUPLICATE_CALL_ID && r.message == 1 && r.item == MANY_CALLS - 1,
          "openai: the last of %d calls repeats the first's id: problem %d at %zu/%zu", MANY_CALLS,
          r.problem, r.message, r.item);
done:
    free(ids);
    free(calls);
    free(answers);
    free(m);
}

static void check_classes(void)
{
    static chat_str protect[] = {S("apply_migration")}, redundant[] = {S("list_dir")},
                    read_only[] = {S("read_*"), S("grep")};
    history h;
    history_init(&h, &chat_openai_rules);
    add(&h, ROLE_SYSTEM, "system");                       /* 0 protected */
    add(&h, ROLE_USER, "task");                           /* 1 protected */
    add_exchange(&h, "read_file", "{\"p\":1}", "c1");     /* 2,3 superseded by 8,9 */
    add_exchange(&h, "apply_migration", "{}", "c2");      /* 4,5 protected */
    add_exchange(&h, "list_dir", "{}", "c3");             /* 6,7 redundant */
    add_exchange(&h, "read_file", "{\"p\":1}", "c4");     /* 8,9 derivable */
    chat_message *note = add(&h, ROLE_ASSISTANT, "note"); /* 10 annotated redundant */
    add_exchange(&h, "grep", "{}", "c5");                 /* 11,12 result annotated protected */
    add(&h, ROLE_ASSISTANT, "thinking");                  /* 13 protected: assistant prose */
    add(&h, ROLE_USER, "next");                           /* 14 protected (and last two) */
    add(&h, ROLE_ASSISTANT, "answer");                    /* 15 protected: keep_last */
    note->note.has_class = 1;
    note->note.cls = UNIT_REDUNDANT;
    h.m[12].note.has_class = 1;
    h.m[12].note.cls = UNIT_PROTECTED;
    h.req.policy.protect_tools = (chat_names){protect, 1};
    h.req.policy.redundant_tools = (chat_names){redundant, 1};
    h.req.policy.read_only_tools = (chat_names){read_only, 2};

    static const unit_class want[] = {
        UNIT_PROTECTED, UNIT_PROTECTED, UNIT_REDUNDANT, UNIT_REDUNDANT,
        UNIT_PROTECTED, UNIT_PROTECTED, UNIT_REDUNDANT, UNIT_REDUNDANT,
        UNIT_DERIVABLE, UNIT_DERIVABLE, UNIT_REDUNDANT, UNIT_PROTECTED,
        UNIT_PROTECTED, UNIT_PROTECTED, UNIT_PROTECTED, UNIT_PROTECTED};
    chat_classes c;
    check(chat_classify(&h.req, &c) == 0, "classify ran");
    for (size_t i = 0; i < h.req.n; i++)
        check(c.cls[i] == want[i], "message %zu: class %s, want %s", i, unit_class_name(c.cls[i]),
              unit_class_name(want[i]));
    check(c.owner[9] == 8 && c.owner[13] == SIZE_MAX, "exchanges found");
    check(c.hint[9].len == strlen("read_file {\"p\":1}") &&
              memcmp(c.hint[9].s, "read_file {\"p\":1}", c.hint[9].len) == 0,
          "a result's hint is its call");
    chat_classes_free(&c);
}

/* Two lists' wildcards that share names without either matching the
 * other are a valid policy: a call they both match takes the stronger
 * list, protect over redundant over read-only, and a protected call is
 * never offered as a way back. */
static void check_overlapping_wildcards(void)
{
    static chat_str protect[] = {S("*_secret"), S("*_log")}, redundant[] = {S("tail_*"), S("*_dir")},
                    read_only[] = {S("read_*"), S("list_*")};
    static const struct {
        const char *tool;
        unit_class want;
        int hinted;
    } cases[] = {
        {"read_secret", UNIT_PROTECTED, 0}, /* read-only and protected */
        {"tail_log", UNIT_PROTECTED, 0},    /* redundant and protected */
        {"list_dir", UNIT_REDUNDANT, 1},    /* read-only and redundant */
        {"read_config", UNIT_DERIVABLE, 1}, /* read-only alone */
        {"write_file", UNIT_PROTECTED, 0},  /* no list: may have side effects */
    };
    history h;
    history_init(&h, &chat_openai_rules);
    add(&h, ROLE_USER, "task");
    static char args[8][16];
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        snprintf(args[i], sizeof(args[i]), "{\"n\":%zu}", i);
        add_exchange(&h, cases[i].tool, args[i], args[i]);
    }
    add(&h, ROLE_USER, "next");
    add(&h, ROLE_ASSISTANT, "answer");
    h.req.policy.keep_last = 0;
    h.req.policy.protect_tools = (chat_names){protect, 2};
    h.req.policy.redundant_tools = (chat_names){redundant, 2};
    h.req.policy.read_only_tools = (chat_names){read_only, 2};
    size_t j;
    check(chat_tools_overlap(&h.req.policy.read_only_tools, &h.req.policy.protect_tools, &j) ==
              SIZE_MAX,
          "wildcards that only share names are no contradiction");
    chat_classes c;
    check(chat_classify(&h.req, &c) == 0, "classify ran");
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        size_t call = 1 + 2 * i, result = call + 1;
        check(c.cls[call] == cases[i].want && c.cls[result] == cases[i].want,
              "%s: class %s and %s, want %s", cases[i].tool, unit_class_name(c.cls[call]),
              unit_class_name(c.cls[result]), unit_class_name(cases[i].want));
        check((c.hint[result].len > 0) == cases[i].hinted, "%s: hint '%.*s'", cases[i].tool,
              (int)c.hint[result].len, c.hint[result].s ? c.hint[result].s : "");
    }
    chat_classes_free(&c);
}

/* ---- The token cache ---- */

typedef struct {
    const history *h;
    size_t payload_counts[MAX_MSGS];
    size_t pointer_counts; /* texts counted that are pointers */
} counting;

/* Counts bytes, and notes which message's payload was counted. */
static int64_t count_noting(const void *ctx, const char *text, size_t len)
{
    counting *c = (counting *)ctx;
    if (len >= 14 && memcmp(text, "[externalized ", 14) == 0)
        c->pointer_counts++;
    for (size_t i = 0; i < c->h->req.n; i++) {
        const chat_message *m = &c->h->m[i];
        if (text == c->h->text[i] || (m->n_calls && text == m->calls[0].args.s))
            c->payload_counts[i]++;
    }
    return (int64_t)len;
}

static void check_turn_over_turn(void)
{
    history h;
    history_init(&h, &chat_openai_rules);
    add(&h, ROLE_USER, "task");
    static char ids[6][8];
    for (int k = 0; k < 6; k++) {
        snprintf(ids[k], sizeof(ids[k]), "c%d", k);
        add_exchange(&h, "read_file", k % 2 ? "{\"p\":1}" : "{\"p\":2}", ids[k]);
    }
    static chat_str read_only[] = {S("read_file"), S("grep")};
    h.req.policy.read_only_tools = (chat_names){read_only, 2};
    h.req.budget = 800;
    counting cnt = {&h, {0}, 0};
    chat_counter counter = {count_noting, &cnt, 1};
    chat_plan p;
    compactd_error err = {0};

    token_cache_clear();
    check(chat_plan_run(&h.req, &counter, &p, &err) == 0, "first turn planned: %s", err.message);
    for (size_t i = 0; i < h.req.n; i++)
        check(cnt.payload_counts[i] == 1, "first turn counts message %zu once (%zu)", i,
              cnt.payload_counts[i]);
    check(p.used_tokens <= h.req.budget, "within budget");
    check(p.n_markers > 0, "something was dropped and marked");
    /* Only a protected message is ever externalized in strict mode: only
     * its pointer is priced, once. */
    size_t pointing = 0;
    for (size_t i = 0; i < h.req.n; i++)
        pointing += p.units[i].cls == UNIT_PROTECTED;
    check(pointing > 0 && pointing < h.req.n, "some messages protected, some not (%zu)", pointing);
    check(cnt.pointer_counts == pointing,
          "first turn counts each protected message's pointer once (%zu of %zu)",
          cnt.pointer_counts, pointing);
    chat_plan_free(&p);

    /* The same history and two new messages: only those are counted. */
    size_t before = h.req.n;
    add_exchange(&h, "grep", "{\"q\":3}", "c9");
    memset(cnt.payload_counts, 0, sizeof(cnt.payload_counts));
    cnt.pointer_counts = 0;
    check(chat_plan_run(&h.req, &counter, &p, &err) == 0, "second turn planned: %s", err.message);
    for (size_t i = 0; i < h.req.n; i++)
        check(cnt.payload_counts[i] == (i >= before), "second turn counts message %zu %s (%zu)", i,
              i >= before ? "once" : "never", cnt.payload_counts[i]);
    /* Pointers too: only the new protected messages' are counted. */
    size_t new_pointing = 0;
    for (size_t i = before; i < h.req.n; i++)
        new_pointing += p.units[i].cls == UNIT_PROTECTED;
    check(cnt.pointer_counts == new_pointing, "second turn counts %zu pointers, not %zu",
          new_pointing, cnt.pointer_counts);
    chat_plan_free(&p);

    /* In discovery mode any message may be externalized: every message
     * with a carrier has its pointer priced. */
    h.req.mode = PLAN_DISCOVERY;
    cnt.pointer_counts = 0;
    token_cache_clear();
    check(chat_plan_run(&h.req, &counter, &p, &err) == 0, "discovery planned: %s", err.message);
    size_t carriers = 0;
    for (size_t i = 0; i < h.req.n; i++) /* a message with no carrier has no pointer */
        carriers += h.req.m[i].text_slots + h.req.m[i].json_slots > 0;
    check(carriers > pointing && cnt.pointer_counts == carriers,
          "discovery prices all %zu pointers (%zu)", carriers, cnt.pointer_counts);
    chat_plan_free(&p);
    h.req.mode = PLAN_STRICT;

    /* Another tokenizer shares nothing with the first. */
    counting other = {&h, {0}, 0};
    chat_counter counter2 = {count_noting, &other, 1};
    check(chat_plan_run(&h.req, &counter2, &p, &err) == 0, "third plan");
    check(other.payload_counts[0] == 1, "a different tokenizer counts again");
    chat_plan_free(&p);
}

/* ---- Never an empty history ---- */

/* A history of one redundant message: dropping it would leave nothing to
 * send, which no provider takes; a marker stands in for it. */
static void check_never_empty(void)
{
    const chat_rules *rules[] = {&chat_openai_rules, &chat_anthropic_rules};
    static const chat_role want[] = {ROLE_SYSTEM, ROLE_USER};
    for (int f = 0; f < 2; f++) {
        history h;
        history_init(&h, rules[f]);
        chat_message *m = add(&h, ROLE_USER, "hello");
        m->note.has_class = 1;
        m->note.cls = UNIT_REDUNDANT;
        chat_counter counter = {count_bytes, NULL, 1};
        chat_plan p;
        compactd_error err = {0};
        token_cache_clear();
        check(chat_plan_run(&h.req, &counter, &p, &err) == 0, "rules %d: planned: %s", f,
              err.message);
        check(p.c.plan.entries[0].decision == DECISION_DROPPED, "rules %d: the message is dropped",
              f);
        check(p.n_markers == 1, "rules %d: one marker stands for it (%zu)", f, p.n_markers);
        if (p.n_markers == 1)
            check(p.markers[0].place == MARKER_STANDALONE && p.markers[0].role == want[f] &&
                      p.used_tokens == p.markers[0].tokens,
                  "rules %d: a %s message of its own, all the tokens used", f,
                  chat_role_name(want[f]));
        chat_plan_free(&p);
    }
}

int main(void)
{
    check_rules();
    check_many_calls();
    check_classes();
    check_overlapping_wildcards();
    check_turn_over_turn();
    check_never_empty();
    return check_done("chat_cases");
}
