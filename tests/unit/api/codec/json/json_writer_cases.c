/* The streaming JSON writer: commas, nesting, escapes, numbers, raw values
 * and members, and out-of-memory being sticky. Every document written here
 * is compared byte for byte. */
#include "check.h"
#include "json_writer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void expect(jw *w, const char *want, const char *what)
{
    size_t len = 0;
    char *got = jw_finish(w, &len);
    check(got && len == strlen(want) && memcmp(got, want, len) == 0, "%s: got %s, want %s", what,
          got ? got : "(null)", want);
    check(!got || got[len] == '\0', "%s: not NUL-terminated", what);
    free(got);
}

static void structure(void)
{
    jw w;
    jw_init(&w, 0);
    jw_object_open(&w);
    jw_object_close(&w);
    expect(&w, "{}", "empty object");

    jw_init(&w, 0);
    jw_array_open(&w);
    jw_int(&w, 1);
    jw_array_open(&w);
    jw_array_close(&w);
    jw_object_open(&w);
    jw_member_int(&w, "a", 2);
    jw_member(&w, "b");
    jw_array_open(&w);
    jw_null(&w);
    jw_bool(&w, 1);
    jw_bool(&w, 0);
    jw_array_close(&w);
    jw_object_close(&w);
    jw_cstring(&w, "x");
    jw_array_close(&w);
    expect(&w, "[1,[],{\"a\":2,\"b\":[null,true,false]},\"x\"]", "nesting and commas");
}

static void strings(void)
{
    jw w;
    static const char raw[] = "q\"b\\n\nr\rt\tb\bf\f\x01\x1f\x7f\0end";
    jw_init(&w, 0);
    jw_string(&w, raw, sizeof(raw) - 1);
    expect(&w, "\"q\\\"b\\\\n\\nr\\rt\\tb\\bf\\f\\u0001\\u001f\x7f\\u0000end\"", "escapes");

    jw_init(&w, 0);
    jw_cstring(&w, "ключ 🙂");
    expect(&w, "\"ключ 🙂\"", "UTF-8 as it is");

    jw_init(&w, 0);
    jw_object_open(&w);
    jw_member_string(&w, "we\"ird", "", 0);
    jw_object_close(&w);
    expect(&w, "{\"we\\\"ird\":\"\"}", "escaped member name, empty value");

    /* A string far past the initial capacity, all of it escaped. */
    size_t n = 100000;
    char *big = malloc(n), *want = malloc(n * 6 + 3);
    memset(big, 1, n);
    char *o = want;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        memcpy(o, "\\u0001", 6);
        o += 6;
    }
    *o++ = '"';
    *o = '\0';
    jw_init(&w, 16);
    jw_string(&w, big, n);
    expect(&w, want, "a large escaped string");
    free(big);
    free(want);
}

static void numbers(void)
{
    jw w;
    jw_init(&w, 0);
    jw_array_open(&w);
    jw_int(&w, 0);
    jw_int(&w, -1);
    jw_int(&w, INT64_MAX);
    jw_int(&w, INT64_MIN);
    jw_double(&w, 0.5);
    jw_double(&w, 1e-6);
    jw_array_close(&w);
    expect(&w, "[0,-1,9223372036854775807,-9223372036854775808,0.5,1e-06]", "numbers");

    /* Every power of ten and its neighbours, both signs: as printf writes them. */
    for (int64_t p = 1; p > 0 && p <= INT64_MAX / 10; p *= 10) {
        const int64_t vals[] = {p - 1, p, p + 1, -(p - 1), -p, -(p + 1)};
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
            char want[32];
            jw_init(&w, 0);
            jw_int(&w, vals[i]);
            snprintf(want, sizeof(want), "%lld", (long long)vals[i]);
            expect(&w, want, "an integer as printf writes it");
        }
    }
}

static void raw_values(void)
{
    jw w;
    jw_init(&w, 0);
    jw_object_open(&w);
    jw_member_cstring(&w, "id", "1-0");
    jw_members_raw(&w, "{\"a\":1,\"b\":[2]}", 15);
    jw_members_raw(&w, "{}", 2);
    jw_member(&w, "m");
    jw_raw(&w, "{\"r\":\"x\"}", 9);
    jw_object_close(&w);
    expect(&w, "{\"id\":\"1-0\",\"a\":1,\"b\":[2],\"m\":{\"r\":\"x\"}}", "raw members and values");

    jw_init(&w, 0);
    jw_object_open(&w);
    jw_members_raw(&w, "[1]", 3);
    jw_object_close(&w);
    size_t len;
    check(jw_finish(&w, &len) == NULL, "members of a non-object were written");
}

static void too_deep(void)
{
    jw w;
    jw_init(&w, 0);
    for (int i = 0; i < JW_MAX_DEPTH + 1; i++)
        jw_array_open(&w);
    for (int i = 0; i < JW_MAX_DEPTH + 1; i++)
        jw_array_close(&w);
    size_t len;
    check(jw_finish(&w, &len) == NULL, "a document deeper than JW_MAX_DEPTH was finished");
}

int main(void)
{
    structure();
    strings();
    numbers();
    raw_values();
    too_deep();
    return check_done("json_writer_cases");
}
