/* Readiness as /readyz reports it: a background thread pings Redis and
 * /readyz answers from its last result at once, so that a stalled Redis
 * makes the probe say "not ready" instead of making it wait. */
#ifndef COMPACTD_READINESS_H
#define COMPACTD_READINESS_H

#include <stddef.h>

/* Pings once (so the first /readyz already knows), then starts the probing
 * thread. session_store_init() must have run. Returns 0, or -1 when the
 * thread cannot start. */
int readiness_start(void);

/* Stops and joins the probing thread (waits out a ping in progress). */
void readiness_stop(void);

/* 1 when the last ping was answered, within the last READINESS_STALE_MS
 * (1 s); else 0 with why (the error, or how long Redis has not answered). */
int readiness_ready(char *why, size_t len);

#endif
