/* Out of memory while reasoning state is placed: a finished Anthropic turn
 * read again without its thinking, a Responses reasoning item priced less
 * its encrypted_content, a finished Responses turn's call and message
 * without their ids. chat_decode_compact() runs with its k-th allocation
 * failing, for every k: each run answers Internal, or decodes right where
 * a faster path gave way to a slower one (the body's own bytes for a
 * message's JSON), and leaks nothing (the sanitizer build's leak check);
 * the first run without an injected failure decodes right. */
#include "check.h"
#include "oom.h"
#include "chat_codec.h"
#include "chat_price.h"
#include "tokenizer.h"

#include <string.h>

static const decode_limits limits = {64, 64, 1 << 16, 1 << 16, 100};

static const char anthropic_body[] =
    "{\"format\":\"anthropic\",\"budget\":1000,\"tokenizer\":\"bytes\",\"messages\":["
    "{\"role\":\"user\",\"content\":\"Why?\"},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"Read a.c.\","
    "\"signature\":\"c2ln\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read_file\","
    "\"input\":{\"path\":\"a.c\"}}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
    "\"content\":\"x\"}]},"
    "{\"role\":\"assistant\",\"content\":\"Done.\"},{\"role\":\"user\",\"content\":\"Next.\"}]}";

static const char responses_body[] =
    "{\"format\":\"openai-responses\",\"budget\":1000,\"messages\":["
    "{\"role\":\"user\",\"content\":\"Why?\"},"
    "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"gAAAAB\"},"
    "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"f\","
    "\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"x\"}]"
    "}";

/* A finished turn: its reasoning stale, its message's and its call's JSON
 * without their ids. */
static const char responses_finished_body[] =
    "{\"format\":\"openai-responses\",\"budget\":1000,\"messages\":["
    "{\"role\":\"user\",\"content\":\"Why?\"},"
    "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"gAAAAB\"},"
    "{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":["
    "{\"type\":\"output_text\",\"text\":\"Rea\"},{\"type\":\"output_text\",\"text\":\"ding.\"}]},"
    "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"f\","
    "\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"x\"},"
    "{\"role\":\"user\",\"content\":\"Next.\"}]}";

static int holds(chat_str s, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= s.len; i++)
        if (memcmp(s.s + i, word, n) == 0)
            return 1;
    return 0;
}

/* What each body decodes to: the finished turn without its thinking, or
 * the reasoning of the turn in flight pinned and priced by its bound. */
static int decoded_right(const chat_input *in)
{
    const chat_message *m = &in->req.m[1];
    if (!in->codec->rules->alternating && in->req.n == 6)
        return m->stale && !holds(in->req.m[2].json, "msg_1") &&
               holds(in->req.m[2].json, "\"content\":\"Reading.\"") &&
               in->req.m[2].n_payload == 1 && !holds(in->req.m[3].json, "fc_1") &&
               holds(in->req.m[3].json, "call_id");
    if (in->req.n != (size_t)(in->codec->rules->alternating ? 5 : 4))
        return 0;
    if (in->codec->rules->alternating)
        return m->thinking_dropped == 1 && !holds(m->json, "thinking");
    return m->pinned && m->n_kept == 1 && m->bound_tokens == chat_encrypted_tokens(6);
}

static void under_oom(const char *name, const char *body, size_t len)
{
    long k;
    int clean = 0;
    for (k = 0; k < OOM_MAX_SITES; k++) {
        chat_input in;
        compactd_error err = {0};
        arm(k);
        int rc = chat_decode_compact(body, len, &limits, &in, &err);
        disarm();
        if (!injected) {
            clean = 1;
            check(rc == 0 && decoded_right(&in), "%s: decodes once allocations succeed (%s)", name,
                  err.message);
            chat_input_free(&in);
            break;
        }
        check(rc == 0 ? decoded_right(&in) : err.kind == ERR_INTERNAL,
              "%s: failing allocation %ld gave rc %d kind %d", name, k, rc, (int)err.kind);
        chat_input_free(&in);
    }
    check(clean, "%s: no run without an injected failure in %ld", name, k);
    check(k >= 8, "%s: %ld allocation sites exercised", name, k);
}

int main(int argc, char **argv)
{
    char err[256];
    if (argc < 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: reasoning_oom_cases RANKS_DIR (%s)\n",
                argc < 2 ? "none given" : err);
        return 2;
    }
    under_oom("anthropic", anthropic_body, sizeof(anthropic_body) - 1);
    under_oom("openai-responses", responses_body, sizeof(responses_body) - 1);
    under_oom("openai-responses finished", responses_finished_body,
              sizeof(responses_finished_body) - 1);
    return check_done("reasoning_oom_cases");
}
