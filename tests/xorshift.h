/* A small deterministic generator (xorshift64) for the tests and the
 * benchmarks: the same seed gives the same inputs on every machine. Define
 * XORSHIFT_SEED (non-zero) before including; one generator per program. */
#ifndef COMPACTD_XORSHIFT_H
#define COMPACTD_XORSHIFT_H

#include <stddef.h>
#include <stdint.h>

#ifndef XORSHIFT_SEED
#error "define XORSHIFT_SEED before including xorshift.h"
#endif

static uint64_t rng_state = XORSHIFT_SEED;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* A number in [0, n); 0 when n is 0. */
static size_t below(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

#endif
