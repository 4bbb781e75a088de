/* SHA-256 against the FIPS 180-4 example vectors, and the hardware rounds
 * against the portable ones on every length around the block boundaries. */
#include "check.h"
#include "sha256.h"

#include <stdlib.h>
#include <string.h>

static void vector(const char *msg, size_t len, const char *want)
{
    char got[SHA256_HEX_LEN + 1], generic[SHA256_HEX_LEN + 1];
    sha256_hex(msg, len, got);
    sha256_hex_generic(msg, len, generic);
    check(strcmp(got, want) == 0, "sha256 of %zu bytes: got %s, want %s", len, got, want);
    check(strcmp(generic, want) == 0, "portable sha256 of %zu bytes: got %s, want %s", len, generic,
          want);
}

/* The short form's check: lower-case hex, from POINTER_SHA_HEX digits to a
 * whole digest. */
static void prefixes(void)
{
    static const char hex[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0";
    static const struct {
        const char *p;
        size_t len;
        int valid;
    } cases[] = {
        {hex, POINTER_SHA_HEX, 1},     {hex, POINTER_SHA_HEX - 1, 0},
        {hex, POINTER_SHA_HEX + 1, 1}, {hex, SHA256_HEX_LEN, 1},
        {hex, SHA256_HEX_LEN + 1, 0},   {"0123456789ABCDEF", 16, 0},
        {"0123456789abcdeg", 16, 0},    {"0123456789abcde ", 16, 0},
        {"0123456789abcde\0", 16, 0},   {"", 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(sha256_prefix_valid(cases[i].p, cases[i].len) == cases[i].valid,
              "prefix case %zu (%zu digits): want %d", i, cases[i].len, cases[i].valid);
}

int main(void)
{
    prefixes();
    vector("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    vector("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    vector(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *four =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmno"
        "pqklmnopqrlmnopqrsmnopqrstnopqrstu";
    vector(four, strlen(four), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

    size_t million = 1000000;
    char *a = malloc(million);
    if (!a)
        return 1;
    memset(a, 'a', million);
    vector(a, million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

    /* Every length up to four blocks and a sample beyond, over varied bytes
     * (NUL and high bytes included). */
    unsigned x = 12345;
    for (size_t i = 0; i < million; i++) {
        x = x * 1103515245u + 12345u;
        a[i] = (char)(x >> 16);
    }
    for (size_t len = 0; len < 4096; len = len < 300 ? len + 1 : len * 2 + 7) {
        char fast[SHA256_HEX_LEN + 1], slow[SHA256_HEX_LEN + 1];
        sha256_hex(a, len, fast);
        sha256_hex_generic(a, len, slow);
        check(strcmp(fast, slow) == 0, "length %zu: %s != %s", len, fast, slow);
    }
    free(a);
    return check_done("sha256_cases");
}
