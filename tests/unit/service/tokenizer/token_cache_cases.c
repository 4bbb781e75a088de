/* The token cache keeps every entry of a set until a fifth arrives, and then
 * forgets the least recently used one: two texts of one history whose
 * digests share a set no longer push each other out on every turn. */
#include "token_cache.h"
#include "check.h"

#include <stdio.h>
#include <string.h>

static int tok_a, tok_b; /* two tokenizers, told apart by address */

/* A digest whose set (the low bits of its first 64) is the same for every i,
 * and whose second 64 bits are i. */
static void same_set(unsigned i, char hex[65])
{
    snprintf(hex, 65, "%016x%016x%032x", 0x5a000u, i, 0u);
}

static int has(const void *tok, unsigned i, int64_t want)
{
    char hex[65];
    int64_t v[TOKEN_CACHE_VALUES] = {-1, -1};
    same_set(i, hex);
    return token_cache_get(tok, hex, v) && v[0] == want && v[1] == want + 1;
}

static void put(const void *tok, unsigned i, int64_t value)
{
    char hex[65];
    same_set(i, hex);
    token_cache_put(tok, hex, (int64_t[TOKEN_CACHE_VALUES]){value, value + 1});
}

int main(void)
{
    /* Two entries of one set, used in turn: both stay. */
    put(&tok_a, 1, 10);
    put(&tok_a, 2, 20);
    for (int turn = 0; turn < 5; turn++) {
        check(has(&tok_a, 1, 10), "turn %d: the first of two entries of a set is kept", turn);
        check(has(&tok_a, 2, 20), "turn %d: the second of two entries of a set is kept", turn);
    }

    /* A set holds TOKEN_CACHE_WAYS entries. */
    token_cache_clear();
    for (unsigned i = 0; i < TOKEN_CACHE_WAYS; i++)
        put(&tok_a, i, 100 + i);
    for (unsigned i = 0; i < TOKEN_CACHE_WAYS; i++)
        check(has(&tok_a, i, 100 + i), "entry %u of a full set is found", i);

    /* Touch every entry but 1, then add one more: 1 is the one forgotten. */
    for (unsigned i = 0; i < TOKEN_CACHE_WAYS; i++)
        if (i != 1)
            check(has(&tok_a, i, 100 + i), "entry %u is found again", i);
    put(&tok_a, 99, 999);
    check(!has(&tok_a, 1, 101), "the least recently used entry makes room");
    check(has(&tok_a, 99, 999), "the new entry is found");
    for (unsigned i = 0; i < TOKEN_CACHE_WAYS; i++)
        if (i != 1)
            check(has(&tok_a, i, 100 + i), "entry %u, used more recently, stays", i);

    /* Storing a present entry again replaces its values, taking no second way. */
    put(&tok_a, 99, 7);
    check(has(&tok_a, 99, 7), "a stored entry's values are replaced");
    for (unsigned i = 0; i < TOKEN_CACHE_WAYS; i++)
        if (i != 1)
            check(has(&tok_a, i, 100 + i), "entry %u stays when another is stored again", i);

    /* The same digest under another tokenizer is another entry. */
    check(!has(&tok_b, 99, 7), "another tokenizer's lookup misses");
    put(&tok_b, 99, 55);
    check(has(&tok_b, 99, 55) && !has(&tok_a, 1, 101), "each tokenizer has its own entry");

    token_cache_clear();
    check(!has(&tok_a, 99, 7) && !has(&tok_b, 99, 55), "clear forgets everything");
    return check_done("token_cache_cases");
}
