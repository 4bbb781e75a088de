/* compactd's own output recognised when it is sent back (chat_own.c): loss
 * markers by their grammar and their two lists, pointer messages by their
 * pointer (as text, or as the {"compactd": ...} carrier of tool-call
 * arguments), and look-alikes that are neither. */
#include "chat_own.h"
#include "check.h"
#include "pointer.h"

#include <stdio.h>
#include <string.h>

#define S(lit) ((chat_str){(lit), sizeof(lit) - 1})

static chat_message text_message(chat_role role, chat_str *payload, size_t n)
{
    chat_message m;
    memset(&m, 0, sizeof(m));
    m.role = role;
    m.payload = payload;
    m.n_payload = n;
    return m;
}

static void check_markers(void)
{
    static const struct {
        const char *text;
        chat_own_kind want;
        const char *reacquire, *ran;
    } cases[] = {
        {"[compactd: messages 2-3 were dropped to fit the token budget. Re-acquire before relying "
         "on them: read_file {\"path\":\"a\"}; grep {}]",
         CHAT_OWN_MARKER, "read_file {\"path\":\"a\"}; grep {}", ""},
        {"[compactd: message 4 was dropped to fit the token budget. Already ran, not to be run "
         "again (results not kept): write_file (call_1)]",
         CHAT_OWN_MARKER, "", "write_file (call_1)"},
        {"[compactd: messages 4-9 were dropped to fit the token budget. Re-acquire before relying "
         "on them: grep {}. Already ran, not to be run again (results not kept): run_shell (c2); "
         "apply (c3)]",
         CHAT_OWN_MARKER, "grep {}", "run_shell (c2); apply (c3)"},
        {"[compactd: messages 1-2 were dropped as redundant]", CHAT_OWN_MARKER, "", ""},
        {"[compactd: message 1 was dropped to fit the token budget; no re-acquire hint was given]",
         CHAT_OWN_MARKER, "", ""},
        /* Markers appended to one turn, one a line: their lists joined. */
        {"[compactd: messages 2-3 were dropped to fit the token budget. Re-acquire before relying "
         "on them: grep {}. Already ran, not to be run again (results not kept): run_shell (c2)]\n"
         "[compactd: message 5 was dropped as redundant]\n"
         "[compactd: messages 7-8 were dropped to fit the token budget. Re-acquire before relying "
         "on them: read_file {\"path\":\"a\"}. Already ran, not to be run again (results not "
         "kept): apply (c3)]",
         CHAT_OWN_MARKER, "grep {}; read_file {\"path\":\"a\"}", "run_shell (c2); apply (c3)"},
        {"[compactd: messages 2-3 were dropped", CHAT_OWN_NONE, NULL, NULL},
        {"compactd: messages 2-3 were dropped]", CHAT_OWN_NONE, NULL, NULL},
        {"[compactd: messages 2-3 were kept]", CHAT_OWN_NONE, NULL, NULL},
        {"Please note [compactd: message 1 was dropped as redundant]", CHAT_OWN_NONE, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        chat_str t = {cases[i].text, strlen(cases[i].text)};
        chat_message m = text_message(ROLE_SYSTEM, &t, 1);
        chat_own_kind k = chat_own_kind_of(&m);
        check(k == cases[i].want, "case %zu: kind %d, want %d", i, (int)k, (int)cases[i].want);
        if (k != CHAT_OWN_MARKER || !cases[i].reacquire)
            continue;
        chat_str re, ran;
        char buf[CHAT_OWN_LISTS_ROOM(600)];
        check(t.len <= 600, "case %zu: room", i);
        size_t used = chat_own_marker_lists_all(t, buf, &re, &ran);
        check(used <= CHAT_OWN_LISTS_ROOM(t.len), "case %zu: %zu bytes used", i, used);
        check(re.len == strlen(cases[i].reacquire) && memcmp(re.s, cases[i].reacquire, re.len) == 0,
              "case %zu: re-acquire list \"%.*s\"", i, (int)re.len, re.s);
        check(ran.len == strlen(cases[i].ran) && memcmp(ran.s, cases[i].ran, ran.len) == 0,
              "case %zu: ran list \"%.*s\"", i, (int)ran.len, ran.s);
    }
    /* A marker with a call or an answer is not one compactd wrote. */
    chat_str t = S("[compactd: messages 1-2 were dropped as redundant]");
    chat_message m = text_message(ROLE_ASSISTANT, &t, 1);
    chat_call call = {S("c1"), S("grep"), S("{}")};
    m.calls = &call;
    m.n_calls = 1;
    check(chat_own_kind_of(&m) == CHAT_OWN_NONE, "a message that calls a tool is no marker");
}

static void check_pointers(void)
{
    char ptr[POINTER_MAX_BYTES], other[POINTER_MAX_BYTES], carrier[POINTER_MAX_BYTES + 16];
    size_t plen = pointer_format(ptr, "msg7", 4, "0123456789abcdef0123");
    size_t olen = pointer_format(other, "msg8", 4, "0123456789abcdef0123");
    int clen = snprintf(carrier, sizeof(carrier), "{\"compactd\":\"%s\"}", ptr);
    chat_str p = {ptr, plen}, o = {other, olen}, c = {carrier, (size_t)clen};

    chat_str one[] = {p};
    chat_message m = text_message(ROLE_TOOL, one, 1);
    check(chat_own_kind_of(&m) == CHAT_OWN_POINTER, "a result that is a pointer");

    chat_str with_call[] = {p, c};
    chat_call call = {S("call_1"), S("write_file"), {carrier, (size_t)clen}};
    m = text_message(ROLE_ASSISTANT, with_call, 2);
    m.calls = &call;
    m.n_calls = 1;
    check(chat_own_kind_of(&m) == CHAT_OWN_POINTER,
          "a call whose text and arguments are the pointer");

    chat_str two[] = {p, o};
    m = text_message(ROLE_TOOL, two, 2);
    check(chat_own_kind_of(&m) == CHAT_OWN_NONE, "two different pointers are not one message's");

    chat_str mixed[] = {p, S("and some text")};
    m = text_message(ROLE_USER, mixed, 2);
    check(chat_own_kind_of(&m) == CHAT_OWN_NONE, "a pointer beside other text is a message");

    chat_str near[] = {S("[externalized msg7 sha256:0123]")};
    m = text_message(ROLE_TOOL, near, 1);
    check(chat_own_kind_of(&m) == CHAT_OWN_NONE, "a short digest is no pointer");

    m = text_message(ROLE_TOOL, one, 1);
    m.opaque = 1;
    check(chat_own_kind_of(&m) == CHAT_OWN_NONE, "a message with an image is not compactd's");
}

int main(void)
{
    check_markers();
    check_pointers();
    return check_done("own_cases");
}
