/* Narration beside read-only calls: an assistant message whose prose is all
 * that protects its exchange leaves it, so that at a budget too small for
 * the reads their outputs go (with their calls, the marker offering them
 * again) while the prose stays, in each format as its provider takes it.
 * An exchange with a call of side effects is never split, also where a
 * finished turn's reasoning sits inside it (Responses). Decoded, planned
 * and rendered as the server does; the bytes tokenizer, so that every
 * price is the rendered text's bytes. */
#include "bytes_counter.h"
#include "chat_classify.h"
#include "chat_codec.h"
#include "chat_plan.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static const decode_limits limits = {64, 64, 1 << 20, 1 << 20, 100};

/* Longer than the marker that stands for it. */
#define OUTPUT                                                                                     \
    "int parse(const char *s) { return atoi(s) + 1; } /* the bug */ int main(void) { return "      \
    "parse(\\\"41\\\") == 42 ? 0 : 1; } /* and eighty more lines of the parser, its tests and "    \
    "the fixtures they read, none of which the next step needs verbatim */"
/* A Responses task, then one response: its reasoning, its narration and
 * its read, then the read's output (a JSON array left open). */
#define RESPONSES_NARRATED_READ                                                                    \
    "[{\"role\":\"user\",\"content\":\"Fix the parser.\"},"                                        \
    "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"gAAAAA\"},"    \
    "{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":"        \
    "\"output_text\",\"text\":\"Reading the parser first.\"}]},"                                   \
    "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"read_file\",\"arguments\":"     \
    "\"{\\\"path\\\":\\\"a.c\\\"}\"},"                                                             \
    "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"" OUTPUT "\"},"
#define POLICY "\"policy\":{\"read_only_tools\":[\"read_file\"],\"keep_last\":1}"

/* Plans body (a messages/compact request) and writes its answer. Returns
 * the answer's JSON (free()) or NULL, with the plan in p. */
static char *planned(const char *body, chat_input *in, chat_plan *p)
{
    compactd_error err = {0};
    memset(p, 0, sizeof(*p));
    if (chat_decode_compact(body, strlen(body), &limits, in, &err) != 0) {
        fail("refused: %s at %s", err.message, err.path);
        return NULL;
    }
    if (chat_plan_run(&in->req, &bytes, p, &err) != 0) {
        fail("not planned: %s", err.message);
        return NULL;
    }
    check(chat_output_valid(in, p) == 0, "the answer keeps the provider's rules");
    size_t len;
    return chat_encode_answer("s", in, p, &len);
}

typedef struct {
    const char *name;
    const char *messages; /* the history: a task, narrated read, then a user turn */
    const char *format;
    const char *prose_rendered; /* the narration as the answer renders it without its calls */
} narrated_case;

