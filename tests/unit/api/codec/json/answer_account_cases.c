/* The answer account under the JSON writer: every byte a writer allocates
 * is taken first, a writer the account refuses fails with the refusal
 * recorded, and what it held goes back when it is discarded; a refused
 * part taken back to its mark; a spill's answer reckoned by the same rule. */
#include "answer_account.h"
#include "json_encode.h"
#include "json_writer.h"

#include "check.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t cap, held, peak;
} limit;

static answer_refusal take(void *cls, size_t n, int force)
{
    limit *l = cls;
    if (!force && (n > l->cap || l->held > l->cap - n))
        return ANSWER_TOO_LARGE;
    l->held += n;
    if (l->held > l->peak)
        l->peak = l->held;
    return ANSWER_OK;
}

static void give(void *cls, size_t n)
{
    ((limit *)cls)->held -= n;
}

static void bind(answer_account *a, limit *l, size_t cap)
{
    *l = (limit){cap, 0, 0};
    *a = (answer_account){take, give, l, ANSWER_OK, 0, 0, cap};
    answer_bind(a);
}

static char *text_of(size_t n, char c)
{
    char *s = malloc(n);
    memset(s, c, n);
    return s;
}

/* Starts w with cap_hint and writes a string of n 'x' into it; returns the
 * string, which the caller frees. */
static char *write_text(jw *w, size_t cap_hint, size_t n)
{
    jw_init(w, cap_hint);
    char *s = text_of(n, 'x');
    jw_string(w, s, n);
    return s;
}

static void counted_and_given_back(void)
{
    answer_account a;
    limit l;
    bind(&a, &l, 1 << 20);
    jw w;
    char *s = write_text(&w, 16, 100000);
    check(!w.oom && l.held == w.cap && answer_taken() == w.cap, "held %zu, cap %zu", l.held, w.cap);
    jw_discard(&w);
    check(l.held == 0 && answer_taken() == 0, "discarded: %zu still held", l.held);
    check(answer_refused() == ANSWER_OK, "nothing was refused");
    free(s);
    answer_bind(NULL);
}

static void refused_past_the_cap(void)
{
    answer_account a;
    limit l;
    bind(&a, &l, 50000);
    jw w;
    char *s = write_text(&w, 256, 60000);
    size_t len = 1;
    check(jw_finish(&w, &len) == NULL, "an answer past the cap is not built");
    check(answer_refused() == ANSWER_TOO_LARGE, "refusal recorded: %d", answer_refused());
    check(l.held == 0 && l.peak <= 50000, "held %zu, peak %zu", l.held, l.peak);
    answer_clear_refusal();
    check(answer_refused() == ANSWER_OK, "cleared");
    free(s);
    answer_bind(NULL);
}

/* Doubling would pass the cap; the writer takes just what it needs instead
 * of refusing, and records nothing. */
static void less_spare_room_before_refusing(void)
{
    answer_account a;
    limit l;
    bind(&a, &l, 40000);
    jw w;
    char *s = write_text(&w, 256, 30000);
    check(!w.oom, "a 30000-byte string fits in 40000");
    check(w.cap <= 40000 && l.held == w.cap, "cap %zu held %zu", w.cap, l.held);
    check(answer_refused() == ANSWER_OK, "no refusal recorded: %d", answer_refused());
    size_t len = 0;
    char *doc = jw_finish(&w, &len);
    check(doc && len == 30002, "finished: %zu bytes", len);
    free(doc);
    free(s);
    answer_bind(NULL);
}

/* Escapes are counted as written, not at six bytes a byte. */
static void escapes_counted_exactly(void)
{
    answer_account a;
    limit l;
    bind(&a, &l, 1 << 20);
    jw w;
    jw_init(&w, 256);
    char *s = text_of(100000, 'x');
    s[0] = '\n';
    s[1] = '\x01';
    jw_string(&w, s, 100000);
    check(!w.oom && w.len == 100000 + 2 + 1 + 5, "len %zu", w.len);
    check(l.peak < 2 * 100000 + 256, "peak %zu for a 100 KB string", l.peak);
    jw_discard(&w);
    free(s);
    answer_bind(NULL);
}

