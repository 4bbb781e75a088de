/* The compact route's direct reader against the tree path, its oracle:
 * every body the direct reader takes, the tree path accepts into the same
 * request (every field, every string byte for byte) with the same price
 * held from the answer account; every body the tree path refuses, the
 * direct reader gives up on, so that json_decode_compact() answers every
 * body exactly as the tree path does (the same error, path and message);
 * and it does take the plain bodies compactd is sent, or the speed is
 * gone. Generated bodies (every unit field, strings with every kind of
 * escape and UTF-8 sequence, numbers in every form, random whitespace and
 * member order, wrong types, duplicates, limits crossed) under four sets
 * of limits and two answer accounts, then byte-level mutations of them. */
#define XORSHIFT_SEED 0x6469726563740a01u
#include "answer_account.h"
#include "check.h"
#include "json_decode.h"
#include "json_direct.h"
#include "xorshift.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const decode_limits limit_sets[] = {
    {4, 16, 64, 100, 100},
    {64, 256, 1 << 20, 1 << 20, 50},
    {0, 8, 8, 8, 50},
    {2, 3, 200, 200, 50},
};
#define LIMIT_SETS (sizeof(limit_sets) / sizeof(limit_sets[0]))

/* ---- An answer account that counts, and refuses past its cap ---- */

typedef struct {
    size_t cap, held;
} account_state;

static answer_refusal take(void *cls, size_t n, int force)
{
    account_state *s = cls;
    if (!force && (n > s->cap || s->held > s->cap - n))
        return ANSWER_TOO_LARGE;
    s->held += n;
    return ANSWER_OK;
}

static void give(void *cls, size_t n)
{
    ((account_state *)cls)->held -= n;
}

/* ---- Bodies ---- */

/* Whether this body may go wrong: half the bodies are made with no fault
 * planted, so that many are accepted and the request compared. */
static int noisy;

/* A fault planted one time in k, in a noisy body. */
static int fault(size_t k)
{
    return noisy && below(k) == 0;
}

typedef struct {
    char *s;
    size_t len, cap;
    int odd; /* holds what only the tree path reads (metadata, an escaped name) */
} body;

static void put(body *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(body *b, const char *s)
{
    put(b, s, strlen(s));
}

static void space(body *b)
{
    static const char *const ws[] = {"", "", "", " ", "\n", "\t ", "\r\n  "};
    puts_(b, ws[below(sizeof(ws) / sizeof(ws[0]))]);
}

/* A string's inside: plain words, every escape, UTF-8 of every length,
 * and now and then what JSON refuses or a key must not hold. */
static void string_inside(body *b, size_t pieces)
{
    static const char *const ok[] = {
        "a",        "key",          "tool_result",
        " ",        "\\n",          "\\\"",
        "\\\\",     "\\/",          "\\t",
        "\\u00e9",  "\\u20AC",      "\\ud83d\\ude00",
        "\xc3\xa9", "\xe2\x86\x92", "\xf0\x9f\x98\x80",
        "\x7f",     "0123456789",   "\\b\\f\\r",
        "\\u001f",  "\\u007f",      "\\u0020",
        "\\u0041",
    };
    static const char *const bad[] = {"\\u0000", "\x01",  "\xff",         "\xc0\x80", "\\ud800",
                                      "\\x",     "\\u12", "\xed\xa0\x80", "\\u0001"};
    for (size_t i = 0; i < pieces; i++)
        puts_(b, fault(40) ? bad[below(sizeof(bad) / sizeof(bad[0]))]
                           : ok[below(sizeof(ok) / sizeof(ok[0]))]);
}

static void string(body *b, size_t pieces)
{
    puts_(b, "\"");
    string_inside(b, pieces);
    puts_(b, "\"");
}

static void number(body *b)
{
    static const char *const odd[] = {
        "-1",         "1.0",        "1e3",         "01",  "-0",
        "2147483648", "2147483647", "-2147483649", "-",   "99999999999999999999",
        "0.5",        "1E2",        "true",        "null"};
    char n[32];
    if (fault(6)) {
        puts_(b, odd[below(sizeof(odd) / sizeof(odd[0]))]);
        return;
    }
    snprintf(n, sizeof(n), "%zu", below(4) == 0 ? below(1u << 31) : below(200));
    puts_(b, n);
}

/* A member's name and colon; now and then an escaped one, or one no
 * object has. */
static void name(body *b, const char *n)
{
    space(b);
    if (fault(60)) {
        puts_(b, "\"\\u006b\":"); /* "k" escaped: odd, and no field */
        b->odd = 1;
    } else if (fault(80)) {
        puts_(b, "\"extra\":");
    } else {
        puts_(b, "\"");
        puts_(b, n);
        puts_(b, "\":");
    }
    space(b);
}

/* A value of the wrong kind, or of the right one. */
static int wrong(body *b)
{
    static const char *const vals[] = {"null", "true", "[]", "{}", "\"s\"", "1", "[1,2]"};
    if (!fault(30))
        return 0;
    puts_(b, vals[below(sizeof(vals) / sizeof(vals[0]))]);
    return 1;
}

/* The next member of an object, its comma and name; 1 when a value of the
 * wrong kind was written for it, 0 when the caller writes the value. */
static int member(body *b, size_t *emitted, const char *n)
{
    if ((*emitted)++)
        puts_(b, ",");
    name(b, n);
    return wrong(b);
}

static void members_shuffled(const char **names, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = below(i);
        const char *t = names[i - 1];
        names[i - 1] = names[j];
        names[j] = t;
    }
}

