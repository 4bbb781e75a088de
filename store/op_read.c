/* Reads of the store's operations on one Redis (node.c's table): spills by
 * key, digest prefix and listing, existence, the decision log. Over the
 * handle's transport, so a cluster runs them too. */
#include "operations.h"
#include "staged.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Reads ---- */

/* Reads the meta hash whole: metadata is small next to the texts. */
static int read_meta(store *s, const layout_keys *k, store_record **out, size_t *n)
{
    const char *argv[] = {"HGETALL", k->meta};
    size_t lens[] = {7, strlen(k->meta)};
    redisReply *r = op_expect(s, staged_read(s, k, 2, argv, lens), REDIS_REPLY_ARRAY, 0, "HGETALL");
    *out = NULL;
    *n = 0;
    if (!r)
        return -1;
    size_t count = r->elements / 2;
    store_record *recs = calloc(count ? count : 1, sizeof(*recs));
    if (!recs) {
        freeReplyObject(r);
        return op_oom(s);
    }
    size_t got = 0;
    for (size_t i = 0; i < count; i++) {
        redisReply *f = r->element[2 * i], *v = r->element[2 * i + 1];
        if (layout_record_from_meta(f->str, f->len, v->str, v->len, &recs[got]) == 0)
            got++;
    }
    freeReplyObject(r);
    *out = recs;
    *n = got;
    return 0;
}

int op_spill_list(store *s, const char *ns, store_record **out, size_t *n)
{
    layout_keys k;
    if (op_keys(s, ns, &k) != 0 || read_meta(s, &k, out, n) != 0)
        return -1;
    qsort(*out, *n, sizeof(**out), layout_record_cmp);
    return 0;
}

/* One version of a key, as newest_version() weighs it. */
typedef struct {
    int ordered; /* written since the spill order is kept */
    unsigned long long a, b;
    store_record rec;
} version;

static int version_later(const version *x, const version *y)
{
    if (x->ordered != y->ordered)
        return x->ordered > y->ordered;
    if (x->ordered && (x->a != y->a || x->b != y->b))
        return x->a != y->a ? x->a > y->a : x->b > y->b;
    return layout_record_cmp(&x->rec, &y->rec) > 0;
}

/* Finds the version of key spilled last (layout_commit_script keeps the
 * order); writes its digest into sha256. Reads the metadata whole, as the
 * listing does. Returns 1, 0 when the key has no spill, -1 on error. */
static int newest_version(store *s, const layout_keys *k, const char *key, size_t key_len,
                          char *sha256)
{
    const char *argv[] = {"HGETALL", k->meta};
    size_t lens[] = {7, strlen(k->meta)};
    redisReply *r = op_expect(s, staged_read(s, k, 2, argv, lens), REDIS_REPLY_ARRAY, 0, "HGETALL");
    if (!r)
        return -1;
    version best = {0}, v;
    int found = 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *m = r->element[i + 1];
        if (f->len != 65 + key_len || memcmp(f->str + 65, key, key_len) != 0)
            continue;
        memset(&v, 0, sizeof(v));
        v.ordered = layout_meta_order(m->str, m->len, &v.a, &v.b);
        if (layout_record_from_meta(f->str, f->len, m->str, m->len, &v.rec) != 0)
            continue;
        if (!found || version_later(&v, &best)) {
            store_record_clear(&best.rec);
            best = v;
            found = 1;
        } else {
            store_record_clear(&v.rec);
        }
    }
    freeReplyObject(r);
    if (found)
        memcpy(sha256, best.rec.sha256, 65);
    store_record_clear(&best.rec);
    return found;
}

