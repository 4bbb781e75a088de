/* Byte spans inside a JSON text: the one scan of where a string ends, for
 * the shape guard before a parse and for the spans of values after it. */
#include "json_span.h"

#include <string.h>

size_t json_span_skip_ws(const char *s, size_t i, size_t len)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

size_t json_span_string_end(const char *s, size_t from, size_t stop)
{
    for (size_t j = from; j < stop;) {
        const char *q = memchr(s + j, '"', stop - j);
        if (!q)
            break;
        size_t k = (size_t)(q - s), b = 0;
        while (k - b > from && s[k - b - 1] == '\\')
            b++;
        if (b % 2 == 0)
            return k;
        j = k + 1;
    }
    return stop;
}

/* The offset just past the string whose opening quote is at i. */
static size_t skip_string(const char *s, size_t i, size_t len)
{
    size_t end = json_span_string_end(s, i + 1, len);
    return end < len ? end + 1 : len;
}

size_t json_span_skip_value(const char *s, size_t i, size_t len)
{
    if (i >= len)
        return len;
    if (s[i] == '"')
        return skip_string(s, i, len);
    if (s[i] != '{' && s[i] != '[') {
        while (i < len && !strchr(",}] \t\n\r", s[i]))
            i++;
        return i;
    }
    size_t depth = 0;
    while (i < len) {
        char c = s[i];
        if (c == '"') {
            i = skip_string(s, i, len);
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i + 1;
        i++;
    }
    return len;
}

int json_span_members(const char *s, size_t len, size_t obj,
                      void (*fn)(void *cls, size_t name_start, size_t name_end, size_t value_start,
                                 size_t value_end),
                      void *cls)
{
    size_t i = json_span_skip_ws(s, obj, len);
    if (i >= len || s[i] != '{')
        return -1;
    for (i = json_span_skip_ws(s, i + 1, len); i < len && s[i] == '"';) {
        size_t name_end = skip_string(s, i, len), name_start = i;
        i = json_span_skip_ws(s, name_end, len);
        if (i >= len || s[i] != ':')
            return -1;
        size_t value = json_span_skip_ws(s, i + 1, len);
        size_t end = json_span_skip_value(s, value, len);
        fn(cls, name_start, name_end, value, end);
        i = json_span_skip_ws(s, end, len);
        if (i < len && s[i] == ',')
            i = json_span_skip_ws(s, i + 1, len);
    }
    return 0;
}

typedef struct {
    const char *s;
    const char *name;
    size_t name_len;
    int found;
    size_t start, end;
} member_search;

static void match_member(void *cls, size_t name_start, size_t name_end, size_t value_start,
                         size_t value_end)
{
    member_search *m = cls;
    if (!m->found && name_end - name_start == m->name_len + 2 &&
        memcmp(m->s + name_start + 1, m->name, m->name_len) == 0) {
        m->found = 1;
        m->start = value_start;
        m->end = value_end;
    }
}

int json_span_member(const char *s, size_t len, size_t obj, const char *name, size_t *value_start,
                     size_t *value_end)
{
    member_search m = {s, name, strlen(name), 0, 0, 0};
    if (json_span_members(s, len, obj, match_member, &m) != 0 || !m.found)
        return -1;
    *value_start = m.start;
    *value_end = m.end;
    return 0;
}
