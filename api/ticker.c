/* The monotonic clock and timed condition waits of the background threads. */
#include "ticker.h"

#include <time.h>

int64_t ticker_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int ticker_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return rc == 0 ? 0 : -1;
}

void ticker_wait(pthread_cond_t *c, pthread_mutex_t *lock, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(c, lock, &until);
}