static void summary(body *b)
{
    const char *names[3] = {"text", "tokens", fault(20) ? "x" : NULL};
    size_t n = names[2] ? 3 : 2, emitted = 0;
    puts_(b, "{");
    members_shuffled(names, n);
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || (strcmp(names[i], "tokens") == 0 && below(2)) ||
            (strcmp(names[i], "text") == 0 && fault(15)))
            continue;
        if (!member(b, &emitted, names[i])) {
            if (strcmp(names[i], "tokens") == 0)
                number(b);
            else
                string(b, below(4));
        }
    }
    space(b);
    puts_(b, "}");
}

static void unit(body *b, size_t i, size_t n_units)
{
    static const char *const classes[] = {"protected", "derivable", "redundant"};
    const char *names[10] = {"class", "key",     "tokens",    "text",     "priority",
                             "group", "summary", "reacquire", "metadata", NULL};
    size_t n = 9, emitted = 0;
    int cls = (int)below(3);
    members_shuffled(names, n);
    puts_(b, "{");
    for (size_t f = 0; f < n; f++) {
        const char *m = names[f];
        int keep = strcmp(m, "class") == 0 || strcmp(m, "key") == 0     ? !fault(40)
                   : strcmp(m, "tokens") == 0 || strcmp(m, "text") == 0 ? !noisy || below(4) != 0
                   : strcmp(m, "metadata") == 0                         ? below(25) == 0
                   : strcmp(m, "group") == 0                            ? below(3) == 0
                   : cls == 1                                           ? below(3) == 0
                                                                        : fault(25);
        if (!keep)
            continue;
        if (member(b, &emitted, m))
            continue;
        if (strcmp(m, "class") == 0) {
            puts_(b, "\"");
            puts_(b, fault(50) ? "Protected" : classes[cls]);
            puts_(b, "\"");
        } else if (strcmp(m, "key") == 0) {
            char k[32];
            /* Now and then the key of another unit. */
            snprintf(k, sizeof(k), "\"u%zu", fault(25) ? below(n_units) : i);
            puts_(b, k);
            string_inside(b, below(3));
            puts_(b, "\"");
        } else if (strcmp(m, "tokens") == 0 || strcmp(m, "priority") == 0) {
            number(b);
        } else if (strcmp(m, "summary") == 0) {
            summary(b);
        } else if (strcmp(m, "metadata") == 0) {
            puts_(b, "{\"origin\": \"tool\", \"n\": 3}");
            b->odd = 1;
        } else {
            string(b, strcmp(m, "text") == 0 ? below(30) + !noisy : below(4));
        }
        /* Now and then the same member twice. */
        if (fault(150)) {
            puts_(b, ",");
            name(b, m);
            puts_(b, "1");
        }
    }
    space(b);
    puts_(b, "}");
}

static void request(body *b)
{
    static const char *const modes[] = {"\"strict\"", "\"discovery\"", "\"lenient\""};
    static const char *const tokenizers[] = {"\"bytes\"", "\"o200k_base\"", "\"nope\""};
    const char *names[5] = {"budget", "units", "mode", "dry_run", "tokenizer"};
    size_t emitted = 0, n_units = below(8) == 0 ? below(70) : below(6);
    members_shuffled(names, 5);
    space(b);
    puts_(b, "{");
    for (size_t f = 0; f < 5; f++) {
        const char *m = names[f];
        int required = strcmp(m, "budget") == 0 || strcmp(m, "units") == 0;
        if (required ? fault(40) : below(2) == 0)
            continue;
        if (member(b, &emitted, m))
            continue;
        if (strcmp(m, "budget") == 0) {
            number(b);
        } else if (strcmp(m, "units") == 0) {
            puts_(b, "[");
            for (size_t i = 0; i < n_units; i++) {
                if (i)
                    puts_(b, ",");
                space(b);
                unit(b, i, n_units);
                space(b);
            }
            puts_(b, "]");
        } else if (strcmp(m, "mode") == 0) {
            puts_(b, modes[fault(3) ? 2 : below(2)]);
        } else if (strcmp(m, "dry_run") == 0) {
            puts_(b, below(2) ? "true" : "false");
        } else {
            puts_(b, tokenizers[fault(4) ? 2 : below(2)]);
        }
    }
    space(b);
    puts_(b, "}");
    space(b);
}

