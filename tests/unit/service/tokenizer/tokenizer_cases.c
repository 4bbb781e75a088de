/* The encodings on the real rank files: names, a few counts checked by hand
 * against gpt-tokenizer, bytes that are not UTF-8, the bounds every count
 * keeps, and start-up loading of missing (left out, named) and damaged
 * (refused) rank files.
 *   tokenizer_cases <ranks folder> */
#include "tokenizer.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *text;
    int64_t o200k, cl100k;
} count_case;

/* Counts from gpt-tokenizer 4.0.0's countTokens (no special tokens). */
static const count_case counts[] = {
    {"hello world", 2, 2},
    {"<|endoftext|>", 7, 7}, /* ordinary text, never the one special token */
    {"Hello, World! It's 2024.", 9, 10},
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83"
     "\x88",
     6, 8},
    {"   \n\n  x", 3, 3},
    {"'S'LL", 3, 3},
};

static int64_t count_of(const char *name, const char *text, size_t len)
{
    const tokenizer *t = tokenizer_find(name, strlen(name));
    return t ? tokenizer_count(t, text, len) : -2;
}

static void copy_file(const char *from, const char *to, long flip_at)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out)
        abort();
    int c;
    for (long i = 0; (c = getc(in)) != EOF; i++)
        putc(i == flip_at ? c ^ 1 : c, out);
    fclose(in);
    fclose(out);
}

static void loading(const char *dir)
{
    char err[600];
    check(tokenizer_find("o200k_base", 10) == NULL, "o200k_base findable before its ranks load");
    check(tokenizer_find("bytes", 5) != NULL, "bytes needs no ranks");

    /* Missing files leave their encodings out, named; bytes still counts. */
    char list[600];
    check(tokenizer_load("/nonexistent-ranks", err, sizeof err) == 0, "a missing folder: %s", err);
    check(tokenizer_find("o200k_base", 10) == NULL, "findable without its file");
    const char *missing = tokenizer_missing_file("o200k_base", 10);
    check(missing && strcmp(missing, "/nonexistent-ranks/o200k_base.tiktoken") == 0,
          "the missing file named: %s", missing ? missing : "(none)");
    check(tokenizer_missing_file("bytes", 5) == NULL, "bytes needs no file");
    check(tokenizer_missing_list(list, sizeof list) == 2 &&
              strstr(list, "cl100k_base (/nonexistent-ranks/cl100k_base.tiktoken)"),
          "the missing list: %s", list);
    check(tokenizer_count(tokenizer_find("bytes", 5), "four", 4) == 4, "bytes counts");

    /* A copy with one bit flipped is refused by its digest. */
    char tmp[] = "/tmp/compactd-tok.XXXXXX", from[4096], to[4096];
    if (!mkdtemp(tmp)) {
        fail("mkdtemp");
        return;
    }
    snprintf(from, sizeof from, "%s/o200k_base.tiktoken", dir);
    snprintf(to, sizeof to, "%s/o200k_base.tiktoken", tmp);
    copy_file(from, to, 1000);
    check(tokenizer_load(tmp, err, sizeof err) == -1 && strstr(err, "sha256") && strstr(err, to),
          "a damaged o200k file: %s", err);
    unlink(to);
    rmdir(tmp);

    check(tokenizer_load(dir, err, sizeof err) == 0, "load %s: %s", dir, err);
    check(tokenizer_missing_list(list, sizeof list) == 0 &&
              tokenizer_missing_file("o200k_base", 10) == NULL,
          "files found on a later load are no longer missing: %s", list);
}

static void names(void)
{
    const char *known[] = {"bytes", "o200k_base", "cl100k_base"};
    for (size_t i = 0; i < 3; i++) {
        const tokenizer *t = tokenizer_find(known[i], strlen(known[i]));
        check(t && strcmp(tokenizer_name(t), known[i]) == 0, "find %s", known[i]);
    }
    check(tokenizer_find("o200k", 5) == NULL, "a prefix is not a name");
    check(tokenizer_find("o200k_base\0", 11) == NULL, "a name with a NUL after it");
    check(tokenizer_find("O200K_BASE", 10) == NULL, "names are case-sensitive");
    check(tokenizer_find("", 0) == NULL, "the empty name");
    check(strcmp(tokenizer_name(tokenizer_default()), "bytes") == 0, "the default is bytes");
    tokenizer_set_default(tokenizer_find("cl100k_base", 11));
    check(strcmp(tokenizer_name(tokenizer_default()), "cl100k_base") == 0, "set_default");
}