static const narrated_case narrated[] = {
    {"openai",
     "[{\"role\":\"user\",\"content\":\"Fix the parser.\"},"
     "{\"role\":\"assistant\",\"content\":\"Reading the parser first.\",\"tool_calls\":[{\"id\":"
     "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":"
     "\"{\\\"path\\\":\\\"a.c\\\"}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"" OUTPUT "\"},"
     "{\"role\":\"user\",\"content\":\"Go on.\"}]",
     "openai", "{\"role\":\"assistant\",\"content\":\"Reading the parser first.\"}"},
    {"anthropic",
     "[{\"role\":\"user\",\"content\":\"Fix the parser.\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Reading the parser "
     "first.\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":{"
     "\"path\":\"a.c\"}}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\","
     "\"content\":\"" OUTPUT "\"}]},"
     "{\"role\":\"assistant\",\"content\":\"Found it.\"},"
     "{\"role\":\"user\",\"content\":\"Go on.\"}]",
     "anthropic",
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Reading the parser "
     "first.\"}]}"},
    {"responses", RESPONSES_NARRATED_READ "{\"role\":\"user\",\"content\":\"Go on.\"}]",
     /* A finished turn's: without its id, as its reasoning went. */
     "openai-responses",
     "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"Reading the parser first.\"}"},
};

/* The narrated read at a budget that holds everything but the read: the
 * prose stays, the call and output go, the marker offers the read. */
static void narration_stays(const narrated_case *c)
{
    char body[4096];
    chat_input in;
    chat_plan p;
    snprintf(body, sizeof body,
             "{\"format\":\"%s\",\"budget\":100000,\"tokenizer\":\"bytes\"," POLICY
             ",\"messages\":%s}",
             c->format, c->messages);
    char *whole = planned(body, &in, &p);
    int64_t full = p.used_tokens, required = p.required_budget;
    size_t n = in.req.n, narration = c->format[6] == '-' ? 2 : 1;
    check(p.classes.cls[narration] == UNIT_PROTECTED && p.classes.owner[narration] == SIZE_MAX,
          "%s: the narration is protected and in no exchange", c->name);
    check(p.classes.cls[narration + 1] == UNIT_DERIVABLE, "%s: its read is derivable", c->name);
    check(whole && strstr(whole, OUTPUT) && !strstr(whole, "calls_dropped"),
          "%s: with room, the read stays whole", c->name);
    check(required < full, "%s: the read can go (%lld of %lld)", c->name, (long long)required,
          (long long)full);
    free(whole);
    chat_plan_free(&p);
    chat_input_free(&in);

    snprintf(body, sizeof body,
             "{\"format\":\"%s\",\"budget\":%lld,\"tokenizer\":\"bytes\"," POLICY
             ",\"messages\":%s}",
             c->format, (long long)required, c->messages);
    char *answer = planned(body, &in, &p);
    check(answer && strstr(answer, c->prose_rendered) != NULL, "%s: the prose stays: %s", c->name,
          answer ? answer : "");
    check(answer && !strstr(answer, OUTPUT), "%s: the output goes", c->name);
    check(answer && strstr(answer, "Re-acquire before relying on them: read_file "
                                   "{\\\"path\\\":\\\"a.c\\\"}") != NULL,
          "%s: the marker offers the read", c->name);
    if (strcmp(c->format, "openai-responses") != 0)
        check(answer && strstr(answer, "\"calls_dropped\":1") != NULL &&
                  chat_plan_calls_dropped(&p, narration),
              "%s: the narration says its call went", c->name);
    check(p.c.plan.entries[narration].decision == DECISION_PRESERVED &&
              p.c.plan.entries[n - 1].decision == DECISION_PRESERVED,
          "%s: the narration and the last turn preserved", c->name);
    free(answer);
    chat_plan_free(&p);
    chat_input_free(&in);
}

/* A call of side effects beside prose: the exchange stays whole at any
 * budget, and so where a finished turn's reasoning stands between the
 * prose that opened the turn and its call. */
static void side_effects_never_split(void)
{
    static const char *const bodies[] = {
        "{\"format\":\"openai\",\"budget\":100000,\"tokenizer\":\"bytes\"," POLICY
        ",\"messages\":[{\"role\":\"user\",\"content\":\"Ship it.\"},"
        "{\"role\":\"assistant\",\"content\":\"Committing.\",\"tool_calls\":[{\"id\":\"c1\","
        "\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"" OUTPUT "\"},"
        "{\"role\":\"user\",\"content\":\"Go on.\"}]}",
        /* One response's prose, then, with no user turn between, another's
         * reasoning and call: one turn, the reasoning finished. */
        "{\"format\":\"openai-responses\",\"budget\":100000,\"tokenizer\":\"bytes\"," POLICY
        ",\"messages\":[{\"role\":\"user\",\"content\":\"Ship it.\"},"
        "{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":"
        "\"output_text\",\"text\":\"Status: ready.\"}]},"
        "{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],\"encrypted_content\":\"gAAAAA\"},"
        "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"run_shell\",\"arguments\":\"{}"
        "\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"" OUTPUT "\"},"
        "{\"role\":\"user\",\"content\":\"Go on.\"}]}",
    };
    for (size_t k = 0; k < sizeof(bodies) / sizeof(bodies[0]); k++) {
        chat_input in;
        chat_plan p;
        char *answer = planned(bodies[k], &in, &p);
        for (size_t i = 1; answer && i + 1 < in.req.n; i++)
            check(p.classes.cls[i] == UNIT_PROTECTED || in.req.m[i].stale,
                  "case %zu: message %zu of the exchange is protected", k, i);
        for (size_t i = 0; answer && i < in.req.n; i++)
            check(p.classes.calls_with[i] == SIZE_MAX, "case %zu: no narration apart", k);
        free(answer);
        /* At the least budget the call and its result are still there, the
         * result behind its pointer. */
        char body[4096];
        snprintf(body, sizeof body, "%.*s%lld%s", (int)(strstr(bodies[k], "100000") - bodies[k]),
                 bodies[k], (long long)p.required_budget, strstr(bodies[k], "100000") + 6);
        chat_plan_free(&p);
        chat_input_free(&in);
        answer = planned(body, &in, &p);
        check(answer && strstr(answer, "run_shell") && strstr(answer, "[externalized c1.result"),
              "case %zu: the call and its result stay: %s", k, answer ? answer : "");
        free(answer);
        chat_plan_free(&p);
        chat_input_free(&in);
    }
}

/* Responses, the turn in flight: an earlier response's reasoning led to
 * its narration (content) and its read, then the last response. */
static void in_flight(const char *content, char *out, size_t size)
{
    snprintf(
        out, size,
        "[{\"role\":\"user\",\"content\":\"Fix the parser.\"},"
        "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"gAAAAA\"},"
        "{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":%s},"
        "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":"
        "\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.c\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"" OUTPUT "\"},"
        "{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],\"encrypted_content\":\"gAAAAB\"},"
        "{\"type\":\"function_call\",\"id\":\"fc_2\",\"call_id\":\"call_2\",\"name\":"
        "\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"b.c\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_2\",\"output\":\"int b;\"}]",
        content);
}

