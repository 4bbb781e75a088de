/* The monotonic clock and the periodic wake-up the background threads (the
 * connection watchdog, the readiness probe) share. */
#ifndef COMPACTD_TICKER_H
#define COMPACTD_TICKER_H

#include <pthread.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t ticker_now_ms(void);

/* Initializes c to time its waits on CLOCK_MONOTONIC (so a clock change
 * never stretches a tick). Returns 0, or -1. */
int ticker_cond_init(pthread_cond_t *c);

/* Waits on c (lock held) until signalled or ms milliseconds have passed. */
void ticker_wait(pthread_cond_t *c, pthread_mutex_t *lock, int64_t ms);

#endif
