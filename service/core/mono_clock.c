/* The monotonic clock, read in one place; see mono_clock.h. */
#include "mono_clock.h"

#include <time.h>

int64_t mono_clock_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}