int op_spill_get(store *s, const char *ns, const char *key, size_t key_len, const char *sha256,
                 store_record *out)
{
    layout_keys k;
    char newest[65];
    if (op_keys(s, ns, &k) != 0)
        return -1;
    if (!sha256) {
        int found = newest_version(s, &k, key, key_len, newest);
        if (found <= 0)
            return found;
        sha256 = newest;
    }

    size_t flen;
    char *field = layout_field(sha256, key, key_len, &flen);
    if (!field)
        return op_oom(s);
    const char *argv[] = {"HMGET", k.meta, field};
    size_t lens[] = {5, strlen(k.meta), flen};
    /* The text needs no guard: it is written before or with its metadata
     * and never changes. */
    redisReply *meta =
        op_expect(s, staged_read(s, &k, 3, argv, lens), REDIS_REPLY_ARRAY, 0, "HMGET");
    if (meta && meta->elements != 1) {
        freeReplyObject(meta);
        meta = NULL;
        store_fail(s, STORE_ERR_PROTOCOL, "HMGET: unexpected reply");
    }
    argv[0] = "HGET";
    lens[0] = 4;
    argv[1] = k.text;
    lens[1] = strlen(k.text);
    redisReply *text =
        meta ? op_expect(s, s->t->command(s, 3, argv, lens), REDIS_REPLY_STRING, 1, "HGET") : NULL;

    int rc = -1;
    if (meta && text) {
        redisReply *m = meta->element[0];
        rc = 0;
        if (m->type == REDIS_REPLY_STRING && text->type == REDIS_REPLY_STRING) {
            rc = layout_record_from_meta(field, flen, m->str, m->len, out) == 0 ? 1 : -1;
            if (rc == 1) {
                out->text = layout_dup(text->str, text->len);
                out->text_len = text->len;
                if (!out->text) {
                    store_record_clear(out);
                    rc = -1;
                }
            }
            if (rc < 0)
                store_fail(s, STORE_ERR_OOM, "malformed spill record or out of memory");
        }
    }
    if (meta)
        freeReplyObject(meta);
    if (text)
        freeReplyObject(text);
    free(field);
    return rc;
}

/* ---- Reads by digest prefix ---- */

/* The HSCAN pattern of the fields of key whose digest starts with prefix:
 * the prefix, one '?' per digit left, ':', then key with Redis's glob
 * characters escaped. A pattern of fixed width before the key, so a ':' in
 * a key cannot make another key's field match. Returns a new string. */
static char *prefix_pattern(const char *prefix, size_t prefix_len, const char *key, size_t key_len,
                            size_t *len)
{
    char *p = malloc(65 + 2 * key_len);
    if (!p)
        return NULL;
    memcpy(p, prefix, prefix_len);
    memset(p + prefix_len, '?', 64 - prefix_len);
    p[64] = ':';
    size_t n = 65;
    for (size_t i = 0; i < key_len; i++) {
        if (key[i] != '\0' && strchr("*?[]\\", key[i]))
            p[n++] = '\\';
        p[n++] = key[i];
    }
    *len = n;
    return p;
}

static int digest_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 64);
}

/* Collects the distinct digests of key's versions that start with prefix.
 * Returns 0 with a new array in *out (sorted), or -1. */
