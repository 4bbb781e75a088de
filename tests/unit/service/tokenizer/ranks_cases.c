/* The .tiktoken loader refuses every damaged file it is given, with a
 * message naming the line, and checks a file's SHA-256 before parsing it. */
#include "ranks.h"
#include "check.h"
#include "sha256.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "a" "b" "ab" "\xff\x00" as a well-formed file. */
static const char good[] = "YQ== 0\nYg== 1\nYWI= 2\n/wA= 3\n";

typedef struct {
    const char *text;
    size_t expected_n;
    const char *message; /* a part of the error message */
    const char *why;
} bad_case;

static const bad_case bad[] = {
    {"", 0, "empty", "an empty file"},
    {"YQ== 0\nYg== 1\nYWI= 2", 0, "line 3: truncated", "cut inside the last line"},
    {"YQ== 0\nYg== 1\nYW", 0, "line 3: truncated", "cut inside a token"},
    {"YQ== 0\nYg== 1\n", 4, "holds 2 tokens, expected 4", "cut after a newline"},
    {"YQ== 0\nYg== 1\nYQ== 2\n", 0, "line 3: the same token as line 1", "a duplicated token"},
    {"YQ== 0\nYg== 0\n", 0, "line 2: rank 0 where 1 was due", "a duplicated rank"},
    {"YQ== 0\nYg== 2\n", 0, "line 2: rank 2 where 1 was due", "a missing rank"},
    {"YQ== 0\nY!== 1\n", 0, "line 2: not", "a character outside base64"},
    {"YQ== 0\nYg= 1\n", 0, "line 2: not", "base64 of a wrong length"},
    {"YQ== 0\nYh== 1\n", 0, "line 2: not", "padding over bits that are not zero"},
    {"YQ== 0\nY=g= 1\n", 0, "line 2: not", "padding inside"},
    {"YQ== 0\n==== 1\n", 0, "line 2: not", "padding only"},
    {"YQ== 0\n 1\n", 0, "line 2: not", "no token"},
    {"YQ== 0\nYg==\n", 0, "line 2: not", "no rank"},
    {"YQ== 0\nYg== -1\n", 0, "line 2: the rank is not", "a negative rank"},
    {"YQ== 0\nYg== 1 \n", 0, "line 2: the rank is not", "trailing space"},
    {"YQ== 0\nYg== 01\n", 0, "line 2: the rank is not", "a leading zero"},
    {"YQ== 0\nYg== 99999999999\n", 0, "line 2: the rank is not", "a rank past 2^31"},
    {"YQ== 0\n\nYg== 2\n", 0, "line 2: not", "an empty line"},
    {"YQ== 0\r\nYg== 1\r\n", 0, "line 1: the rank is not", "CRLF line ends"},
};

static void parse_cases(void)
{
    char err[200];
    ranks *r = ranks_parse(good, strlen(good), 4, err, sizeof err);
    check(r != NULL, "the good table: %s", r ? "" : err);
    if (r) {
        check(ranks_size(r) == 4, "good: %zu tokens", ranks_size(r));
        check(ranks_lookup(r, (const unsigned char *)"ab", 2) == 2, "ab is rank 2");
        check(ranks_lookup(r, (const unsigned char *)"\xff\0", 2) == 3, "ff 00 is rank 3");
        check(ranks_lookup(r, (const unsigned char *)"ba", 2) == RANKS_NONE, "ba is no token");
        check(ranks_lookup(r, (const unsigned char *)"abc", 3) == RANKS_NONE, "longer than any");
        check(ranks_lookup(r, (const unsigned char *)"", 0) == RANKS_NONE, "empty is no token");
        ranks_free(r);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        r = ranks_parse(bad[i].text, strlen(bad[i].text), bad[i].expected_n, err, sizeof err);
        check(r == NULL, "%s: accepted", bad[i].why);
        check(r != NULL || strstr(err, bad[i].message), "%s: message \"%s\", expected \"%s\"",
              bad[i].why, err, bad[i].message);
        ranks_free(r);
    }
}

static void file_cases(void)
{
    char dir[] = "/tmp/compactd-ranks.XXXXXX";
    if (!mkdtemp(dir)) {
        fail("mkdtemp");
        return;
    }
    char path[256], sha[SHA256_HEX_LEN + 1], err[400];
    snprintf(path, sizeof path, "%s/good.tiktoken", dir);
    FILE *f = fopen(path, "wb");
    fputs(good, f);
    fclose(f);
    sha256_hex(good, strlen(good), sha);

    ranks *r = ranks_load_file(path, sha, 4, err, sizeof err);
    check(r != NULL, "load good: %s", r ? "" : err);
    ranks_free(r);

    char wrong[SHA256_HEX_LEN + 1];
    memcpy(wrong, sha, sizeof wrong);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    r = ranks_load_file(path, wrong, 4, err, sizeof err);
    check(r == NULL && strstr(err, "sha256") && strstr(err, path),
          "a file whose sha256 differs: %s", r ? "accepted" : err);
    ranks_free(r);

    /* A damaged file with the right digest still fails to parse, naming it. */
    const char *damaged = "YQ== 0\nYg== 1\nYW";
    f = fopen(path, "wb");
    fputs(damaged, f);
    fclose(f);
    sha256_hex(damaged, strlen(damaged), sha);
    r = ranks_load_file(path, sha, 0, err, sizeof err);
    check(r == NULL && strstr(err, path) && strstr(err, "truncated"), "damaged: %s",
          r ? "accepted" : err);
    ranks_free(r);
    unlink(path);

    r = ranks_load_file(path, sha, 0, err, sizeof err);
    check(r == NULL && strstr(err, path) && strstr(err, "No such file"), "missing: %s",
          r ? "accepted" : err);
    ranks_free(r);
    rmdir(dir);
}

int main(void)
{
    parse_cases();
    file_cases();
    return check_done("ranks_cases");
}
