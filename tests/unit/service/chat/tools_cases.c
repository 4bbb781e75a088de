/* The policy's tool lists (chat_tools.c): which entries are names or
 * wildcards, wildcard matching against a brute-force oracle, and the
 * overlap of two lists that makes a policy contradict itself. */
#define XORSHIFT_SEED 0x5eed1234u
#include "chat_tools.h"
#include "check.h"
#include "xorshift.h"

#include <string.h>

#define S(lit) ((chat_str){(lit), sizeof(lit) - 1})

static void check_problems(void)
{
    static const struct {
        const char *entry;
        int ok;
    } cases[] = {
        {"read_file", 1},      {"read_*", 1},    {"*", 1},          {"*_file", 1},
        {"mcp.fs/read:v2", 1}, {"a*b*c", 1},     {"Read-File9", 1}, {"", 0},
        {"read_**", 0},        {"read file", 0}, {"read_?", 0},     {"read_[ab]", 0},
        {"caf\xc3\xa9", 0},    {"**", 0},        {"a\"b", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *problem = chat_tool_pattern_problem(cases[i].entry, strlen(cases[i].entry));
        check((problem == NULL) == cases[i].ok, "\"%s\": %s", cases[i].entry,
              problem ? problem : "accepted");
    }
    char long_name[CHAT_TOOL_PATTERN_MAX + 2];
    memset(long_name, 'a', sizeof(long_name));
    check(chat_tool_pattern_problem(long_name, CHAT_TOOL_PATTERN_MAX) == NULL,
          "128 bytes accepted");
    check(chat_tool_pattern_problem(long_name, CHAT_TOOL_PATTERN_MAX + 1) != NULL,
          "129 bytes refused");
}

/* The oracle: every way of splitting name among the pattern's pieces,
 * recursively. */
static int oracle(const char *p, size_t pl, const char *n, size_t nl)
{
    if (pl == 0)
        return nl == 0;
    if (p[0] == '*') {
        for (size_t k = 0; k <= nl; k++)
            if (oracle(p + 1, pl - 1, n + k, nl - k))
                return 1;
        return 0;
    }
    return nl > 0 && p[0] == n[0] && oracle(p + 1, pl - 1, n + 1, nl - 1);
}

static void check_matching(void)
{
    static const struct {
        const char *pattern, *name;
        int match;
    } cases[] = {
        {"read_*", "read_file", 1},  {"read_*", "read_", 1},      {"read_*", "read", 0},
        {"read_*", "xread_file", 0}, {"*_file", "write_file", 1}, {"*", "anything", 1},
        {"a*b*c", "aXbYc", 1},       {"a*b*c", "aXcYb", 0},       {"grep", "grep", 1},
        {"grep", "grep2", 0},        {"*ab", "aab", 1},           {"a*a", "a", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        chat_str p = {cases[i].pattern, strlen(cases[i].pattern)};
        chat_str n = {cases[i].name, strlen(cases[i].name)};
        check(chat_tool_matches(p, n) == cases[i].match, "\"%s\" on \"%s\"", cases[i].pattern,
              cases[i].name);
    }
    /* Random patterns and names over a small alphabet, so that stars and
     * letters meet in every arrangement. */
    static const char alphabet[] = "ab*";
    int wrong = 0;
    for (int round = 0; round < 20000 && !wrong; round++) {
        char p[8], n[10];
        size_t pl = below(7), nl = below(9);
        for (size_t i = 0; i < pl; i++)
            p[i] = alphabet[below(3)];
        for (size_t i = 0; i < nl; i++)
            n[i] = alphabet[below(2)];
        int want = oracle(p, pl, n, nl);
        wrong = chat_tool_matches((chat_str){p, pl}, (chat_str){n, nl}) != want;
        check(!wrong, "\"%.*s\" on \"%.*s\": want %d", (int)pl, p, (int)nl, n, want);
    }
}

static void check_overlap(void)
{
    static chat_str ro[] = {S("grep"), S("read_*")},
                    prot[] = {S("apply_migration"), S("read_file")},
                    other[] = {S("write_*"), S("run_shell")};
    chat_names a = {ro, 2}, b = {prot, 2}, c = {other, 2};
    size_t j = 99;
    check(chat_tools_overlap(&a, &b, &j) == 1 && j == 1, "read_* covers the protected read_file");
    check(chat_tools_overlap(&b, &a, &j) == 1 && j == 1, "and the other way round");
    check(chat_tools_overlap(&a, &c, &j) == SIZE_MAX, "disjoint lists do not overlap");
    chat_names names = {ro, 2};
    check(chat_tools_has(&names, S("read_config")), "a wildcard entry matches");
    check(!chat_tools_has(&names, S("write_file")), "no entry matches write_file");
}

int main(void)
{
    check_problems();
    check_matching();
    check_overlap();
    return check_done("tools_cases");
}