static void known_counts(void)
{
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        const count_case *c = &counts[i];
        int64_t o = count_of("o200k_base", c->text, strlen(c->text));
        int64_t k = count_of("cl100k_base", c->text, strlen(c->text));
        check(o == c->o200k, "o200k \"%s\": %lld, expected %lld", c->text, (long long)o,
              (long long)c->o200k);
        check(k == c->cl100k, "cl100k \"%s\": %lld, expected %lld", c->text, (long long)k,
              (long long)c->cl100k);
        check(count_of("bytes", c->text, strlen(c->text)) == (int64_t)strlen(c->text),
              "bytes \"%s\"", c->text);
    }
    check(count_of("o200k_base", "", 0) == 0, "empty text");
}

static void not_utf8(void)
{
    /* Each bad byte is a token and splits the text: "a" | ff | "b". */
    const struct {
        const char *text;
        size_t len;
        int64_t tokens;
    } cases[] = {
        {"\xff", 1, 1},
        {"a\xff"
         "b",
         3, 3},
        {"\xed\xa0\x80", 3, 3},     /* an encoded surrogate */
        {"\xc0\xaf", 2, 2},         /* an overlong '/' */
        {"\xf4\x90\x80\x80", 4, 4}, /* past U+10FFFF */
        {"hello\xe6\x97", 7, 3},    /* cut inside a character: hello | e6 | 97 */
        {"x\0y", 3, 3},             /* NUL is a character like any other */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int64_t n = count_of("o200k_base", cases[i].text, cases[i].len);
        check(n == cases[i].tokens, "not UTF-8 case %zu: %lld tokens, expected %lld", i,
              (long long)n, (long long)cases[i].tokens);
    }
}

/* Long texts with no split: the bounds hold and the heap path answers. */
static void long_runs(void)
{
    size_t len = 1 << 20;
    char *s = malloc(len);
    const char *names[] = {"o200k_base", "cl100k_base"};
    const char fill[] = {'a', ' ', '7', '!', '\n'};
    for (size_t f = 0; f < sizeof fill; f++) {
        memset(s, fill[f], len);
        for (size_t k = 0; k < 2; k++) {
            int64_t n = count_of(names[k], s, len);
            check(n >= 1 && n <= (int64_t)len, "%s, 1 MiB of 0x%02x: %lld tokens", names[k],
                  fill[f], (long long)n);
        }
    }
    free(s);
}

/* Whitespace runs past PCRE2's default step limit (which a run of
 * 10,000,384 spaces used to meet, counted as out of memory): counted, and
 * exactly. A uniform run merges the same way at every scale, so from 3 KiB
 * up each doubling doubles the count; that law, seen below the old limit,
 * predicts the count at 12 MiB. */
static void whitespace_runs(void)
{
    enum { TOP = 22 }; /* 3 << 22: 12 MiB */
    char *s = malloc((size_t)3 << TOP);
    const char *names[] = {"o200k_base", "cl100k_base"};
    const char fill[] = {' ', '\t'};
    for (size_t f = 0; f < sizeof fill; f++) {
        memset(s, fill[f], (size_t)3 << TOP);
        for (size_t k = 0; k < 2; k++) {
            int64_t prev = count_of(names[k], s, (size_t)3 << 10);
            for (int e = 11; e <= TOP; e++) {
                int64_t n = count_of(names[k], s, (size_t)3 << e);
                check(n == 2 * prev, "%s, %zu bytes of 0x%02x: %lld tokens, %lld at half", names[k],
                      (size_t)3 << e, fill[f], (long long)n, (long long)prev);
                prev = n;
            }
        }
    }
    free(s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tokenizer_cases <ranks folder>\n");
        return 2;
    }
    loading(argv[1]);
    names();
    known_counts();
    not_utf8();
    long_runs();
    whitespace_runs();
    tokenizer_unload();
    return check_done("tokenizer_cases");
}
