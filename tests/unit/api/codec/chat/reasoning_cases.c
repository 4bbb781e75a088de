/* Reasoning state as the providers treat it: the thinking and reasoning of
 * finished turns is redundant (stripped from its Anthropic turn, a Responses
 * item dropped without a marker, never part of what a plan needs), that of
 * the turn in flight pinned as sent; encrypted parts priced by their bound,
 * one token per decoded byte, the rest by the tokenizer. */
#include "bytes_counter.h"
#include "chat_classify.h"
#include "chat_codec.h"
#include "chat_plan.h"
#include "chat_price.h"
#include "check.h"
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

static const decode_limits limits = {64, 64, 1 << 20, 1 << 20, 100};

static int decode(const char *body, chat_input *in)
{
    compactd_error err = {0};
    int rc = chat_decode_compact(body, strlen(body), &limits, in, &err);
    if (rc != 0)
        fail("refused: %s at %s", err.message, err.path);
    return rc;
}

static void the_bound(void)
{
    check(chat_encrypted_tokens(0) == 0, "nothing encrypted costs nothing");
    /* Base64 of n bytes is 4 ceil(n / 3) characters: the bound covers n. */
    for (size_t n = 1; n < 5000; n += 7) {
        size_t chars = 4 * ((n + 2) / 3);
        int64_t t = chat_encrypted_tokens(chars);
        check(t >= (int64_t)n && t <= (int64_t)n + 2, "%zu bytes in %zu characters: %lld", n, chars,
              (long long)t);
    }
    /* Unpadded (base64url) too, and never more than the characters. */
    for (size_t chars = 1; chars < 64; chars++)
        check(chat_encrypted_tokens(chars) == (int64_t)((3 * chars + 3) / 4) &&
                  chat_encrypted_tokens(chars) <= (int64_t)chars,
              "%zu characters", chars);
}

#define SIG "EqQBCkYIBxgCKkB1c2lnbmF0dXJl" /* 28 characters */
#define THINK(t) "{\"type\":\"thinking\",\"thinking\":\"" t "\",\"signature\":\"" SIG "\"}"
#define USE(id)                                                                                    \
    "{\"type\":\"tool_use\",\"id\":\"" id "\",\"name\":\"read_file\",\"input\":{\"path\":\"" id    \
    ".c\"}}"
#define RESULT(id)                                                                                 \
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"" id              \
    "\",\"content\":\"int x;\"}]}"

