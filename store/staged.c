/* Large commits staged in bounded pieces and published by one short script,
 * and the reads that merge a published commit before they look. */
#include "staged.h"

#include <assert.h>
#include <hiredis/hiredis.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* How often a read or a commit merges a pending commit and tries again
 * before it gives up: each round follows another commit that was
 * published meanwhile, so more than a few means the session is flooded. */
enum { STAGED_ROUNDS = 8 };

void staged_make_nonce(char out[POINTER_SHA_HEX + 1])
{
    static _Atomic unsigned long counter;
    unsigned char b[8];
    if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
        unsigned long long v = (unsigned long long)time(NULL) * 1000003u ^ (counter++ << 20);
        memcpy(b, &v, sizeof(b));
    }
    for (size_t i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* ---- Stopping at a stage (a debug setting) ---- */

int store_stop_at_valid(const char *stop_at)
{
    if (stop_at[0] == '\0' || strcmp(stop_at, "published") == 0)
        return 1;
    const char *n = strncmp(stop_at, "staged:", 7) == 0   ? stop_at + 7
                    : strncmp(stop_at, "merged:", 7) == 0 ? stop_at + 7
                                                          : NULL;
    size_t len = n ? strspn(n, "0123456789") : 0;
    return n && len > 0 && len <= 6 && n[len] == '\0' && (len == 1 || n[0] != '0');
}

/* Stops the process (SIGSTOP) the first time a commit reaches the stage
 * the handle's stop_at names, so that a fault test can kill or pause it,
 * or Redis, exactly there. piece is SIZE_MAX for a stage without one. */
static void stop_at(const store *s, const char *stage, size_t piece)
{
    static atomic_int stopped;
    char here[32];
    if (!s->stop_at[0] || atomic_load(&stopped))
        return;
    if (piece == SIZE_MAX)
        snprintf(here, sizeof(here), "%s", stage);
    else
        snprintf(here, sizeof(here), "%s:%zu", stage, piece);
    if (strcmp(here, s->stop_at) == 0 && !atomic_exchange(&stopped, 1))
        raise(SIGSTOP);
}

/* ---- Pieces ---- */

/* What a spill weighs in a piece: its text, its metadata, its two fields. */
static size_t spill_bytes(const store_spill *sp)
{
    return sp->text_len + sp->metadata_len + 2 * (66 + sp->key_len) + 64;
}

/* The end of the piece that starts at spill i: as many spills as fit in
 * LAYOUT_PIECE_SPILLS and LAYOUT_PIECE_BYTES, and at least one. */
static size_t piece_end(const store_spill *spills, size_t n, size_t i)
{
    size_t bytes = spill_bytes(&spills[i]), j = i + 1;
    while (j < n && j - i < LAYOUT_PIECE_SPILLS &&
           bytes + spill_bytes(&spills[j]) <= LAYOUT_PIECE_BYTES)
        bytes += spill_bytes(&spills[j++]);
    /* Every piece makes progress and stays within the script's bound (but
     * for a single spill larger than the bound, which goes alone). */
    assert(j > i && j <= n && j - i <= LAYOUT_PIECE_SPILLS);
    assert(j - i == 1 || bytes <= LAYOUT_PIECE_BYTES);
    return j;
}

int staged_needed(const store_spill *spills, size_t n)
{
    return n > 0 && piece_end(spills, n, 0) < n;
}

static int oom(store *s)
{
    store_fail(s, STORE_ERR_OOM, "out of memory");
    return -1;
}

/* Stages spills [i, j) as piece number piece. Returns 0, or -1. */
static int stage_piece(store *s, const layout_keys *k, const char *nonce, size_t piece,
                       const store_spill *spills, size_t i, size_t j, const char *created_at)
{
    char key[sizeof(k->stage) + 48], ttl[24];
    size_t argc = 5 + 4 * (j - i);
    const char **argv = calloc(argc, sizeof(*argv));
    size_t *lens = calloc(argc, sizeof(*lens));
    char **owned = calloc(2 * (j - i), sizeof(*owned));
    int rc = -1;
    if (!argv || !lens || !owned) {
        oom(s);
        goto done;
    }
    int klen = layout_stage_key(k, nonce, piece, key, sizeof(key));
    argv[2] = "1";
    lens[2] = 1;
    argv[3] = key;
    lens[3] = (size_t)klen;
    argv[4] = ttl;
    lens[4] = (size_t)snprintf(ttl, sizeof(ttl), "%d", s->stage_ttl_ms);
    for (size_t u = i; u < j; u++) {
        const store_spill *sp = &spills[u];
        size_t flen, a = 5 + 4 * (u - i);
        char *field = layout_field(sp->sha256, sp->key, sp->key_len, &flen);
        char *meta = layout_meta(sp, created_at);
        /* Two copies of the field, one marked 't' (text), one 'm' (meta). */
        char *tm = field ? malloc(2 * (flen + 1)) : NULL;
        owned[2 * (u - i)] = tm;
        owned[2 * (u - i) + 1] = meta;
        if (!tm || !meta) {
            free(field);
            oom(s);
            goto done;
        }
        tm[0] = 't';
        memcpy(tm + 1, field, flen);
        tm[flen + 1] = 'm';
        memcpy(tm + flen + 2, field, flen);
        free(field);
        argv[a] = tm;
        lens[a] = flen + 1;
        argv[a + 1] = sp->text;
        lens[a + 1] = sp->text_len;
        argv[a + 2] = tm + flen + 1;
        lens[a + 2] = flen + 1;
        argv[a + 3] = meta;
        lens[a + 3] = strlen(meta);
    }
    redisReply *r = s->t->script(s, layout_stage_script, (int)argc, argv, lens, -1, 0);
    if (r) {
        freeReplyObject(r);
        rc = 0;
    }
done:
    for (size_t u = 0; owned && u < 2 * (j - i); u++)
        free(owned[u]);
    free(owned);
    free(argv);
    free(lens);
    return rc;
}

/* Removes the pieces of a commit that was not published, keeping the
 * handle's error: they would expire anyway; this frees them sooner. */
static void abandon(store *s, const layout_keys *k, const char *nonce, size_t pieces)
{
    int err = s->err;
    char errstr[sizeof(s->errstr)];
    memcpy(errstr, s->errstr, sizeof(errstr));
    for (size_t i = 0; i < pieces; i++) {
        char key[sizeof(k->stage) + 48];
        int klen = layout_stage_key(k, nonce, i, key, sizeof(key));
        const char *argv[] = {"UNLINK", key};
        size_t lens[] = {6, (size_t)klen};
        redisReply *r = s->t->command(s, 2, argv, lens);
        if (!r)
            break;
        freeReplyObject(r);
    }
    s->err = err;
    memcpy(s->errstr, errstr, sizeof(errstr));
}

/* ---- Publishing ---- */

/* Publishes the staged pieces. Returns 1 when published, 2 when this
 * commit was published before (a retry: its pieces may go), 0 when not
 * (nothing written: the pieces may go), -1 when the outcome is unknown or
 * short of replicas (the pieces must stay). */
static int publish(store *s, const layout_keys *k, const char *nonce, const char *name,
                   const char *scope, size_t pieces, const char *event, size_t event_len)
{
    char marker[sizeof(k->stage) + 24], prefix[sizeof(k->stage) + 24], count[24], marker_ttl[24];
    layout_marker_key(k, nonce, marker, sizeof(marker));
    snprintf(prefix, sizeof(prefix), "%s%s:", k->stage, nonce);
    snprintf(count, sizeof(count), "%zu", pieces);
    snprintf(marker_ttl, sizeof(marker_ttl), "%d", LAYOUT_STAGE_TTL_MS);
    enum { ARGC = 3 + LAYOUT_COMMIT_KEYS + LAYOUT_COMMIT_FIXED_ARGS + 3 };
    for (int round = 0; round < STAGED_ROUNDS; round++) {
        const char *argv[ARGC] = {NULL,
                                  NULL,
                                  "6",
                                  k->text,
                                  k->meta,
                                  k->events,
                                  k->pending,
                                  marker,
                                  k->commits,
                                  NULL,
                                  event ? event : "",
                                  name,
                                  scope,
                                  prefix,
                                  count,
                                  marker_ttl};
        size_t lens[ARGC];
        for (size_t i = 2; i < ARGC; i++)
            lens[i] = argv[i] ? strlen(argv[i]) : 0;
        lens[LAYOUT_ARGV_EVENT] = event ? event_len : 0;
        redisReply *r = s->t->script(s, layout_publish_script, ARGC, argv, lens,
                                     LAYOUT_ARGV_DEADLINE, STORE_SCRIPT_ONCE | STORE_SCRIPT_WAIT);
        if (!r)
            return s->err == STORE_ERR_UNKNOWN || s->err == STORE_ERR_REPLICAS ? -1 : 0;
        int integer = r->type == REDIS_REPLY_INTEGER;
        long long v = r->integer;
        freeReplyObject(r);
        if (integer && v == SCRIPT_WRITTEN)
            return 1;
        if (integer && v == SCRIPT_ALREADY_WRITTEN)
            return 2;
        if (integer && v == SCRIPT_PENDING) {
            if (staged_roll_forward(s, k) != 0)
                return 0;
            continue;
        }
        if (integer && v == SCRIPT_TOO_LATE)
            store_fail(s, STORE_ERR_IO, "commit: Redis did not run it within the timeout");
        else if (integer && v == SCRIPT_KEY_REUSED)
            store_fail(s, STORE_ERR_CONFLICT, "commit: its key names another commit");
        else if (integer && v == SCRIPT_PIECE_GONE)
            store_fail(s, STORE_ERR_IO,
                       "commit: a staged piece is gone (expired, or lost in a "
                       "failover); nothing written");
        else
            store_fail(s, STORE_ERR_PROTOCOL, "commit: unexpected reply to publish");
        return 0;
    }
    store_fail(s, STORE_ERR_IO, "commit: the session's other commits kept it from publishing");
    return 0;
}

int staged_commit(store *s, const layout_keys *k, const store_spill *spills, size_t n,
                  const char *created_at, const char *event, size_t event_len,
                  const char *commit_key, int keyed)
{
    /* The staging nonce is this attempt's own, even when the commit's name
     * repeats: another attempt of the same commit can then neither delete
     * nor re-arm this one's pieces. */
    char nonce[POINTER_SHA_HEX + 1], name[POINTER_SHA_HEX + 1], scope[9] = "";
    staged_make_nonce(nonce);
    snprintf(name, sizeof(name), "%s", commit_key ? commit_key : nonce);
    if (commit_key && keyed)
        snprintf(scope, sizeof(scope), "%.8s", commit_key);
    size_t pieces = 0;
    for (size_t i = 0, j; i < n; i = j, pieces++) {
        j = piece_end(spills, n, i);
        if (stage_piece(s, k, nonce, pieces, spills, i, j, created_at) != 0) {
            abandon(s, k, nonce, pieces + 1);
            return -1;
        }
        stop_at(s, "staged", pieces);
    }
    int published = publish(s, k, nonce, name, scope, pieces, event, event_len);
    if (published == 0 || published == 2)
        abandon(s, k, nonce, pieces);
    if (published == 2)
        return 0;
    if (published != 1)
        return -1;
    stop_at(s, "published", SIZE_MAX);
    /* Published: the commit has happened. Merging it now saves the next
     * reader the work; should it fail, that reader does it. */
    int err = s->err;
    if (staged_roll_forward(s, k) != 0)
        s->err = err;
    return 0;
}

/* ---- Merging ---- */

int staged_roll_forward(store *s, const layout_keys *k)
{
    for (int round = 0; round < STAGED_ROUNDS; round++) {
        const char *get[] = {"GET", k->pending};
        size_t get_lens[] = {3, strlen(k->pending)};
        redisReply *r = s->t->command(s, 2, get, get_lens);
        if (!r)
            return -1;
        char nonce[17], order[48];
        size_t total = 0, left = 0;
        int parsed = r->type == REDIS_REPLY_STRING &&
                     sscanf(r->str, "%16s %47s %zu %zu", nonce, order, &total, &left) == 4;
        int none = r->type == REDIS_REPLY_NIL;
        freeReplyObject(r);
        if (none)
            return 0;
        if (!parsed) {
            store_fail(s, STORE_ERR_PROTOCOL, "malformed pending commit record");
            return -1;
        }
        for (size_t i = 0; i < total; i++) {
            char key[sizeof(k->stage) + 48];
            int klen = layout_stage_key(k, nonce, i, key, sizeof(key));
            const char *argv[] = {NULL, NULL, "3", k->text, k->meta, k->pending, nonce, key};
            size_t lens[] = {
                0, 0, 1, strlen(k->text), strlen(k->meta), strlen(k->pending), 16, (size_t)klen};
            r = s->t->script(s, layout_merge_script, 8, argv, lens, -1, 0);
            if (!r)
                return -1;
            freeReplyObject(r);
            stop_at(s, "merged", i);
        }
    }
    store_fail(s, STORE_ERR_IO, "the session's commits kept arriving while merging");
    return -1;
}

redisReply *staged_read(store *s, const layout_keys *k, int argc, const char **argv,
                        const size_t *lens)
{
    /* EVALSHA sha 2 pending key command args... */
    size_t n = (size_t)argc + 4;
    const char **a = malloc(n * sizeof(*a));
    size_t *l = malloc(n * sizeof(*l));
    redisReply *r = NULL;
    if (!a || !l) {
        oom(s);
        goto done;
    }
    a[2] = "2";
    l[2] = 1;
    a[3] = k->pending;
    l[3] = strlen(k->pending);
    a[4] = argv[1];
    l[4] = lens[1];
    a[5] = argv[0];
    l[5] = lens[0];
    for (int i = 2; i < argc; i++) {
        a[i + 4] = argv[i];
        l[i + 4] = lens[i];
    }
    for (int round = 0; round < STAGED_ROUNDS; round++) {
        r = s->t->script(s, layout_read_script, (int)n, a, l, -1, 0);
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != SCRIPT_PENDING)
            goto done;
        freeReplyObject(r);
        r = NULL;
        if (staged_roll_forward(s, k) != 0)
            goto done;
    }
    store_fail(s, STORE_ERR_IO, "the session's commits kept arriving while reading");
done:
    free(a);
    free(l);
    return r;
}