/* ---- The comparison ---- */

static int same_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    if (!a || !b)
        return !a && !b && an == bn;
    return an == bn && memcmp(a, b, an) == 0;
}

static int same_unit(const plan_unit *a, const plan_unit *b, const unit_detail *x,
                     const unit_detail *y)
{
    return same_bytes(a->key, a->key_len, b->key, b->key_len) && a->cls == b->cls &&
           a->tokens == b->tokens && a->has_text == b->has_text &&
           same_bytes(a->text, a->text_len, b->text, b->text_len) && a->priority == b->priority &&
           same_bytes(a->group, a->group_len, b->group, b->group_len) &&
           a->has_summary == b->has_summary && a->summary_tokens == b->summary_tokens &&
           a->pointer_tokens == b->pointer_tokens && x->has_tokens == y->has_tokens &&
           same_bytes(x->summary, x->summary_len, y->summary, y->summary_len) &&
           x->has_summary_tokens == y->has_summary_tokens &&
           same_bytes(x->reacquire, x->reacquire_len, y->reacquire, y->reacquire_len) &&
           same_bytes(x->metadata, x->metadata_len, y->metadata, y->metadata_len);
}

static int same_request(const compaction_request *a, const compaction_request *b)
{
    if (a->budget != b->budget || a->mode != b->mode || a->dry_run != b->dry_run ||
        a->tokenizer != b->tokenizer || a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (!same_unit(&a->units[i], &b->units[i], &a->detail[i], &b->detail[i]) ||
            strcmp(a->sha256[i], b->sha256[i]) != 0)
            return 0;
    return 1;
}

typedef struct {
    size_t bodies, tree_accepts, direct_takes, plain_accepts, plain_takes;
} tally;

/* One body under one set of limits and one account cap. */
static void compare(const body *b, const decode_limits *lim, size_t cap, tally *t)
{
    /* An account for each path, so that neither sees what the other holds. */
    account_state st = {cap, 0}, dst = {cap, 0};
    answer_account acc = {take, give, &st, ANSWER_OK, 0, 0, cap},
                   dacc = {take, give, &dst, ANSWER_OK, 0, 0, cap};
    compact_input tree, direct, either;
    compactd_error terr = {0}, eerr = {0};

    answer_bind(&acc);
    int trc = json_decode_compact_tree(b->s, b->len, NULL, lim, &tree, &terr);
    answer_bind(&dacc);
    compactd_error derr = {0};
    int drc = json_direct_compact(b->s, b->len, lim, &direct, &derr);
    check(drc == DIRECT_TAKEN || drc == DIRECT_GAVE_UP, "direct reader: %s", derr.message);
    t->bodies++;
    t->tree_accepts += trc == 0;
    t->direct_takes += drc == 0;
    if (!b->odd) {
        t->plain_accepts += trc == 0;
        t->plain_takes += drc == 0;
        check(trc != 0 || drc == 0, "a plain body the tree path accepts, not taken: %s", b->s);
    }
    if (drc == 0) {
        check(trc == 0, "the direct reader took a body the tree path refuses at %s (%s): %s",
              terr.path, terr.message, b->s);
        if (trc == 0) {
            check(same_request(&direct.req, &tree.req), "not the tree path's request: %s", b->s);
            check(direct.doc == NULL && dst.held == st.held,
                  "held %zu where the tree path holds %zu: %s", dst.held, st.held, b->s);
        }
        compact_input_free(&direct);
    } else {
        check(dst.held == 0 && direct.req.units == NULL && direct.strings == NULL,
              "gave up holding something: %s", b->s);
    }
    answer_bind(&acc);
    if (trc == 0)
        compact_input_free(&tree);
    check(st.held == 0 && dst.held == 0, "bytes still held after release: %s", b->s);

    /* What the route answers: the tree path's answer, whichever path read it. */
    int erc = json_decode_compact(b->s, b->len, lim, &either, &eerr);
    check(erc == trc, "json_decode_compact() %s where the tree path %s: %s",
          erc ? "refused" : "accepted", trc ? "refuses" : "accepts", b->s);
    if (erc != 0 && trc != 0)
        check(eerr.kind == terr.kind && strcmp(eerr.path, terr.path) == 0 &&
                  strcmp(eerr.message, terr.message) == 0,
              "refused as %s \"%s\" where the tree path says %s \"%s\": %s", eerr.path,
              eerr.message, terr.path, terr.message, b->s);
    if (erc == 0)
        compact_input_free(&either);
    check(st.held == 0, "account left holding %zu: %s", st.held, b->s);
    answer_bind(NULL);
}

/* A byte changed, dropped, doubled or put in. */
static void mutate(body *b)
{
    static const char bytes[] = "\"\\{}[],: 0-.eE\x01\x80tfn";
    size_t at = below(b->len + 1);
    switch (below(4)) {
    case 0:
        if (at < b->len)
            b->s[at] = bytes[below(sizeof(bytes) - 1)];
        break;
    case 1:
        if (at < b->len) {
            memmove(b->s + at, b->s + at + 1, b->len - at);
            b->len--;
        }
        break;
    default: {
        char c = below(2) && at < b->len ? b->s[at] : bytes[below(sizeof(bytes) - 1)];
        put(b, "", 1); /* room */
        b->len--;
        memmove(b->s + at + 1, b->s + at, b->len - at);
        b->s[at] = c;
        b->len++;
        b->s[b->len] = '\0';
    }
    }
}

static void hand_cases(tally *t)
{
    static const char *const bodies[] = {
        "{\"budget\": 10, \"units\": []}",
        " {\"units\":[{\"class\":\"derivable\",\"key\":\"a\",\"tokens\":-0}],\"budget\":0} ",
        "{\"budget\": 10, \"units\": [{\"class\": \"derivable\", \"key\": \"a\", \"tokens\": 1, "
        "\"summary\": {\"text\": \"s\"}}]}x",
        "{\"budget\": 10, \"units\": [{\"class\": \"derivable\", \"key\": \"a\", \"tokens\": 1, "
        "\"summary\": {\"text\": \"s\"}x}]}",
        "{\"budget\": 10, \"units\": []}\0",
        "{\"budget\": 10, \"units\": [], \"units\": []}",
        "{\"budget\": 10, \"units\": [{\"class\": \"protected\", \"key\": \"a\\u0000\", "
        "\"text\": \"t\"}]}",
        "{\"budget\": 10, \"units\": [{\"class\": \"protected\", \"key\": \"a\", "
        "\"text\": \"t\\u0000\"}]}",
        "{\"budget\": 10, \"units\": [{\"class\": \"derivable\", \"key\": \"a\", \"tokens\": 1,"
        " \"priority\": -2147483648}]}",
        "{\"budget\": 10, \"units\": [{\"class\": \"redundant\", \"key\": \"a\", \"tokens\": 1,"
        " \"summary\": {\"text\": \"s\"}}]}",
        "{\"budget\": 10, \"units\": [{\"class\": \"derivable\", \"key\": \"\\u0061\", "
        "\"tokens\": 1}, {\"class\": \"derivable\", \"key\": \"a\", \"tokens\": 1}]}",
    };
    static const size_t lens[] = {0, 0, 0, 0, 28, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        body b = {0};
        put(&b, bodies[i], lens[i] ? lens[i] : strlen(bodies[i]));
        for (size_t l = 0; l < LIMIT_SETS; l++)
            compare(&b, &limit_sets[l], SIZE_MAX, t);
        free(b.s);
    }
}

int main(void)
{
    tally t = {0}, mutants = {0};
    hand_cases(&t);
    for (int i = 0; i < 5000; i++) {
        body b = {0};
        noisy = i % 2;
        request(&b);
        const decode_limits *lim = &limit_sets[below(LIMIT_SETS)];
        /* A small account now and then: the tree's price refused. */
        size_t cap = below(10) == 0 ? 256 + below(4096) : SIZE_MAX;
        compare(&b, lim, cap, &t);
        for (int m = 0; m < 20; m++) {
            body c = {malloc(b.len + 1), b.len, b.len + 1, b.odd};
            memcpy(c.s, b.s, b.len + 1);
            for (size_t k = below(3) + 1; k > 0; k--)
                mutate(&c);
            compare(&c, lim, cap, &mutants);
            free(c.s);
        }
        free(b.s);
    }
    printf("generated: %zu bodies, %zu accepted by the tree path, %zu taken directly (%zu of "
           "%zu plain ones); mutants: %zu, %zu accepted, %zu taken\n",
           t.bodies, t.tree_accepts, t.direct_takes, t.plain_takes, t.plain_accepts, mutants.bodies,
           mutants.tree_accepts, mutants.direct_takes);
    /* The speed is in the plain bodies: every one the tree path accepts
     * goes the direct way. */
    check(t.plain_accepts > 300 && t.plain_takes == t.plain_accepts,
          "the direct reader took %zu of the %zu plain bodies the tree path accepts", t.plain_takes,
          t.plain_accepts);
    check(mutants.direct_takes > 100, "no mutant taken directly: the mutants test nothing");
    return check_done("direct_cases");
}