static void anthropic_thinking(void)
{
    /* A finished turn with thinking and a call, a finished turn of thinking
     * alone, then the loop in flight. */
    const char *body =
        "{\"format\":\"anthropic\",\"budget\":100000,\"tokenizer\":\"bytes\","
        "\"policy\":{\"keep_last\":0,\"read_only_tools\":[\"read_file\"]},"
        "\"annotations\":[{\"index\":5,\"class\":\"derivable\"}],\"messages\":["
        "{\"role\":\"user\",\"content\":\"Why?\"},"
        "{\"role\":\"assistant\",\"content\":[" THINK("Read a.c.") "," USE("t1") "]}," RESULT(
            "t1") ","
                  "{\"role\":\"assistant\",\"content\":[" THINK(
                      "Nothing to add.") "]},"
                                         "{\"role\":\"user\",\"content\":\"Fix it.\"},"
                                         "{\"role\":\"assistant\",\"content\":[" THINK(
                                             "Edit a.c.") "," USE("t2") "]}," RESULT("t2") "]}";
    chat_input in;
    if (decode(body, &in) != 0) {
        chat_input_free(&in);
        return;
    }
    const chat_message *m = in.req.m;
    /* Finished: its thinking is gone from the turn, its price and its JSON. */
    check(m[1].thinking_dropped == 1 && !m[1].pinned && !m[1].stale && m[1].thinking == 0,
          "finished turn: dropped %d pinned %d", m[1].thinking_dropped, m[1].pinned);
    check(strstr(m[1].json.s, "thinking") == NULL &&
              m[1].json.len == strlen("{\"role\":\"assistant\","
                                      "\"content\":[" USE("t1") "]}"),
          "finished turn renders without its thinking: %.*s", (int)m[1].json.len, m[1].json.s);
    check(m[1].bound_tokens == 0, "finished turn prices no signature: %lld",
          (long long)m[1].bound_tokens);
    check(m[3].stale && m[3].thinking_dropped == 0, "a turn of thinking alone is stale");
    /* In flight: pinned, its thinking text counted, its signature bounded. */
    check(m[5].pinned && !m[5].stale && m[5].thinking == 1, "in flight: pinned");
    check(m[5].bound_tokens == chat_encrypted_tokens(strlen(SIG)), "signature at its bound: %lld",
          (long long)m[5].bound_tokens);
    int text_kept = 0;
    for (size_t k = 0; k < m[5].n_kept; k++)
        text_kept |= m[5].kept[k].len == 9 && memcmp(m[5].kept[k].s, "Edit a.c.", 9) == 0;
    check(text_kept, "the thinking text is priced by the tokenizer");
    check(in.req.sealed, "the answer holds sealed state");

    chat_classes c;
    if (chat_classify(&in.req, &c) == 0) {
        check(c.cls[3] == UNIT_REDUNDANT, "thinking alone of a finished turn: redundant");
        check(c.cls[1] == UNIT_DERIVABLE, "the finished read is derivable as any read: %d",
              (int)c.cls[1]);
        /* The provider's rule stands above keep_last 0 and an annotation. */
        check(c.cls[5] == UNIT_PROTECTED && c.cls[6] == UNIT_PROTECTED, "in flight: protected");
    } else {
        fail("classify ran out of memory");
    }
    chat_classes_free(&c);
    chat_input_free(&in);
}

/* A loss marker compactd wrote as a user turn of its own, sent back, ends no
 * loop: the thinking before it may still be the loop's, and stays. */
static void marker_ends_no_loop(void)
{
    const char *body =
        "{\"format\":\"anthropic\",\"budget\":100000,\"tokenizer\":\"bytes\",\"messages\":["
        "{\"role\":\"user\",\"content\":\"Why?\"},"
        "{\"role\":\"assistant\",\"content\":[" THINK("Read a.c.") "," USE("t1") "]}," RESULT(
            "t1") ","
                  "{\"role\":\"assistant\",\"content\":\"Looking.\"},"
                  "{\"role\":\"user\",\"content\":\"[compactd: messages 9-10 were dropped to fit "
                  "the token "
                  "budget; no re-acquire hint was given]\"},"
                  "{\"role\":\"assistant\",\"content\":[" THINK("Edit a.c.") "," USE(
                      "t2") "]}," RESULT("t2") "]}";
    chat_input in;
    if (decode(body, &in) == 0)
        check(in.req.m[1].pinned && in.req.m[1].thinking_dropped == 0 && in.req.m[5].pinned,
              "thinking before a marker turn: pinned %d dropped %d", in.req.m[1].pinned,
              in.req.m[1].thinking_dropped);
    chat_input_free(&in);
}

#define RS(id, enc)                                                                                \
    "{\"type\":\"reasoning\",\"id\":\"" id "\",\"summary\":[{\"type\":\"summary_text\","           \
    "\"text\":\"Read it.\"}],\"encrypted_content\":\"" enc "\"}"
#define FC(id, call)                                                                               \
    "{\"type\":\"function_call\",\"id\":\"" id "\",\"call_id\":\"" call                            \
    "\",\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"" call ".c\\\"}\"}"
#define OUT(call) "{\"type\":\"function_call_output\",\"call_id\":\"" call "\",\"output\":\"x\"}"
#define ENC "gAAAAABpZ1x4Zm9vYmFyYmF6cXV4" /* 28 characters */

