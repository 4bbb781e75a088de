/* Text made safe for a JSON answer (see json_text.h). */
#include "json_text.h"

#include <string.h>

size_t json_utf8_char_len(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned min;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, min = 0x80;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, min = 0x800;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void json_sanitize_text(char *s)
{
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        size_t n = json_utf8_char_len((const unsigned char *)s + i, len - i);
        if (n == 0 || (unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            s[i++] = '?';
            continue;
        }
        i += n;
    }
}