static int prefix_candidates(store *s, const layout_keys *k, const char *prefix, size_t prefix_len,
                             const char *key, size_t key_len, char (**out)[65], size_t *n)
{
    size_t plen, cap = 0;
    char *pattern = prefix_pattern(prefix, prefix_len, key, key_len, &plen);
    char cursor[32] = "0";
    *out = NULL;
    *n = 0;
    if (!pattern)
        return op_oom(s);
    do {
        const char *argv[] = {"HSCAN", k->meta, cursor, "MATCH", pattern, "COUNT", "1000"};
        size_t lens[] = {5, strlen(k->meta), strlen(cursor), 5, plen, 5, 4};
        redisReply *r = staged_read(s, k, 7, argv, lens);
        if (!r)
            goto fail;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof(cursor) ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            store_fail(s, STORE_ERR_PROTOCOL, "HSCAN: unexpected reply");
            goto fail;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
        redisReply *fields = r->element[1];
        for (size_t i = 0; i + 1 < fields->elements; i += 2) {
            const redisReply *f = fields->element[i];
            /* The pattern narrows; this decides. */
            if (f->type != REDIS_REPLY_STRING || f->len != 65 + key_len || f->str[64] != ':' ||
                memcmp(f->str, prefix, prefix_len) != 0 || memcmp(f->str + 65, key, key_len) != 0)
                continue;
            if (*n == cap) {
                cap = cap ? 2 * cap : 4;
                char(*bigger)[65] = realloc(*out, cap * sizeof(**out));
                if (!bigger) {
                    freeReplyObject(r);
                    op_oom(s);
                    goto fail;
                }
                *out = bigger;
            }
            memcpy((*out)[*n], f->str, 64);
            (*out)[(*n)++][64] = '\0';
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    free(pattern);

    /* HSCAN may return a field twice while Redis resizes the hash. */
    size_t distinct = 0;
    if (*n)
        qsort(*out, *n, sizeof(**out), digest_cmp);
    for (size_t i = 0; i < *n; i++)
        if (distinct == 0 || memcmp((*out)[distinct - 1], (*out)[i], 64) != 0)
            memmove((*out)[distinct++], (*out)[i], 65);
    *n = distinct;
    return 0;
fail:
    free(pattern);
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

int op_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                        const char *prefix, size_t prefix_len, store_record *out,
                        char (**candidates)[65], size_t *n_candidates)
{
    layout_keys k;
    char(*found)[65];
    size_t n;
    if (op_keys(s, ns, &k) != 0 ||
        prefix_candidates(s, &k, prefix, prefix_len, key, key_len, &found, &n) != 0)
        return -1;
    int rc = STORE_NOT_FOUND;
    if (n == 1) {
        /* Deleted in between reads as not found, like any later read. */
        memset(out, 0, sizeof(*out));
        rc = op_spill_get(s, ns, key, key_len, found[0], out);
    } else if (n > 1) {
        rc = STORE_AMBIGUOUS;
        if (candidates) {
            *candidates = found;
            found = NULL;
        }
        if (n_candidates)
            *n_candidates = n;
    }
    free(found);
    return rc;
}

/* HMGETs of the spills' metadata fields, LAYOUT_READ_ARGS_MAX at a time
 * (each sees any commit whole or not at all): only small values come back
 * (a spill's text and metadata are written and removed together). */
int op_spill_exists_many(store *s, const char *ns, const store_spill_ref *refs, size_t n,
                         unsigned char *found)
{
    enum { CHUNK = LAYOUT_READ_ARGS_MAX - 2 };
    layout_keys k;
    if (n == 0)
        return 0;
    if (op_keys(s, ns, &k) != 0)
        return -1;
    size_t most = n < CHUNK ? n : CHUNK;
    const char **argv = malloc((most + 2) * sizeof(*argv));
    size_t *lens = malloc((most + 2) * sizeof(*lens));
    char **fields = calloc(most, sizeof(*fields));
    int rc = 0;
    if (!argv || !lens || !fields) {
        free(argv);
        free(lens);
        free(fields);
        return op_oom(s);
    }
    argv[0] = "HMGET";
    lens[0] = 5;
    argv[1] = k.meta;
    lens[1] = strlen(k.meta);
    for (size_t at = 0; rc == 0 && at < n; at += most) {
        size_t m = n - at < most ? n - at : most;
        for (size_t i = 0; i < m; i++) {
            fields[i] = layout_field(refs[at + i].sha256, refs[at + i].key, refs[at + i].key_len,
                                     &lens[i + 2]);
            argv[i + 2] = fields[i];
            if (!fields[i])
                rc = op_oom(s);
        }
        redisReply *r = rc == 0 ? staged_read(s, &k, (int)m + 2, argv, lens) : NULL;
        if (!r) {
            rc = -1;
        } else if (r->type != REDIS_REPLY_ARRAY || r->elements != m) {
            store_fail(s, STORE_ERR_PROTOCOL, "HMGET: unexpected reply");
            rc = -1;
        } else {
            for (size_t i = 0; i < m; i++)
                found[at + i] = r->element[i]->type == REDIS_REPLY_STRING;
        }
        if (r)
            freeReplyObject(r);
        for (size_t i = 0; i < m; i++) {
            free(fields[i]);
            fields[i] = NULL;
        }
    }
    free(fields);
    free(argv);
    free(lens);
    return rc;
}

/* ---- Decision log reads ---- */

/* Entries are read this many at a time at most, fewer once their sizes are
 * known: a page stops at its byte bound, and an XRANGE of large entries
 * would make Redis and compactd each hold all of them at once. */
#define EVENT_CHUNK_MAX 64

/* How many entries the next XRANGE asks for: what is left of limit, and no
 * more than the bytes left would hold at the size of the largest entry
 * seen (one more: the entry that passes the bound tells a page follows). */
static size_t event_chunk(size_t left, size_t bytes_left, size_t largest)
{
    size_t n = largest ? bytes_left / largest + 1 : 8;
    if (n > EVENT_CHUNK_MAX)
        n = EVENT_CHUNK_MAX;
    return n < left ? n : left;
}

/* Appends the entries of one XRANGE reply to ev[*got..]. Returns the id of
 * the last entry in the reply (even one skipped as malformed) in last, 0,
 * or -1 when out of memory. */
static int event_take(store *s, const redisReply *r, store_event *ev, size_t *got, size_t *bytes,
                      size_t *largest, char last[64])
{
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2)
            continue;
        const redisReply *id = e->element[0], *fv = e->element[1];
        if (id->type != REDIS_REPLY_STRING || id->len >= 64)
            continue;
        memcpy(last, id->str, id->len);
        last[id->len] = '\0';
        if (id->len >= sizeof(ev[*got].id) || fv->type != REDIS_REPLY_ARRAY || fv->elements < 2)
            continue;
        store_event *out = &ev[*got];
        memcpy(out->id, id->str, id->len + 1);
        out->data = layout_dup(fv->element[1]->str, fv->element[1]->len);
        out->data_len = fv->element[1]->len;
        if (!out->data)
            return op_oom(s);
        size_t size = out->data_len + id->len;
        *bytes += size;
        if (size > *largest)
            *largest = size;
        (*got)++;
    }
    return 0;
}