static void responses_reasoning(void)
{
    const char *body =
        "{\"format\":\"openai-responses\",\"budget\":100000,\"tokenizer\":\"bytes\","
        "\"policy\":{\"keep_last\":0,\"read_only_tools\":[\"read_file\"]},\"messages\":["
        "{\"role\":\"user\",\"content\":\"Why?\"}," RS("rs_1", ENC) "," FC("fc_1", "c1") "," OUT(
            "c1") ","
                  "{\"role\":\"user\",\"content\":\"Fix it.\"}," RS("rs_2", ENC) "," FC(
                      "fc_2", "c2") "," OUT("c2") "]}";
    chat_input in;
    if (decode(body, &in) != 0) {
        chat_input_free(&in);
        return;
    }
    const chat_message *m = in.req.m;
    check(m[1].stale && !m[1].pinned, "finished turn's reasoning: stale");
    check(m[5].pinned && !m[5].stale, "in flight: pinned");
    check(m[5].bound_tokens == chat_encrypted_tokens(strlen(ENC)) && m[5].fixed_tokens == 0 &&
              m[5].sealed_state,
          "encrypted_content at its bound: %lld", (long long)m[5].bound_tokens);
    /* The rest of the item, by the tokenizer: its JSON without the
     * encrypted_content. */
    const char *rest =
        "{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[{\"type\":\"summary_text\","
        "\"text\":\"Read it.\"}]}";
    check(m[5].n_kept == 1 && m[5].kept[0].len == strlen(rest) &&
              memcmp(m[5].kept[0].s, rest, strlen(rest)) == 0,
          "the item less its encrypted part: %.*s", (int)m[5].kept[0].len, m[5].kept[0].s);
    chat_costs costs;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(m[5].json.s, m[5].json.len, hex);
    if (chat_price_message(&m[5], hex, NULL, 0, &bytes, &costs) == 0)
        check(costs.full == CHAT_MESSAGE_FRAME_TOKENS + (int64_t)strlen(rest) +
                                chat_encrypted_tokens(strlen(ENC)) &&
                  costs.full < CHAT_MESSAGE_FRAME_TOKENS + (int64_t)m[5].json.len,
              "priced %lld, below its bytes", (long long)costs.full);
    else
        fail("pricing ran out of memory");

    chat_classes c;
    if (chat_classify(&in.req, &c) == 0) {
        /* Finished: redundant, in no exchange; its call stands on its own. */
        check(c.cls[1] == UNIT_REDUNDANT && c.owner[1] == SIZE_MAX,
              "finished reasoning: redundant");
        check(c.owner[2] == 2 && c.owner[3] == 2 && c.cls[2] == UNIT_DERIVABLE,
              "the finished read keeps its class: owner %zu", c.owner[2]);
        /* In flight: protected, and its call and output with it. */
        check(c.owner[5] == 5 && c.owner[6] == 5 && c.owner[7] == 5, "in flight: one exchange");
        check(c.cls[5] == UNIT_PROTECTED && c.cls[6] == UNIT_PROTECTED &&
                  c.cls[7] == UNIT_PROTECTED,
              "in flight: protected");
    } else {
        fail("classify ran out of memory");
    }
    chat_classes_free(&c);

    /* The plan: the finished reasoning goes first, with no marker, and no
     * budget can be too small for it. */
    chat_plan p;
    compactd_error perr = {0};
    if (chat_plan_run(&in.req, &bytes, &p, &perr) == 0) {
        check(p.c.plan.entries[1].decision == DECISION_DROPPED &&
                  p.c.plan.entries[1].reason == DROP_REDUNDANT,
              "finished reasoning dropped as redundant");
        check(p.n_markers == 0, "without a marker: %zu", p.n_markers);
        check(p.c.plan.entries[5].decision == DECISION_PRESERVED, "in flight preserved");
    } else {
        fail("plan failed: %s", perr.message);
    }
    chat_plan_free(&p);
    chat_input_free(&in);
}

static int str_is(chat_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0;
}

/* The answer to in planned within its budget (NULL when it fails). */
static char *planned_answer(chat_input *in)
{
    chat_plan p;
    compactd_error perr = {0};
    char *answer = NULL;
    size_t len;
    if (chat_plan_run(&in->req, &bytes, &p, &perr) == 0)
        answer = chat_encode_answer("s", in, &p, &len);
    else
        fail("plan failed: %s", perr.message);
    chat_plan_free(&p);
    return answer;
}

