/* Key names, hash fields and the metadata record of the spill store. */
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

/* ---- Scripts ---- */

/* The deadline check that opens every writing script. */
#define LAYOUT_LUA_DEADLINE                                                                        \
    "local t = redis.call('TIME')\n"                                                               \
    "if tonumber(t[1]) * 1000000 + tonumber(t[2]) > tonumber(ARGV[1]) then return 0 end\n"

/* The commit's place in the spill order: its log entry's id, or Redis's
 * clock in the same form. A commit that spills is recorded as the
 * session's last ('-'): without a key, names matter only where spills
 * were written (a refusal's or a plan's entry alone changes no spill). A
 * keyed commit is recorded as its scope's, spills or not: the key is held. */
#define LAYOUT_LUA_ORDER                                                                           \
    "local order\n"                                                                                \
    "if ARGV[2] ~= '' then\n"                                                                      \
    "  order = redis.call('XADD', KEYS[3], '*', 'entry', ARGV[2], 'commit', ARGV[3])\n"            \
    "  if #ARGV > 4 then redis.call('HSET', KEYS[6], '-', ARGV[3]) end\n"                          \
    "  if ARGV[4] ~= '' then redis.call('HSET', KEYS[6], ARGV[4], ARGV[3]) end\n"                  \
    "else\n"                                                                                       \
    "  local us = tonumber(t[2])\n"                                                                \
    "  order = (tonumber(t[1]) * 1000 + math.floor(us / 1000)) .. '-' .. (us % 1000)\n"            \
    "end\n"

/* Writes spill field f's text: the first copy stays. */
#define LAYOUT_LUA_TEXT(f, text) "  redis.call('HSETNX', KEYS[1], " f ", " text ")\n"

/* Writes spill field f's meta value m at order: the first spill's class,
 * tokens, created_at and metadata stay, the order is the commit's. */
#define LAYOUT_LUA_META(f, m)                                                                      \
    "  local head, rest = string.match(redis.call('HGET', KEYS[2], " f ") or " m ",\n"             \
    "                                    '^(%S+ %S+ %S+)(.*)$')\n"                                 \
    "  rest = (string.gsub(rest, '^ %d+%-%d+', '', 1))\n"                                          \
    "  redis.call('HSET', KEYS[2], " f ", head .. ' ' .. order .. rest)\n"

/* A commit whose name is the session's last commit's ('-' in the commits
 * hash), or the last one's under its Idempotency-Key (its scope's field),
 * ran already: this one may be its retry (retry is set). One whose scope
 * names a commit with other content reuses the key for another body, and
 * writes nothing (returns -4). A hash field, not the log: reading the last
 * log entry would copy all of it, which can be megabytes, into the script,
 * and a key is held across later commits. */
#define LAYOUT_LUA_RETRY                                                                           \
    "local retry = false\n"                                                                        \
    "if ARGV[2] ~= '' and ARGV[3] ~= '' then\n"                                                    \
    "  local held = redis.call('HGET', KEYS[6], ARGV[4] ~= '' and ARGV[4] or '-')\n"               \
    "  if ARGV[4] ~= '' and held and held ~= ARGV[3] then return -4 end\n"                         \
    "  retry = held == ARGV[3]\n"                                                                  \
    "end\n"

#define LAYOUT_STR2(x) #x
#define LAYOUT_STR(x) LAYOUT_STR2(x)

/* A meta value that starts with '=' (61) comes without its text, which
 * must be stored already: the check runs before anything is written. */
const char layout_commit_script[] = LAYOUT_LUA_DEADLINE
    "if redis.call('EXISTS', KEYS[4]) == 1 then return -1 end\n" LAYOUT_LUA_RETRY
    "for i = 5, #ARGV, 3 do\n"
    "  if string.byte(ARGV[i + 2]) == 61 and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then\n"
    "    return -3\n"
    "  end\n"
    "end\n"
    /* A retry is answered only when every text it names is stored; one
     * that vanished is written again. */
    "for i = 5, #ARGV, 3 do\n"
    "  if retry and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then retry = false end\n"
    "end\n"
    "if retry then return 2 end\n" LAYOUT_LUA_ORDER "for i = 5, #ARGV, 3 do\n"
    "  local m = ARGV[i + 2]\n"
    "  if string.byte(m) == 61 then m = string.sub(m, 2) else\n" LAYOUT_LUA_TEXT(
        "ARGV[i]", "ARGV[i + 1]") "  end\n" LAYOUT_LUA_META("ARGV[i]", "m") "end\n"
                                                                            "return 1\n";

