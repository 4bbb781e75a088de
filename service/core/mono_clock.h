/* The monotonic clock every layer times its deadlines, waits and request
 * durations with: CLOCK_MONOTONIC, which a change of the wall clock never
 * moves. */
#ifndef COMPACTD_MONO_CLOCK_H
#define COMPACTD_MONO_CLOCK_H

#include <stdint.h>

/* Microseconds since an arbitrary start, never decreasing. */
int64_t mono_clock_us(void);

#endif