/* A finished response's message goes without its id once its reasoning
 * goes (the API refuses "Item 'msg_...' of type 'message' was provided
 * without its required 'reasoning' item"): an input message of its own,
 * its output_text parts as one string, priced by that string as it
 * renders (a refusal's text too); one with a part of another kind stays as
 * sent. The turn in flight's keeps its id. */
static void responses_message_unlinked(void)
{
#define MSG(id, parts)                                                                             \
    "{\"type\":\"message\",\"id\":\"" id "\",\"role\":\"assistant\",\"status\":\"completed\","     \
    "\"phase\":\"commentary\",\"content\":[" parts "]}"
#define TEXT(t) "{\"type\":\"output_text\",\"text\":\"" t "\",\"annotations\":[]}"
    /* clang-format off */
    const char *body =
        "{\"format\":\"openai-responses\",\"budget\":100000,\"tokenizer\":\"bytes\","
        "\"messages\":[{\"role\":\"user\",\"content\":\"Why?\"},"
        RS("rs_1", ENC) "," MSG("msg_1", TEXT("Reading ") "," TEXT("a.c.")) ","
        FC("fc_1", "c1") "," OUT("c1") ","
        RS("rs_2", ENC) "," MSG("msg_2", TEXT("No.") ",{\"type\":\"refusal\",\"refusal\":\"I will not.\"}") ","
        MSG("msg_4", "{\"type\":\"input_text\",\"text\":\"odd\"}") ","
        "{\"role\":\"user\",\"content\":\"Fix it.\"},"
        RS("rs_3", ENC) "," MSG("msg_3", TEXT("Fixing.")) "," FC("fc_3", "c3") "," OUT("c3") "]}";
    /* clang-format on */
    chat_input in;
    if (decode(body, &in) != 0) {
        chat_input_free(&in);
        return;
    }
    const chat_message *m = in.req.m;
    /* What each finished message became, with its parts' texts joined. */
#define UNLINKED(text)                                                                             \
    "{\"type\":\"message\",\"role\":\"assistant\",\"phase\":\"commentary\",\"content\":\"" text    \
    "\"}"
    const struct {
        size_t at;
        const char *json, *text;
    } finished[] = {{2, UNLINKED("Reading a.c."), "Reading a.c."},
                    {6, UNLINKED("No.I will not."), "No.I will not."}};
#undef UNLINKED
    for (size_t k = 0; k < sizeof(finished) / sizeof(finished[0]); k++) {
        const chat_message *f = &m[finished[k].at];
        check(str_is(f->json, finished[k].json), "finished: without its id, one string: %.*s",
              (int)f->json.len, f->json.s);
        check(f->sent.len > 0 && strstr(f->sent.s, "\"id\":\"msg_") != NULL,
              "known again by the message as sent");
        check(f->n_payload == 1 && str_is(f->payload[0], finished[k].text),
              "priced by the string it renders");
    }
    check(m[7].json.len > 0 && strstr(m[7].json.s, "\"id\":\"msg_4\"") != NULL,
          "a part of another kind: as sent");
    check(strstr(m[10].json.s, "\"id\":\"msg_3\"") != NULL && m[10].sent.len == 0,
          "in flight: as sent");
    char *answer = planned_answer(&in);
    check(answer && strstr(answer, "\"content\":\"Reading a.c.\"") && !strstr(answer, "msg_1") &&
              strstr(answer, "msg_3"),
          "the answer: %s", answer ? answer : "");
    free(answer);
    chat_input_free(&in);
#undef MSG
#undef TEXT
}

/* A finished response whose reasoning led to a hosted tool's item: that
 * item keeps its id (the input types require it), which names the
 * reasoning as a call's does, so the reasoning stays, with its response's
 * items as sent; a finished response without one loses its reasoning. */