/* At the least budget the read's call and output go, and the last response
 * stays whole. Narration of one text: its reasoning goes with the read it
 * led to (as a response's that did not narrate would), and the narration
 * stays without its id (the API refuses a message whose reasoning is not
 * sent), priced as the same text. Narration of two texts would not render
 * the same so: its reasoning stays with it, one protected exchange
 * (reasoning goes back with the item after it). */
static void reasoning_with_narrated_read(int one_text)
{
    char messages[2048], body[4096];
    in_flight(one_text ? "[{\"type\":\"output_text\",\"text\":\"Reading the parser first.\"}]"
                       : "[{\"type\":\"output_text\",\"text\":\"Reading \"},"
                         "{\"type\":\"output_text\",\"text\":\"the parser first.\"}]",
              messages, sizeof messages);
    const char *name = one_text ? "one text" : "two texts";
    chat_input in;
    chat_plan p;
    snprintf(body, sizeof body,
             "{\"format\":\"openai-responses\",\"budget\":100000,\"tokenizer\":\"bytes\"," POLICY
             ",\"messages\":%s}",
             messages);
    char *whole = planned(body, &in, &p);
    check(whole && !in.req.m[1].stale && !in.req.m[1].pinned && in.req.m[5].pinned,
          "%s: rs_1 in flight, rs_2 the last response's", name);
    check(p.classes.cls[2] == UNIT_PROTECTED && p.classes.owner[2] == (one_text ? SIZE_MAX : 1),
          "%s: the narration is protected", name);
    if (one_text)
        check(chat_leads_calls(&in.req, &p.classes, 1) && p.classes.calls_with[1] == 3 &&
                  p.classes.calls_with[2] == 3 && p.units[1].tokens == 0,
              "%s: rs_1 goes with the read, priced with it", name);
    else
        check(p.classes.owner[1] == 1 && !chat_leads_calls(&in.req, &p.classes, 1),
              "%s: rs_1 and the narration are one exchange", name);
    check(p.classes.cls[3] == UNIT_DERIVABLE && p.classes.cls[4] == UNIT_DERIVABLE &&
              p.classes.owner[3] == 3 && p.classes.owner[4] == 3,
          "%s: the read is an exchange of its own, derivable", name);
    check(whole && strstr(whole, OUTPUT) && strstr(whole, "\"rs_1\"") && strstr(whole, "\"msg_1\""),
          "%s: with room, all stays as sent", name);
    int64_t required = p.required_budget;
    free(whole);
    chat_plan_free(&p);
    chat_input_free(&in);

    snprintf(body, sizeof body,
             "{\"format\":\"openai-responses\",\"budget\":%lld,\"tokenizer\":\"bytes\"," POLICY
             ",\"messages\":%s}",
             (long long)required, messages);
    char *answer = planned(body, &in, &p);
    const plan_entry *e = answer ? p.c.plan.entries : NULL;
    check(e && e[3].decision == DECISION_DROPPED && e[4].decision == DECISION_DROPPED &&
              !strstr(answer, OUTPUT) && !strstr(answer, "\"call_1\""),
          "%s: the read's call and output go: %s", name, answer ? answer : "");
    if (one_text) {
        check(answer && !strstr(answer, "\"rs_1\"") && !strstr(answer, "\"msg_1\"") &&
                  strstr(answer, "{\"type\":\"message\",\"role\":\"assistant\",\"content\":"
                                 "\"Reading the parser first.\"}"),
              "%s: rs_1 goes, the narration stays without its id: %s", name, answer ? answer : "");
        check(answer && strstr(answer, "{\"index\":1,\"class\":\"derivable\",\"decision\":"
                                       "\"dropped\",\"tokens\":"),
              "%s: rs_1 reported dropped with the read", name);
    } else {
        check(e && e[1].decision == DECISION_PRESERVED && e[2].decision == DECISION_PRESERVED &&
                  strstr(answer, "\"rs_1\"") && strstr(answer, "\"msg_1\""),
              "%s: rs_1 and the narration stay as sent", name);
    }
    check(answer && strstr(answer, "Re-acquire before relying on them: read_file "
                                   "{\\\"path\\\":\\\"a.c\\\"}") != NULL,
          "%s: the marker offers the read", name);
    check(answer && !strstr(answer, "no re-acquire hint"), "%s: one marker, the read's", name);
    for (size_t i = 5; e && i < in.req.n; i++)
        check(e[i].decision == DECISION_PRESERVED, "%s: item %zu of the last response kept", name,
              i);
    free(answer);
    chat_plan_free(&p);
    chat_input_free(&in);
}

int main(void)
{
    for (size_t k = 0; k < sizeof(narrated) / sizeof(narrated[0]); k++)
        narration_stays(&narrated[k]);
    side_effects_never_split();
    reasoning_with_narrated_read(1);
    reasoning_with_narrated_read(0);
    return check_done("narration_cases");
}
