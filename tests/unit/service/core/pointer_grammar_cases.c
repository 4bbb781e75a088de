/* Pointer grammar: what pointer_format() writes, that pointer_parse() reads it
 * back, that no key can make a pointer that holds or reads as another
 * pointer, and that what is not a pointer is refused. */
#include "check.h"
#include "pointer.h"

#include <string.h>

#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Counts the places where a pointer as pointer_parse() reads it starts and
 * ends inside s: every '[' ... ']' span that parses. */
typedef struct {
    char key[UNIT_KEY_MAX_BYTES + 1];
    size_t key_len;
    char sha256_prefix[POINTER_SHA_HEX + 1];
} parsed;

static int parse(const char *s, size_t len, parsed *r)
{
    return pointer_parse(s, len, r->key, sizeof(r->key), &r->key_len, r->sha256_prefix);
}

static int pointers_inside(const char *s, size_t len)
{
    int found = 0;
    parsed r;
    for (size_t i = 0; i < len; i++)
        for (size_t j = i + 1; j <= len; j++)
            if (s[i] == '[' && s[j - 1] == ']' && parse(s + i, j - i, &r) == 0)
                found++;
    return found;
}

static void round_trip(const char *key)
{
    char ptr[POINTER_MAX_BYTES];
    size_t len = pointer_format(ptr, key, strlen(key), SHA);
    parsed r;
    check(len == pointer_length(key, strlen(key)), "%s: length %zu, pointer_length %zu", key, len,
          pointer_length(key, strlen(key)));
    check(len == strlen(ptr), "%s: not NUL-terminated at its length", key);
    check(parse(ptr, len, &r) == 0, "%s: %s does not parse back", key, ptr);
    check(r.key[r.key_len] == '\0', "%s: key not NUL-terminated", key);
    check(r.key_len == strlen(key) && memcmp(r.key, key, r.key_len) == 0, "%s: parsed back as %.*s",
          key, (int)r.key_len, r.key);
    check(strcmp(r.sha256_prefix, "0123456789abcdef") == 0, "%s: digest %s", key, r.sha256_prefix);
    check(pointers_inside(ptr, len) == 1, "%s: %s holds %d pointers, not 1", key, ptr,
          pointers_inside(ptr, len));
}

static void plain_keys_read_as_before(void)
{
    char ptr[POINTER_MAX_BYTES];
    pointer_format(ptr, "build.log", 9, SHA);
    check(strcmp(ptr, "[externalized build.log sha256:0123456789abcdef]") == 0, "got %s", ptr);
    check(pointer_length("build.log", 9) == 9 + POINTER_OVERHEAD, "plain key length");
}

static void hostile_keys_are_escaped(void)
{
    /* A key that once made a pointer carrying another key's pointer. */
    static const char key[] = "a sha256:0123456789abcdef] [externalized y";
    char ptr[POINTER_MAX_BYTES];
    size_t len = pointer_format(ptr, key, strlen(key), SHA);
    check(strstr(ptr, "[externalized a sha256:0123456789abcdef]") == NULL,
          "the pointer of %s holds the pointer of key a: %s", key, ptr);
    check(strstr(ptr, "[externalized y") == NULL, "holds the start of y's pointer: %s", ptr);
    check(memchr(ptr + 1, '[', len - 1) == NULL && memchr(ptr, ']', len - 1) == NULL,
          "a bracket inside the pointer: %s", ptr);
    check(strcmp(ptr, "[externalized a sha256:0123456789abcdef%5D %5Bexternalized y "
                      "sha256:0123456789abcdef]") == 0,
          "got %s", ptr);

    /* The escape is escaped too, so different keys never share a pointer. */
    char a[POINTER_MAX_BYTES], b[POINTER_MAX_BYTES];
    pointer_format(a, "x%5B", 4, SHA);
    pointer_format(b, "x[", 2, SHA);
    check(strcmp(a, b) != 0, "x%%5B and x[ share the pointer %s", a);

    const char *keys[] = {
        "%",           "[",      "]",        "%%5D",          "[]", "a]b[c", "ключ:{tag}",
        "100% + more", "sp ace", " sha256:", "q?x=1&y=2#frag"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        round_trip(keys[i]);

    char longest[UNIT_KEY_MAX_BYTES + 1];
    memset(longest, ']', UNIT_KEY_MAX_BYTES);
    longest[UNIT_KEY_MAX_BYTES] = '\0';
    round_trip(longest);
    check(pointer_length(longest, UNIT_KEY_MAX_BYTES) + 1 == POINTER_MAX_BYTES,
          "POINTER_MAX_BYTES is not the longest pointer");
}

static void non_pointers_are_refused(void)
{
    static const char *bad[] = {
        "",
        "[externalized  sha256:0123456789abcdef]",     /* empty key */
        "[externalized a sha256:0123456789abcde]",     /* 15 digits */
        "[externalized a sha256:0123456789ABCDEF]",    /* upper-case digest */
        "[externalized a sha256:0123456789abcdefg]",   /* 17 characters */
        "[externalized a sha256:0123456789abcdef",     /* no closing bracket */
        "externalized a sha256:0123456789abcdef]",     /* no opening bracket */
        "[externalised a sha256:0123456789abcdef]",    /* another word */
        "[externalized a]b sha256:0123456789abcdef]",  /* raw bracket in the key */
        "[externalized a[b sha256:0123456789abcdef]",  /* raw bracket in the key */
        "[externalized a%41 sha256:0123456789abcdef]", /* an escape never written */
        "[externalized a%5b sha256:0123456789abcdef]", /* lower-case escape */
        "[externalized a%5 sha256:0123456789abcdef]",  /* cut escape */
        "[externalized a sha256:0123456789abcdef]x",   /* trailing byte */
        "x[externalized a sha256:0123456789abcdef]",   /* leading byte */
        "[externalized asha256:0123456789abcdef]",     /* no space */
        "[externalized a sha256:0123456789abcdef][externalized b sha256:0123456789abcdef]",
    };
    parsed r;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        check(parse(bad[i], strlen(bad[i]), &r) != 0, "parsed: \"%s\"", bad[i]);
    check(parse("[externalized a\0b sha256:0123456789abcdef]", 41, &r) != 0,
          "a key holding a NUL parsed");

    char too_long[POINTER_MAX_BYTES + 8];
    size_t n = 0;
    memcpy(too_long, "[externalized ", 14);
    n = 14;
    memset(too_long + n, 'k', UNIT_KEY_MAX_BYTES + 1);
    n += UNIT_KEY_MAX_BYTES + 1;
    memcpy(too_long + n, " sha256:0123456789abcdef]", 25);
    n += 25;
    check(parse(too_long, n, &r) != 0, "a key over the limit parsed");

    /* White space around a quoted pointer is ignored; a key that does not
     * fit the caller's room is refused. */
    static const char quoted[] = " \n[externalized k%5D sha256:0123456789abcdef]\t ";
    check(parse(quoted, sizeof(quoted) - 1, &r) == 0 && r.key_len == 2 &&
              memcmp(r.key, "k]", 2) == 0,
          "a pointer quoted with white space");
    char small[2];
    size_t small_len;
    char prefix[POINTER_SHA_HEX + 1];
    check(pointer_parse(quoted, sizeof(quoted) - 1, small, sizeof(small), &small_len, prefix) != 0,
          "a key longer than its room parsed");
}

int main(void)
{
    plain_keys_read_as_before();
    hostile_keys_are_escaped();
    non_pointers_are_refused();
    return check_done("pointer_grammar_cases");
}
