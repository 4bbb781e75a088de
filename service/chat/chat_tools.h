/* The policy's tool lists: which tools an exchange calls, matched by name
 * or by a wildcard ("read_*"), and what a list may hold. Pure. */
#ifndef COMPACTD_CHAT_TOOLS_H
#define COMPACTD_CHAT_TOOLS_H

#include "chat.h"

/* The longest entry of a tool list, in bytes. */
#define CHAT_TOOL_PATTERN_MAX 128

/* What is wrong with a tool list entry, or NULL when it is a name or a
 * wildcard: 1 to CHAT_TOOL_PATTERN_MAX bytes of letters, digits, '_', '-',
 * '.', ':', '/' and '*' (any run of characters, the empty run included),
 * never two '*' together. Returns a static string. */
const char *chat_tool_pattern_problem(const char *s, size_t len);

/* Whether name matches pattern ('*' matches any run of bytes). */
int chat_tool_matches(chat_str pattern, chat_str name);

/* Whether name matches an entry of names. */
int chat_tools_has(const chat_names *names, chat_str name);

/* The first entry of a that is also in b (the same entry, or one that
 * matches the other as a name), or SIZE_MAX; *in_b gets b's entry. Two
 * wildcards that share names without either matching the other are not
 * found: a call that matches both lists is still classed by the stronger. */
size_t chat_tools_overlap(const chat_names *a, const chat_names *b, size_t *in_b);

#endif
