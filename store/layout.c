/* Key names, hash fields and the metadata record of the spill store (its
 * scripts are store/scripts/, embedded at build time). */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Key names ---- */

int layout_keys_make(const char *ns, layout_keys *k)
{
    int a = snprintf(k->text, sizeof(k->text), "compactd:{%s}:text", ns);
    int b = snprintf(k->meta, sizeof(k->meta), "compactd:{%s}:meta", ns);
    int c = snprintf(k->events, sizeof(k->events), "compactd:{%s}:events", ns);
    int d = snprintf(k->pending, sizeof(k->pending), "compactd:{%s}:pending", ns);
    int e = snprintf(k->stage, sizeof(k->stage), "compactd:{%s}:stage:", ns);
    int f = snprintf(k->commits, sizeof(k->commits), "compactd:{%s}:commits", ns);
    /* The stage prefix leaves room for a nonce and a piece number. */
    if (a < 0 || b < 0 || c < 0 || d < 0 || e < 0 || f < 0 || (size_t)a >= sizeof(k->text) ||
        (size_t)d >= sizeof(k->pending) || (size_t)e + 40 >= sizeof(k->stage) ||
        (size_t)f >= sizeof(k->commits))
        return -1;
    return 0;
}

/* ---- Fields and records ---- */

char *layout_field(const char *sha256, const char *key, size_t key_len, size_t *len)
{
    char *f = malloc(64 + 1 + key_len);
    if (!f)
        return NULL;
    memcpy(f, sha256, 64);
    f[64] = ':';
    memcpy(f + 65, key, key_len);
    *len = 65 + key_len;
    return f;
}

char *layout_meta(const store_spill *sp, const char *created_at)
{
    size_t len = strlen(sp->cls) + strlen(created_at) + 24 + sp->metadata_len;
    char *meta = malloc(len);
    if (!meta)
        return NULL;
    /* "<class> <tokens> <created_at>[ <metadata>]": the metadata, a JSON
     * object's text (never a NUL), goes last, as it may hold spaces. */
    int n = snprintf(meta, len, "%s %lld %s", sp->cls, (long long)sp->tokens, created_at);
    if (sp->metadata) {
        meta[n++] = ' ';
        memcpy(meta + n, sp->metadata, sp->metadata_len);
        meta[(size_t)n + sp->metadata_len] = '\0';
    }
    return meta;
}

char *layout_dup(const char *p, size_t len)
{
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, p, len);
        d[len] = '\0';
    }
    return d;
}

int layout_record_from_meta(const char *field, size_t flen, const char *meta, size_t mlen,
                            store_record *out)
{
    memset(out, 0, sizeof(*out));
    if (flen < 65 || field[64] != ':')
        return -1;
    const char *sp1 = memchr(meta, ' ', mlen);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', mlen - (size_t)(sp1 + 1 - meta)) : NULL;
    if (!sp2)
        return -1;
    memcpy(out->sha256, field, 64);
    out->sha256[64] = '\0';
    out->key = layout_dup(field + 65, flen - 65);
    out->key_len = flen - 65;
    out->cls = layout_dup(meta, (size_t)(sp1 - meta));
    out->tokens = strtoll(sp1 + 1, NULL, 10);
    const char *end = meta + mlen;
    const char *sp3 = memchr(sp2 + 1, ' ', (size_t)(end - (sp2 + 1)));
    out->created_at = layout_dup(sp2 + 1, (size_t)((sp3 ? sp3 : end) - (sp2 + 1)));
    /* The place in the spill order, when there is one, before metadata. */
    if (sp3 && sp3 + 1 < end && sp3[1] >= '0' && sp3[1] <= '9')
        sp3 = memchr(sp3 + 1, ' ', (size_t)(end - (sp3 + 1)));
    if (sp3) {
        out->metadata_len = (size_t)(end - (sp3 + 1));
        out->metadata = layout_dup(sp3 + 1, out->metadata_len);
    }
    if (!out->key || !out->cls || !out->created_at || (sp3 && !out->metadata)) {
        store_record_clear(out);
        return -1;
    }
    return 0;
}

int layout_meta_order(const char *meta, size_t mlen, unsigned long long *a, unsigned long long *b)
{
    size_t words = 0, i = 0;
    for (; i < mlen && words < 3; i++)
        words += meta[i] == ' ';
    if (words < 3 || i >= mlen || meta[i] < '0' || meta[i] > '9')
        return 0;
    char buf[48];
    const char *space = memchr(meta + i, ' ', mlen - i);
    size_t len = (size_t)((space ? space : meta + mlen) - (meta + i));
    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, meta + i, len);
    buf[len] = '\0';
    return sscanf(buf, "%llu-%llu", a, b) == 2;
}

int layout_record_cmp(const void *pa, const void *pb)
{
    const store_record *a = pa, *b = pb;
    int c = strcmp(a->created_at, b->created_at);
    if (c)
        return c;
    size_t m = a->key_len < b->key_len ? a->key_len : b->key_len;
    c = memcmp(a->key, b->key, m);
    if (c)
        return c;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return strcmp(a->sha256, b->sha256);
}

/* ---- Staging ---- */

int layout_stage_key(const layout_keys *k, const char *nonce, size_t i, char *out, size_t len)
{
    int n = snprintf(out, len, "%s%s:%zu", k->stage, nonce, i);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

int layout_marker_key(const layout_keys *k, const char *nonce, char *out, size_t len)
{
    int n = snprintf(out, len, "%s%s", k->stage, nonce);
    return n < 0 || (size_t)n >= len ? -1 : n;
}
