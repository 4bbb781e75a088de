/* chat_classify()'s work grows with the history, not with its square: an
 * exchange of K calls, as the Chat Completions format sends it (one message
 * making the K calls, K tool messages) and as the Responses format does (K
 * call items of one turn, K outputs), asks the policy's tool lists about
 * each call a bounded number of times. The lists are counted by wrapping
 * chat_tools_has() at link time, not by a clock: the machine is shared. */
#include "chat.h"
#include "chat_classify.h"
#include "chat_tools.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long list_lookups;

int __real_chat_tools_has(const chat_names *list, chat_str name);
int __wrap_chat_tools_has(const chat_names *list, chat_str name);
int __wrap_chat_tools_has(const chat_names *list, chat_str name)
{
    list_lookups++;
    return __real_chat_tools_has(list, name);
}

static const chat_rules rules = {0};

typedef struct {
    chat_request req;
    chat_call *calls;
    chat_str *payload, *answers;
    char (*ids)[32]; /* "call_" and any size_t */
} exchange;

static chat_str str(const char *s)
{
    return (chat_str){s, strlen(s)};
}

/* user, K calls (in one message, or one item each), K answers, user. */
static void build(exchange *x, size_t k, int one_item_per_call)
{
    size_t callers = one_item_per_call ? k : 1, n = 2 + callers + k;
    memset(x, 0, sizeof(*x));
    x->req.rules = &rules;
    x->req.m = calloc(n, sizeof(chat_message));
    x->calls = calloc(k, sizeof(chat_call));
    x->payload = calloc(n + k, sizeof(chat_str));
    x->answers = calloc(k, sizeof(chat_str));
    x->ids = calloc(k, sizeof(*x->ids));
    x->req.policy.keep_last = 1;
    static chat_str read_only = {"read_file", 9};
    x->req.policy.read_only_tools = (chat_names){&read_only, 1};
    size_t i = 0, p = 0;
    x->req.m[i].role = ROLE_USER;
    x->req.m[i].payload = &x->payload[p++];
    x->req.m[i++].payload[0] = str("go");
    x->req.m[0].n_payload = 1;
    for (size_t c = 0; c < k; c++) {
        snprintf(x->ids[c], sizeof(x->ids[c]), "call_%zu", c);
        x->calls[c] = (chat_call){str(x->ids[c]), str("read_file"), str(x->ids[c])};
    }
    for (size_t c = 0; c < callers; c++, i++) {
        chat_message *m = &x->req.m[i];
        size_t made = one_item_per_call ? 1 : k;
        m->role = ROLE_ASSISTANT;
        m->calls = &x->calls[c];
        m->n_calls = made;
        m->payload = &x->payload[p];
        for (size_t j = 0; j < made; j++)
            m->payload[m->n_payload++] = m->calls[j].args;
        p += made;
        m->same_turn = one_item_per_call && c > 0;
    }
    for (size_t c = 0; c < k; c++, i++) {
        chat_message *m = &x->req.m[i];
        m->role = ROLE_TOOL;
        m->results_only = 1;
        x->answers[c] = x->calls[c].id;
        m->answers = &x->answers[c];
        m->n_answers = 1;
    }
    x->req.m[i].role = ROLE_USER;
    x->req.m[i].payload = &x->payload[p];
    x->req.m[i].payload[0] = str("next");
    x->req.m[i++].n_payload = 1;
    x->req.n = i;
}

static void release(exchange *x)
{
    free(x->req.m);
    free(x->calls);
    free(x->payload);
    free(x->answers);
    free(x->ids);
}

/* The list lookups of one classification of a K-call exchange; every
 * message of it derivable (read-only calls), the last user turn kept. */
static unsigned long lookups(size_t k, int one_item_per_call)
{
    exchange x;
    chat_classes c;
    build(&x, k, one_item_per_call);
    list_lookups = 0;
    check(chat_classify(&x.req, &c) == 0, "chat_classify failed");
    unsigned long n = list_lookups;
    for (size_t i = 1; c.cls && i + 1 < x.req.n; i++)
        if (c.cls[i] != UNIT_DERIVABLE) {
            fail("K=%zu message %zu: class %d, not derivable", k, i, (int)c.cls[i]);
            break;
        }
    chat_classes_free(&c);
    release(&x);
    return n;
}

/* Prose is any payload text that is not a call's arguments, wherever the
 * arguments sit among the texts. */
static void prose_cases(void)
{
    chat_call calls[2] = {{str("a"), str("f"), str("{}")}, {str("b"), str("f"), str("{\"x\":1}")}};
    chat_str text = str("I will read both.");
    struct {
        chat_str payload[3];
        size_t n;
        int prose;
    } cases[] = {
        {{calls[0].args, calls[1].args}, 2, 0},
        {{calls[1].args, calls[0].args}, 2, 0},
        {{text, calls[0].args, calls[1].args}, 3, 1},
        {{calls[1].args, text, calls[0].args}, 3, 1},
        {{calls[0].args, calls[1].args, text}, 3, 1},
        {{calls[0].args, {"", 0}, calls[1].args}, 3, 0},
    };
    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
        chat_message m = {0};
        m.role = ROLE_ASSISTANT;
        m.calls = calls;
        m.n_calls = 2;
        m.payload = cases[t].payload;
        m.n_payload = cases[t].n;
        check(chat_has_prose(&m) == cases[t].prose, "case %zu: prose %d", t, chat_has_prose(&m));
    }
}

int main(void)
{
    prose_cases();
    for (int shape = 0; shape < 2; shape++) {
        unsigned long small = lookups(2000, shape), large = lookups(4000, shape);
        printf("%s: %lu lookups for 2000 calls, %lu for 4000\n",
               shape ? "one item per call" : "one message of calls", small, large);
        /* Linear work doubles; the square of K would make it four times. */
        check(small > 0 && large <= small * 9 / 4,
              "%s: %lu lookups for 2000 calls, %lu for 4000 (more than doubled)",
              shape ? "one item per call" : "one message of calls", small, large);
    }
    return check_done("classify_linear_cases");
}
