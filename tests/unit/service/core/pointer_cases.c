/* Pointer text read back: every pointer pointer_format() writes parses to
 * its key and digest prefix, and text that only resembles one does not. */
#include "check.h"
#include "pointer.h"

#include <string.h>

static const char sha[] = "5d1e0a3b9c7f2e41aaaabbbbccccddddeeeeffff00001111222233334444abcd";

static void round_trip(const char *key)
{
    char text[512], got[300], prefix[POINTER_SHA_HEX + 1];
    size_t key_len = strlen(key), got_len = 0;
    size_t n = pointer_format(text, key, key_len, sha);
    check(n == pointer_length(key, key_len), "length of the pointer of '%s'", key);
    int rc = pointer_parse(text, n, got, sizeof(got), &got_len, prefix);
    check(rc == 0, "pointer of '%s' does not parse: %s", key, text);
    check(rc == 0 && got_len == key_len && memcmp(got, key, key_len) == 0 && got[key_len] == '\0',
          "key of '%s' read back as '%s'", key, got);
    check(rc == 0 && strncmp(prefix, sha, POINTER_SHA_HEX) == 0 &&
              prefix[POINTER_SHA_HEX] == '\0',
          "digest prefix of '%s' read back as %s", key, prefix);
}

static void refused(const char *text, size_t key_cap)
{
    char key[300], prefix[POINTER_SHA_HEX + 1];
    size_t len;
    check(pointer_parse(text, strlen(text), key, key_cap, &len, prefix) == -1,
          "'%s' parsed as a pointer", text);
}

int main(void)
{
    round_trip("build.log");
    round_trip("k");
    round_trip("notes/db schema");
    round_trip("a key sha256:0123456789abcdef] with [externalized inside");
    round_trip("\xc3\xa9t\xc3\xa9 \xf0\x9f\x9a\x80");

    char key[300], prefix[POINTER_SHA_HEX + 1];
    size_t len;
    const char *spaced = " \n\t[externalized x sha256:0123456789abcdef]\r\n ";
    check(pointer_parse(spaced, strlen(spaced), key, sizeof(key), &len, prefix) == 0 &&
              strcmp(key, "x") == 0 && strcmp(prefix, "0123456789abcdef") == 0,
          "white space around a pointer is ignored");

    refused("", sizeof(key));
    refused("build.log", sizeof(key));
    refused("[externalized  sha256:0123456789abcdef]", sizeof(key)); /* an empty key */
    refused("[externalized sha256:0123456789abcdef]", sizeof(key));  /* no key */
    refused("[externalized x sha256:0123456789ABCDEF]", sizeof(key));
    refused("[externalized x sha256:0123456789abcde]", sizeof(key));
    refused("[externalized x sha256:0123456789abcdef0]", sizeof(key));
    refused("[externalized x sha256:0123456789abcdef", sizeof(key));
    refused("[Externalized x sha256:0123456789abcdef]", sizeof(key));
    refused("[externalized x sha256:0123456789abcdef] trailing", sizeof(key));
    refused("[externalized x sha1:0123456789abcdef]", sizeof(key));
    refused("[externalized abcd sha256:0123456789abcdef]", 4); /* no room for the key */
    return check_done("pointer_cases");
}