const char layout_stage_script[] = "redis.call('HSET', KEYS[1], unpack(ARGV, 2))\n"
                                   "redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
                                   "return 1\n";

const char layout_publish_script[] = LAYOUT_LUA_DEADLINE
    "if redis.call('EXISTS', KEYS[4]) == 1 then return -1 end\n" LAYOUT_LUA_RETRY
    "local n = tonumber(ARGV[6])\n"
    "for i = 0, n - 1 do\n"
    "  if redis.call('EXISTS', ARGV[5] .. i) == 0 then return -2 end\n"
    "end\n"
    /* As for a small commit: a retry is answered only when every text its
     * pieces hold is stored; one that vanished is published again. */
    "for i = 0, n - 1 do\n"
    "  if not retry then break end\n"
    "  for _, f in ipairs(redis.call('HKEYS', ARGV[5] .. i)) do\n"
    "    if string.byte(f) == 116 and redis.call('HEXISTS', KEYS[1], string.sub(f, 2)) == 0 then\n"
    "      retry = false\n"
    "      break\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if retry then return 2 end\n" LAYOUT_LUA_ORDER
    "for i = 0, n - 1 do redis.call('PERSIST', ARGV[5] .. i) end\n"
    /* The pending record names the pieces by their staging nonce, the
     * prefix's last part; the log entry carries the commit's name. */
    "local nonce = string.match(ARGV[5], '(%x+):$')\n"
    "redis.call('SET', KEYS[4], nonce .. ' ' .. order .. ' ' .. n .. ' ' .. n)\n"
    "redis.call('SET', KEYS[5], order, 'PX', " LAYOUT_STR(LAYOUT_STAGE_TTL_MS) ")\n"
                                                                               "return 1\n";

const char layout_merge_script[] =
    "local p = redis.call('GET', KEYS[3])\n"
    "if not p then return 0 end\n"
    "local nonce, order, total, left = string.match(p, '^(%S+) (%S+) (%d+) (%d+)$')\n"
    "if nonce ~= ARGV[1] or redis.call('EXISTS', ARGV[2]) == 0 then return 0 end\n"
    "local kv = redis.call('HGETALL', ARGV[2])\n"
    /* Pieces are hashes: their fields come in no particular order. */
    "for i = 1, #kv, 2 do\n"
    "  local f = string.sub(kv[i], 2)\n"
    "  if string.byte(kv[i], 1) == 116 then\n" LAYOUT_LUA_TEXT(
        "f", "kv[i + 1]") "  else\n" LAYOUT_LUA_META("f",
                                                     "kv[i + 1]") "  end\n"
                                                                  "end\n"
                                                                  "redis.call('DEL', ARGV[2])\n"
                                                                  "left = tonumber(left) - 1\n"
                                                                  "if left == 0 then "
                                                                  "redis.call('DEL', KEYS[3])\n"
                                                                  "else redis.call('SET', KEYS[3], "
                                                                  "nonce .. ' ' .. order .. ' ' .. "
                                                                  "total .. ' ' .. left) end\n"
                                                                  "return 1\n";

/* The pending record is read and its pieces removed in the same script
 * as the session's keys, so that no commit can publish (and keep its
 * pieces past their expiry) between the read and the removal. */
const char layout_drop_script[] =
    "local p = redis.call('GET', KEYS[4])\n"
    "if p then\n"
    "  local nonce, total = string.match(p, '^(%x+) %S+ (%d+) %d+$')\n"
    "  for i = 0, (tonumber(total) or 0) - 1 do\n"
    "    redis.call('UNLINK', ARGV[1] .. nonce .. ':' .. i)\n"
    "  end\n"
    "end\n"
    "return redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])\n";

const char layout_read_script[] = "#!lua flags=no-writes\n"
                                  "if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end\n"
                                  "return redis.call(ARGV[1], KEYS[2], unpack(ARGV, 2))\n";

const char layout_probe_script[] =
    "if ARGV[2] ~= '' then\n"
    "  if redis.call('EXISTS', KEYS[3]) == 1 then return 1 end\n"
    "  for _, e in ipairs(redis.call('XRANGE', KEYS[2], ARGV[1], '+')) do\n"
    "    local f = e[2]\n"
    "    for j = 1, #f - 1, 2 do\n"
    "      if f[j] == 'commit' and f[j + 1] == ARGV[2] then return 1 end\n"
    "    end\n"
    "  end\n"
    "  return 0\n"
    "end\n"
    "for i = 3, #ARGV do\n"
    "  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then return 0 end\n"
    "end\n"
    "return 1\n";
