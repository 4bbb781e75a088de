/* Setting errors, and quoting request bytes in their messages. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int error_set(compactd_error *err, error_kind kind, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    err->kind = kind;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return -1;
}

int error_quote_len(const char *s, size_t len)
{
    if (len <= 64)
        return (int)len;
    size_t n = 64;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return (int)n;
}
