/* The monotonic clock and timed condition waits of the background threads. */
#include "ticker.h"

#include "mono_clock.h"

#include <time.h>

int64_t ticker_now_ms(void)
{
    return mono_clock_us() / 1000;
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
    int64_t at = mono_clock_us() + ms * 1000;
    struct timespec until = {(time_t)(at / 1000000), (long)(at % 1000000) * 1000};
    pthread_cond_timedwait(c, lock, &until);
}
