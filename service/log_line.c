/* A line is built whole on the stack (the message escaped at most
 * sixfold), then written at once. */
#include "log_line.h"

#include "compaction.h"
#include "json_escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const names[] = {"debug", "info", "warn", "error"};

const char *log_level_name(log_level level)
{
    return level >= LOG_DEBUG && level <= LOG_ERROR ? names[level] : "error";
}

void log_line(log_level level, const char *fmt, ...)
{
    enum { MSG_MAX = 4096 };
    char msg[MSG_MAX], now[32];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
    if (n > 0 && (size_t)n >= sizeof(msg)) /* cut: never inside a UTF-8 character */
        while (len > 0 && ((unsigned char)msg[len] & 0xC0) == 0x80)
            len--;
    compaction_timestamp(now);
    char line[64 + 32 + 16 + 6 * MSG_MAX];
    int head = snprintf(line, sizeof(line), "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", now,
                        log_level_name(level));
    size_t at = (size_t)head + json_escape(msg, len, line + head);
    memcpy(line + at, "\"}\n", 3);
    ssize_t w = write(STDERR_FILENO, line, at + 3);
    (void)w;
}