/* While lenient, takes are counted and never refused. */
static void lenient_counts_without_refusing(void)
{
    answer_account a;
    limit l;
    bind(&a, &l, 100);
    check(answer_set_lenient(1) == 0, "was strict");
    jw w;
    jw_init(&w, 256);
    jw_cstring(&w, "an error message");
    check(!w.oom && l.held == w.cap && l.held > 100, "held %zu", l.held);
    answer_set_lenient(0);
    jw_discard(&w);
    check(l.held == 0 && answer_refused() == ANSWER_OK, "held %zu", l.held);
    answer_bind(NULL);
}

/* A part refused midway is taken back: the document is what it was at the
 * mark, and writes on after it (an MCP batch's error for one message). */
static void rewound_after_a_refusal(void)
{
    answer_account a;
    limit l;
    bind(&a, &l, 4096);
    jw w;
    size_t len;
    jw_init(&w, 256);
    jw_array_open(&w);
    jw_cstring(&w, "a");
    jw_mark at = jw_mark_here(&w);
    jw_object_open(&w);
    jw_member(&w, "text");
    char *big = text_of(10000, 'x');
    jw_string(&w, big, 10000);
    free(big);
    check(w.oom && answer_refused() == ANSWER_TOO_LARGE, "the part was refused");
    jw_rewind(&w, &at);
    jw_cstring(&w, "b");
    jw_array_close(&w);
    char *doc = jw_finish(&w, &len);
    check(doc && strcmp(doc, "[\"a\",\"b\"]") == 0, "rewound: %s", doc ? doc : "(null)");
    free(doc);
    answer_bind(NULL);
}

/* A spill's answer: its text and key as escaped, plus a fixed frame; it fits
 * a limit that holds it and the request's room, not one byte less; counted
 * only when its bound does not already fit. */
static void spill_answers_reckoned(void)
{
    char *quotes = text_of(5000, '"');
    size_t bytes, bare = spill_answer_bytes("k", 1, "", 0);
    check(spill_answer_bytes("k", 1, quotes, 5000) == bare + 10000, "quotes escaped twice");
    check(spill_answer_bytes("k\n", 2, "", 0) == bare + 2, "the key escaped too");
    size_t need = bare + 10000 + REACQUIRE_REQUEST_ROOM;
    check(spill_answer_fits(need, "k", 1, quotes, 5000, &bytes) && bytes == bare + 10000,
          "fits %zu", need);
    check(!spill_answer_fits(need - 1, "k", 1, quotes, 5000, &bytes), "fits %zu", need - 1);
    /* Below the limit by its bound (six bytes a byte: 6 * 5001 where it
     * takes 10001), it is settled uncounted. */
    size_t bound = need - 10001 + 6 * 5001;
    check(spill_answer_fits(bound, "k", 1, quotes, 5000, &bytes) && bytes == 0,
          "fits by its bound: %zu counted", bytes);
    check(spill_answer_fits(bound - 1, "k", 1, quotes, 5000, &bytes) && bytes == bare + 10000,
          "counted just under its bound: %zu", bytes);
    check(answer_fits(10, 4, 6) && !answer_fits(10, 5, 6) && !answer_fits(10, 0, 11), "the rule");
    free(quotes);
}

static void without_an_account(void)
{
    jw w;
    jw_init(&w, 16);
    jw_cstring(&w, "free");
    check(!w.oom && answer_taken() == 0 && answer_refused() == ANSWER_OK, "no account");
    jw_discard(&w);
}

int main(void)
{
    counted_and_given_back();
    refused_past_the_cap();
    less_spare_room_before_refusing();
    escapes_counted_exactly();
    lenient_counts_without_refusing();
    rewound_after_a_refusal();
    spill_answers_reckoned();
    without_an_account();
    return check_done("answer_account_cases");
}