static void responses_hosted_keeps_reasoning(void)
{
#define WS(id) "{\"type\":\"web_search_call\",\"id\":\"" id "\",\"status\":\"completed\"}"
    /* clang-format off */
    const char *body =
        "{\"format\":\"openai-responses\",\"budget\":100000,\"tokenizer\":\"bytes\","
        "\"messages\":[{\"role\":\"user\",\"content\":\"Why?\"},"
        RS("rs_1", ENC) "," WS("ws_1") "," FC("fc_1", "c1") "," OUT("c1") ","
        RS("rs_2", ENC) "," FC("fc_2", "c2") "," OUT("c2") ","
        "{\"role\":\"user\",\"content\":\"Fix it.\"}]}";
    /* clang-format on */
    chat_input in;
    if (decode(body, &in) != 0) {
        chat_input_free(&in);
        return;
    }
    const chat_message *m = in.req.m;
    check(!m[1].stale && !m[1].pinned, "the reasoning a hosted item needs stays, not pinned");
    check(strstr(m[3].json.s, "\"id\":\"fc_1\"") != NULL && m[3].sent.len == 0,
          "its response's call keeps its id: %.*s", (int)m[3].json.len, m[3].json.s);
    check(m[5].stale && strstr(m[6].json.s, "fc_2") == NULL, "the other finished reasoning goes");
    char *answer = planned_answer(&in);
    check(answer && strstr(answer, "rs_1") && strstr(answer, "ws_1") && strstr(answer, "fc_1") &&
              !strstr(answer, "rs_2") && !strstr(answer, "fc_2"),
          "the answer: %s", answer ? answer : "");
    free(answer);
    chat_input_free(&in);
#undef WS
}

/* A tool loop in flight of two responses: the last one's reasoning is
 * pinned; the first one's stays in its read-only exchange and, when the
 * budget needs it, goes with its call and output under one marker. */
static void responses_loop_in_flight(void)
{
    char body[2048];
    snprintf(
        body, sizeof body,
        "{\"format\":\"openai-responses\",\"budget\":%d,\"tokenizer\":\"bytes\","
        "\"policy\":{\"keep_last\":0,\"read_only_tools\":[\"read_file\"]},\"messages\":["
        "{\"role\":\"user\",\"content\":\"Why?\"}," RS("rs_1", ENC) "," FC("fc_1", "c1") "," OUT(
            "c1") "," RS("rs_2", ENC) "," FC("fc_2", "c2") "," OUT("c2") "]}",
        100000);
    chat_input in;
    if (decode(body, &in) != 0) {
        chat_input_free(&in);
        return;
    }
    const chat_message *m = in.req.m;
    check(!m[1].pinned && !m[1].stale, "an earlier response's reasoning: neither pinned nor stale");
    check(m[4].pinned && !m[4].stale, "the last response's reasoning: pinned");
    check(in.req.sealed, "encrypted state sent: the basis says so");
    chat_classes c;
    if (chat_classify(&in.req, &c) == 0) {
        check(c.owner[1] == 1 && c.owner[2] == 1 && c.owner[3] == 1, "rs_1 opens its exchange");
        check(c.cls[1] == UNIT_DERIVABLE && c.cls[3] == UNIT_DERIVABLE,
              "a read's exchange in flight: derivable %d", (int)c.cls[1]);
        check(c.cls[4] == UNIT_PROTECTED && c.cls[6] == UNIT_PROTECTED,
              "the last response's exchange: protected");
    } else {
        fail("classify ran out of memory");
    }
    chat_classes_free(&c);
    chat_input_free(&in);

    /* At the least budget that keeps the last response and a marker, the
     * first exchange goes whole: its reasoning, call and output together. */
    for (int budget = 100; budget < 2000; budget++) {
        snprintf(
            body, sizeof body,
            "{\"format\":\"openai-responses\",\"budget\":%d,\"tokenizer\":\"bytes\","
            "\"policy\":{\"keep_last\":0,\"read_only_tools\":[\"read_file\"]},\"messages\":["
            "{\"role\":\"user\",\"content\":\"Why?\"}," RS("rs_1", ENC) "," FC(
                "fc_1", "c1") "," OUT("c1") "," RS("rs_2", ENC) "," FC("fc_2",
                                                                       "c2") "," OUT("c2") "]}",
            budget);
        if (decode(body, &in) != 0) {
            chat_input_free(&in);
            return;
        }
        chat_plan p;
        compactd_error perr = {0};
        if (chat_plan_run(&in.req, &bytes, &p, &perr) == 0) {
            const plan_entry *e = p.c.plan.entries;
            int first = e[1].decision,
                whole = e[1].decision == e[2].decision && e[2].decision == e[3].decision;
            check(whole, "at %d: the first exchange is one: %d %d %d", budget, e[1].decision,
                  e[2].decision, e[3].decision);
            check(e[4].decision == DECISION_PRESERVED && e[5].decision == DECISION_PRESERVED &&
                      e[6].decision == DECISION_PRESERVED,
                  "at %d: the last response preserved", budget);
            if (first == DECISION_DROPPED) {
                check(p.n_markers == 1 && p.markers[0].first == 1 && p.markers[0].last == 3 &&
                          strstr(p.markers[0].text, "read_file {\"path\":\"c1.c\"}"),
                      "at %d: one marker naming the read", budget);
                chat_plan_free(&p);
                chat_input_free(&in);
                return;
            }
        } else {
            check(perr.kind == ERR_COMPACTION_FAILURE, "at %d: %s", budget, perr.message);
        }
        chat_plan_free(&p);
        chat_input_free(&in);
    }
    fail("no budget dropped the first exchange in flight");
}

