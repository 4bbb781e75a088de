/* The operations that write (commit, drop a session), written once over
 * the handle's transport (store_impl.h): the same code serves one Redis and
 * a Redis Cluster. The reads are in op_read.c. */
#include "known_spills.h"
#include "layout.h"
#include "operations.h"
#include "staged.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int op_oom(store *s)
{
    store_fail(s, STORE_ERR_OOM, "out of memory");
    return -1;
}

int op_keys(store *s, const char *ns, layout_keys *k)
{
    if (layout_keys_make(ns, k) == 0)
        return 0;
    store_fail(s, STORE_ERR_PROTOCOL, "namespace too long");
    return -1;
}

redisReply *op_expect(store *s, redisReply *r, int type, int nil_ok, const char *what)
{
    if (!r || r->type == type || (nil_ok && r->type == REDIS_REPLY_NIL))
        return r;
    store_fail(s, STORE_ERR_PROTOCOL, "%s: unexpected reply of type %d", what, r->type);
    freeReplyObject(r);
    return NULL;
}

/* Fills the field, text and meta arguments of each spill (owned keeps
 * what they allocate, freed and replaced on each call). With elide, a
 * spill this process saw acknowledged goes without its text, its meta
 * marked '='. Returns 0, or -1 when out of memory. */
static int spill_args(store *s, const char *ns, const store_spill *spills, size_t n,
                      const char *created_at, int elide, const char **argv, size_t *lens,
                      char **owned)
{
    for (size_t i = 0; i < n; i++) {
        const store_spill *sp = &spills[i];
        free(owned[2 * i]);
        free(owned[2 * i + 1]);
        size_t field_len;
        char *field = layout_field(sp->sha256, sp->key, sp->key_len, &field_len);
        int skip = elide && field && known_spills_has(ns, field, field_len);
        char *meta = layout_meta(sp, created_at);
        if (skip && meta) {
            size_t mlen = strlen(meta);
            char *marked = malloc(mlen + 2);
            if (marked) {
                marked[0] = '=';
                memcpy(marked + 1, meta, mlen + 1);
            }
            free(meta);
            meta = marked;
        }
        owned[2 * i] = field;
        owned[2 * i + 1] = meta;
        if (!field || !meta)
            return op_oom(s);
        argv[3 * i] = field;
        lens[3 * i] = field_len;
        argv[3 * i + 1] = skip ? "" : sp->text;
        lens[3 * i + 1] = skip ? 0 : sp->text_len;
        argv[3 * i + 2] = meta;
        lens[3 * i + 2] = strlen(meta);
    }
    return 0;
}

/* Runs the commit script, first merging a staged commit of the session
 * that is still pending. Returns the reply, or NULL with the handle's
 * error set. */
static redisReply *run_commit(store *s, const layout_keys *k, int argc, const char **argv,
                              size_t *lens)
{
    for (int round = 0;; round++) {
        redisReply *r = s->t->script(s, layout_commit_script, argc, argv, lens,
                                     LAYOUT_ARGV_DEADLINE, STORE_SCRIPT_ONCE | STORE_SCRIPT_WAIT);
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != SCRIPT_PENDING || round == 8)
            return r;
        freeReplyObject(r);
        if (staged_roll_forward(s, k) != 0)
            return NULL;
    }
}

int op_commit(store *s, const char *ns, const store_spill *spills, size_t n, const char *created_at,
              const char *event, size_t event_len, const char *commit_key, int keyed)
{
    /* EVALSHA digest, key count, keys, deadline, event, nonce, scope */
    enum { FIXED = 3 + LAYOUT_COMMIT_KEYS + LAYOUT_COMMIT_FIXED_ARGS };
    layout_keys k;
    if (op_keys(s, ns, &k) != 0)
        return -1;
    if (staged_needed(spills, n))
        return staged_commit(s, &k, spills, n, created_at, event, event_len, commit_key, keyed);

    size_t argc = FIXED + LAYOUT_COMMIT_ARGS_PER_SPILL * n;
    const char **argv = calloc(argc, sizeof(*argv));
    size_t *lens = calloc(argc, sizeof(*lens));
    char **owned = calloc(2 * n + 1, sizeof(*owned)); /* fields and metas */
    char nonce[POINTER_SHA_HEX + 1] = "", scope[9] = "", marker[sizeof(k.stage) + 24];
    int rc = -1;
    if (!argv || !lens || !owned) {
        op_oom(s);
        goto done;
    }
    if (event && commit_key)
        snprintf(nonce, sizeof(nonce), "%s", commit_key);
    else if (event)
        staged_make_nonce(nonce);
    if (event && commit_key && keyed)
        snprintf(scope, sizeof(scope), "%.8s", commit_key);
    layout_marker_key(&k, nonce, marker, sizeof(marker));
    const char *fixed[FIXED] = {NULL,
                                NULL,
                                "6",
                                k.text,
                                k.meta,
                                k.events,
                                k.pending,
                                marker,
                                k.commits,
                                "(deadline)",
                                event ? event : "",
                                nonce,
                                scope};
    for (size_t i = 2; i < FIXED; i++) {
        argv[i] = fixed[i];
        lens[i] = i == LAYOUT_ARGV_EVENT ? (event ? event_len : 0) : strlen(fixed[i]);
    }
    /* Spills acknowledged before go without their texts, which the script
     * checks are there; when one is not, all are sent again whole. */
    for (int whole = 0; rc != 0 && whole < 2; whole++) {
        if (spill_args(s, ns, spills, n, created_at, !whole, argv + FIXED, lens + FIXED, owned) !=
            0)
            goto done;
        redisReply *r = run_commit(s, &k, (int)argc, argv, lens);
        if (!r)
            goto done;
        long long got = r->type == REDIS_REPLY_INTEGER ? r->integer : SCRIPT_TOO_LATE;
        freeReplyObject(r);
        /* A retry of a commit already written writes nothing again. */
        if (got == SCRIPT_WRITTEN || got == SCRIPT_ALREADY_WRITTEN) {
            rc = 0;
            for (size_t i = 0; i < n; i++)
                known_spills_add(ns, argv[FIXED + 3 * i], lens[FIXED + 3 * i]);
        } else if (got == SCRIPT_KEY_REUSED) {
            store_fail(s, STORE_ERR_CONFLICT, "commit: its key names another commit");
            goto done;
        } else if (got != SCRIPT_TEXT_MISSING) {
            /* Redis ran it too late to be waited for, and wrote nothing. */
            store_fail(s, STORE_ERR_IO, "commit: Redis did not run it within the timeout");
            goto done;
        }
    }
    if (rc != 0)
        store_fail(s, STORE_ERR_PROTOCOL, "commit: a spill sent whole was reported missing");
done:
    for (size_t i = 0; owned && i < 2 * n; i++)
        free(owned[i]);
    free(owned);
    free(argv);
    free(lens);
    return rc;
}

int op_drop_session(store *s, const char *ns)
{
    layout_keys k;
    if (op_keys(s, ns, &k) != 0)
        return -1;
    /* A commit still being merged goes with its pieces; one only staged
     * expires. UNLINK: a session of 100,000 spills would hold Redis for
     * the whole free under DEL. */
    const char *argv[] = {NULL, NULL, "5", k.text, k.meta, k.events, k.pending, k.commits, k.stage};
    size_t lens[9];
    for (size_t i = 2; i < 9; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = op_expect(s, s->t->script(s, layout_drop_script, 9, argv, lens, -1, 0),
                              REDIS_REPLY_INTEGER, 0, "drop");
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}
