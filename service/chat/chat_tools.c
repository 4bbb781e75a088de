/* Tool lists: entries checked, names matched against wildcards. See
 * chat_tools.h. */
#include "chat_tools.h"

#include <string.h>

static int pattern_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || c == '/' || c == '*';
}

const char *chat_tool_pattern_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty: a tool name or wildcard has at least one character";
    if (len > CHAT_TOOL_PATTERN_MAX)
        return "is longer than 128 bytes";
    for (size_t i = 0; i < len; i++) {
        if (!pattern_byte((unsigned char)s[i]))
            return "is not a tool name or wildcard: only letters, digits, '_', '-', '.', ':', "
                   "'/' and '*' (any run of characters) are allowed";
        if (s[i] == '*' && i + 1 < len && s[i + 1] == '*')
            return "is a malformed wildcard: '**' (one '*' already matches any run)";
    }
    return NULL;
}

/* Iterative glob with one backtrack point: the last '*' seen. Linear in
 * practice and never worse than len(p) * len(n). */
int chat_tool_matches(chat_str pattern, chat_str name)
{
    size_t p = 0, n = 0, star = SIZE_MAX, from = 0;
    while (n < name.len) {
        if (p < pattern.len && pattern.s[p] == '*') {
            star = p++;
            from = n;
        } else if (p < pattern.len && pattern.s[p] == name.s[n]) {
            p++;
            n++;
        } else if (star != SIZE_MAX) {
            p = star + 1;
            n = ++from;
        } else {
            return 0;
        }
    }
    while (p < pattern.len && pattern.s[p] == '*')
        p++;
    return p == pattern.len;
}

int chat_tools_has(const chat_names *names, chat_str name)
{
    for (size_t i = 0; i < names->n; i++)
        if (chat_tool_matches(names->names[i], name))
            return 1;
    return 0;
}

size_t chat_tools_overlap(const chat_names *a, const chat_names *b, size_t *in_b)
{
    for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++)
            if (chat_tool_matches(a->names[i], b->names[j]) ||
                chat_tool_matches(b->names[j], a->names[i])) {
                *in_b = j;
                return i;
            }
    return SIZE_MAX;
}
