/* Failing allocations for the C tests: malloc, calloc and realloc wrapped
 * at link time (-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc); arm(k)
 * makes the k-th allocation from then on fail, disarm() stops, injected
 * tells whether one failed. Only calls from the statically linked code are
 * wrapped; jansson, a shared library, allocates through compactd's own
 * functions (api/codec/json/json_region.c), so its allocations fail too. */
#ifndef COMPACTD_TESTS_OOM_H
#define COMPACTD_TESTS_OOM_H

#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

/* The loops arm k = 0, 1, ... up to this many and stop at the first run with no injected failure,
 * which each must reach: that run alone checks the success path after the failure paths. */
#define OOM_MAX_SITES 1000

static long countdown = -1; /* allocations before the one that fails; -1: none */
static int injected;

static int fail_now(void)
{
    if (countdown < 0)
        return 0;
    if (countdown-- == 0) {
        injected = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

static void arm(long k)
{
    injected = 0;
    countdown = k;
}

static void disarm(void)
{
    countdown = -1;
}

#endif
