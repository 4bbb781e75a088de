/* A tiny assertion helper for the C tests: report, count, keep going. */
#ifndef COMPACTD_CHECK_H
#define COMPACTD_CHECK_H

#include <stdio.h>

static int check_failures;
static int check_count;

#define fail(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        check_failures++;                                                                          \
        check_count++;                                                                             \
    } while (0)

#define check(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__VA_ARGS__);                                                                     \
        else                                                                                       \
            check_count++;                                                                         \
    } while (0)

/* Every check() or fail() counts once. Prints the closing line and returns the process exit code:
 * 1 when a check failed, and 1 too when none ran, since a binary that checked nothing (a table
 * that came out empty, a loop that never ran) has shown nothing. */
static inline int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_count - check_failures, check_failures);
    if (check_count == 0) {
        fprintf(stderr, "%s: no check ran\n", name);
        return 1;
    }
    return check_failures ? 1 : 0;
}

#endif
