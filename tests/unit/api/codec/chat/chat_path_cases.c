/* chat_pathf writes what snprintf writes, for the conversions JSON paths use
 * and for any other, cut the same way when out is too small. */
#include "chat_codec.h"
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SAME(size, ...)                                                                            \
    do {                                                                                           \
        char want[64], got[64];                                                                    \
        memset(got, '#', sizeof(got));                                                             \
        snprintf(want, (size), __VA_ARGS__);                                                       \
        chat_pathf(got, (size), __VA_ARGS__);                                                      \
        check(strcmp(want, got) == 0, "size %d, %s: \"%s\", snprintf wrote \"%s\"", (int)(size),   \
              #__VA_ARGS__, got, want);                                                            \
    } while (0)

int main(void)
{
    static const int sizes[] = {1, 2, 5, 9, 14, 20, 64};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int n = sizes[i];
        SAME(n, "$.messages[%zu].role", (size_t)0);
        SAME(n, "$.messages[%zu]", (size_t)1234567);
        SAME(n, "%s[%zu]", ".content", (size_t)SIZE_MAX);
        SAME(n, "%s.%s", "$.input[3].content[0]", "text");
        SAME(n, ".%s", "call_id");
        SAME(n, "%.*s", 3, "abcdef");
        SAME(n, "%.*s", 10, "ab");
        SAME(n, "%.*s", 0, "ab");
        SAME(n, "%s%s%s", "a", "", "b");
        SAME(n, "100%% %s", "sure");        /* not one of the three: vsnprintf */
        SAME(n, "%d items of %s", 42, "x"); /* likewise */
        SAME(n, "no conversion at all");
        SAME(n, "%s", "");
    }
    return check_done("chat_path_cases");
}