/* annotations[].tokens on a reasoning item stand for the reasoning compactd
 * cannot read: the bound of its encrypted_content, or, for an item the
 * provider stored (no encrypted_content), what the provider adds; a text
 * message takes none. */
static void reasoning_annotated(void)
{
    static const char *const items[] = {RS("rs_1", ENC),
                                        "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]}"};
    for (size_t k = 0; k < 2; k++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"format\":\"openai-responses\",\"budget\":100000,\"tokenizer\":\"bytes\","
                 "\"annotations\":[{\"index\":1,\"tokens\":900}],\"messages\":["
                 "{\"role\":\"user\",\"content\":\"Why?\"},%s," FC("fc_1", "c1") "," OUT("c1") "]}",
                 items[k]);
        chat_input in;
        if (decode(body, &in) != 0) {
            chat_input_free(&in);
            continue;
        }
        const chat_message *m = &in.req.m[1];
        chat_costs costs;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(m->json.s, m->json.len, hex);
        if (chat_price_message(m, hex, NULL, 0, &bytes, &costs) == 0)
            check(costs.full == CHAT_MESSAGE_FRAME_TOKENS + (int64_t)m->kept[0].len + 900,
                  "item %zu: the annotation stands for its reasoning: %lld", k,
                  (long long)costs.full);
        else
            fail("pricing ran out of memory");
        chat_input_free(&in);
    }
    const char *text =
        "{\"format\":\"openai-responses\",\"budget\":100,\"annotations\":[{\"index\":0,"
        "\"tokens\":9}],\"messages\":[{\"role\":\"user\",\"content\":\"Why?\"}]}";
    chat_input in;
    compactd_error err = {0};
    check(chat_decode_compact(text, strlen(text), &limits, &in, &err) != 0 &&
              strcmp(err.path, "$.annotations[0].tokens") == 0,
          "a text message takes no tokens: %s", err.path);
    chat_input_free(&in);
}

int main(int argc, char **argv)
{
    char err[256];
    /* The Responses format counts with o200k_base unless told otherwise. */
    if (argc < 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: reasoning_cases RANKS_DIR (%s)\n", argc < 2 ? "none given" : err);
        return 2;
    }
    the_bound();
    anthropic_thinking();
    marker_ends_no_loop();
    responses_reasoning();
    responses_message_unlinked();
    responses_hosted_keeps_reasoning();
    responses_loop_in_flight();
    reasoning_annotated();
    return check_done("reasoning_cases");
}
