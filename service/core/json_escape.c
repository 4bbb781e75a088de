/* JSON string escaping; see json_escape.h. */
#include "json_escape.h"

#include <stdint.h>
#include <string.h>

size_t json_escape(const char *s, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    if (len == 0)
        return 0;
    for (size_t i = 0;;) {
        /* The run up to the next byte to escape, then that byte. */
        size_t run = json_clean_prefix(s + i, len - i);
        memcpy(o, s + i, run);
        o += run;
        i += run;
        if (i == len)
            break;
        unsigned char c = (unsigned char)s[i++];
        *o++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *o++ = (char)c;
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return (size_t)(o - out);
}

size_t json_escape_len(const char *s, size_t len)
{
    size_t n = len;
    for (size_t i = json_clean_prefix(s, len); i < len;
         i += 1 + json_clean_prefix(s + i + 1, len - i - 1)) {
        unsigned char c = (unsigned char)s[i];
        /* A two-byte escape, or \u00XX. */
        n += c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f'
                 ? 1
                 : 5;
    }
    return n;
}
