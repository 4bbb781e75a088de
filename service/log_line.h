/* The process's log: every line compactd writes to stderr is one JSON
 * object ({"time", "level", "msg", ...}), so a log collector never meets a
 * line of plain text between the access log's. Written with one write(2),
 * so lines from threads never interleave. */
#ifndef COMPACTD_LOG_LINE_H
#define COMPACTD_LOG_LINE_H

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

/* The level names, as COMPACTD_LOG_LEVEL takes them and lines carry them. */
const char *log_level_name(log_level level);

/* Writes {"time", "level", "msg"} with msg from fmt, cut at 4 KiB. The
 * process's own lines (start-up, warnings, shutdown) are few and always
 * written: COMPACTD_LOG_LEVEL governs the per-request lines of the access
 * log, which tooling waiting for "listening on" never depends on. */
void log_line(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