int op_event_range(store *s, const char *ns, const char *after, size_t limit, size_t max_bytes,
                   store_event **out, size_t *n)
{
    layout_keys k;
    char start[72], count[24], last[64] = "";
    size_t got = 0, bytes = 0, largest = 0;
    *out = NULL;
    *n = 0;
    if (op_keys(s, ns, &k) != 0)
        return -1;
    store_event *ev = calloc(limit ? limit : 1, sizeof(*ev));
    if (!ev)
        return op_oom(s);
    for (;;) {
        if (last[0])
            snprintf(start, sizeof(start), "(%s", last);
        else if (after)
            snprintf(start, sizeof(start), "(%.*s", 48, after);
        else
            strcpy(start, "-");
        size_t ask = event_chunk(limit - got, max_bytes > bytes ? max_bytes - bytes : 0, largest);
        snprintf(count, sizeof(count), "%zu", ask);
        const char *argv[] = {"XRANGE", k.events, start, "+", "COUNT", count};
        size_t lens[] = {6, strlen(k.events), strlen(start), 1, 5, strlen(count)};
        redisReply *r =
            op_expect(s, s->t->command(s, 6, argv, lens), REDIS_REPLY_ARRAY, 0, "XRANGE");
        if (!r || r->elements > ask) {
            if (r) {
                freeReplyObject(r);
                store_fail(s, STORE_ERR_PROTOCOL, "XRANGE: unexpected reply");
            }
            store_events_free(ev, got);
            return -1;
        }
        size_t replied = r->elements;
        int rc = event_take(s, r, ev, &got, &bytes, &largest, last);
        freeReplyObject(r);
        if (rc != 0) {
            store_events_free(ev, got);
            return -1;
        }
        /* Done at the end of the stream, at limit, or past the bytes with
         * at least two entries read (the page's first and the next). */
        if (replied < ask || got == limit || !last[0] || (bytes > max_bytes && got >= 2))
            break;
    }
    *out = ev;
    *n = got;
    return 0;
}
