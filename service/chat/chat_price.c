/* Chat pricing: counts through the request's counter, remembered by digest
 * in the token cache. */
#include "chat_price.h"

#include "json_escape.h"
#include "sha256.h"
#include "token_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t chat_carrier_json(const char *text, size_t len, char *out)
{
    static const char head[] = "{\"" CHAT_CARRIER_KEY "\":\"";
    char *p = out;
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;
    p += json_escape(text, len, p);
    *p++ = '"';
    *p++ = '}';
    return (size_t)(p - out);
}

static int64_t count_all(const chat_str *s, size_t n, const chat_counter *cnt)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t t = cnt->count(cnt->ctx, s[i].s, s[i].len);
        if (t < 0)
            return -1;
        total += t;
    }
    return total;
}

/* Tokens of text in each text carrier and each JSON carrier. */
static int64_t carriers(const chat_message *m, const char *text, size_t len, int64_t text_tokens,
                        const chat_counter *cnt)
{
    int64_t total = (int64_t)m->text_slots * text_tokens;
    if (m->json_slots == 0)
        return total;
    char *json = malloc(chat_carrier_room(len));
    if (!json)
        return -1;
    int64_t t = cnt->count(cnt->ctx, json, chat_carrier_json(text, len, json));
    free(json);
    return t < 0 ? -1 : total + (int64_t)m->json_slots * t;
}

/* The tokens of the pointer (v[0]) and of the message's form that carries it
 * (v[1]: in each text and JSON carrier). They depend only on the pointer's
 * text and the message's carriers, which are the same on every turn for the
 * same message at the same key: remembered in the token cache under a
 * digest of those, so that a history sent again counts no pointer. */
static int pointer_costs(const chat_message *m, const char *pointer, size_t pointer_len,
                         const chat_counter *cnt, const void *who, int64_t v[TOKEN_CACHE_VALUES])
{
    static const char domain[] = "compactd pointer forms";
    char key[sizeof(domain) + 2 * 24 + 256], hex[65];
    if (pointer_len > 256) { /* not a pointer compactd writes: count it */
        v[0] = cnt->count(cnt->ctx, pointer, pointer_len);
        v[1] = v[0] < 0 ? -1 : carriers(m, pointer, pointer_len, v[0], cnt);
        return v[1] < 0 ? -1 : 0;
    }
    /* The domain, then the carrier counts as raw bytes: a fixed-width
     * prefix, so the pointer that follows cannot be confused with them. */
    size_t slots[2] = {m->text_slots, m->json_slots}, n = sizeof(domain);
    memcpy(key, domain, sizeof(domain));
    memcpy(key + n, slots, sizeof(slots));
    n += sizeof(slots);
    memcpy(key + n, pointer, pointer_len);
    sha256_hex(key, n + pointer_len, hex);
    if (token_cache_get(who, hex, v))
        return 0;
    v[0] = cnt->count(cnt->ctx, pointer, pointer_len);
    v[1] = v[0] < 0 ? -1 : carriers(m, pointer, pointer_len, v[0], cnt);
    if (v[1] < 0)
        return -1;
    token_cache_put(who, hex, v);
    return 0;
}

int chat_price_message(const chat_message *m, const char *sha256_hex, const char *pointer,
                       size_t pointer_len, const chat_counter *cnt, chat_costs *out)
{
    /* The tokenizer is identified by its counter and context together. */
    const void *who = cnt->ctx ? cnt->ctx : (const void *)cnt->count;
    int64_t v[TOKEN_CACHE_VALUES];
    if (!token_cache_get(who, sha256_hex, v)) {
        v[0] = count_all(m->kept, m->n_kept, cnt);
        v[1] = count_all(m->payload, m->n_payload, cnt);
        if (v[0] < 0 || v[1] < 0)
            return -1;
        token_cache_put(who, sha256_hex, v);
    }
    /* What every form keeps as sent: the texts of kept, the parts priced
     * by their bytes (fixed_tokens). Parts priced by a stated bound
     * (bound_tokens) are the message's own, which an annotation's tokens
     * stand for. */
    int64_t frame = CHAT_MESSAGE_FRAME_TOKENS + v[0] + m->fixed_tokens;
    out->full = frame + v[1] + (m->note.has_tokens ? m->note.tokens : m->bound_tokens);
    if (m->text_slots + m->json_slots == 0) {
        /* Nowhere to carry a replacement: every form is the message. */
        out->externalized = out->summarized = out->full;
        return 0;
    }

    /* Without a pointer (a message never externalized) that form is the
     * message itself. */
    out->externalized = out->full;
    int64_t ptr[TOKEN_CACHE_VALUES];
    if (pointer) {
        if (pointer_costs(m, pointer, pointer_len, cnt, who, ptr) != 0)
            return -1;
        out->externalized = frame + ptr[1];
    }

    out->summarized = out->full;
    if (m->note.has_summary) {
        const chat_str *s = &m->note.summary;
        int64_t all;
        if (m->note.has_summary_tokens) {
            /* The caller's count stands for the text; the carrier's JSON
             * around it is still priced. */
            int64_t wrap = m->json_slots ? carriers(m, "", 0, 0, cnt) : 0;
            all = wrap < 0
                      ? -1
                      : (int64_t)(m->text_slots + m->json_slots) * m->note.summary_tokens + wrap;
        } else {
            int64_t t = cnt->count(cnt->ctx, s->s, s->len);
            all = t < 0 ? -1 : carriers(m, s->s, s->len, t, cnt);
        }
        if (all < 0)
            return -1;
        out->summarized = frame + all;
    }
    return 0;
}

/* Whether s is one of the texts of m's calls (its id, name or arguments). */
static int of_a_call(const chat_message *m, chat_str s)
{
    for (size_t k = 0; k < m->n_calls; k++)
        if (s.s == m->calls[k].id.s || s.s == m->calls[k].name.s || s.s == m->calls[k].args.s)
            return 1;
    return 0;
}

int chat_price_without_calls(const chat_message *m, const char *digest, const char *pointer,
                             size_t pointer_len, const chat_counter *cnt, chat_costs *out)
{
    static const char domain[] = "compactd message without its calls";
    char key[sizeof(domain) + SHA256_HEX_LEN], hex[SHA256_HEX_LEN + 1];
    chat_message bare = *m;
    bare.kept = malloc((m->n_kept ? m->n_kept : 1) * sizeof(chat_str));
    bare.payload = malloc((m->n_payload ? m->n_payload : 1) * sizeof(chat_str));
    int rc = -1;
    if (!bare.kept || !bare.payload)
        goto done;
    bare.n_kept = bare.n_payload = 0;
    for (size_t i = 0; i < m->n_kept; i++)
        if (!of_a_call(m, m->kept[i]))
            bare.kept[bare.n_kept++] = m->kept[i];
    for (size_t i = 0; i < m->n_payload; i++)
        if (!of_a_call(m, m->payload[i]))
            bare.payload[bare.n_payload++] = m->payload[i];
    bare.n_calls = 0;
    bare.json_slots = 0;
    /* Counted once per message and tokenizer, like the message itself. */
    memcpy(key, domain, sizeof(domain));
    memcpy(key + sizeof(domain), digest, SHA256_HEX_LEN);
    sha256_hex(key, sizeof(key), hex);
    rc = chat_price_message(&bare, hex, pointer, pointer_len, cnt, out);
done:
    free(bare.kept);
    free(bare.payload);
    return rc;
}

/* Counts of texts that are priced on every request (loss markers, the
 * system prompt, tool definitions), remembered in the token cache under a
 * digest of the domain, the role and the text's own digest, so that the same
 * text on a later turn is not counted again. Returns the count of role and
 * text together, or -1 when out of memory. */
static int64_t remembered_count(const char *domain, const char *role, const char *text, size_t len,
                                const chat_counter *cnt)
{
    const void *who = cnt->ctx ? cnt->ctx : (const void *)cnt->count;
    char key[64 + 1 + 64 + 1 + SHA256_HEX_LEN + 1], hex[65];
    size_t dl = strlen(domain), rl = strlen(role), n = 0;
    if (dl > 64 || rl > 64)
        return -1;
    /* domain NUL role NUL digest: the NULs keep the parts apart. */
    memcpy(key, domain, dl + 1);
    n = dl + 1;
    memcpy(key + n, role, rl + 1);
    n += rl + 1;
    sha256_hex(text, len, key + n);
    sha256_hex(key, n + 64, hex);
    int64_t v[TOKEN_CACHE_VALUES];
    if (token_cache_get(who, hex, v))
        return v[0];
    int64_t r = cnt->count(cnt->ctx, role, strlen(role));
    int64_t t = cnt->count(cnt->ctx, text, len);
    if (r < 0 || t < 0)
        return -1;
    v[0] = r + t;
    v[1] = 0;
    token_cache_put(who, hex, v);
    return v[0];
}

/* The cache's key for a domain and a text's digest. */
static void cache_key(const char *domain, const char *text_hex, char hex[SHA256_HEX_LEN + 1])
{
    char key[64 + 1 + SHA256_HEX_LEN];
    size_t dl = strlen(domain);
    memcpy(key, domain, dl + 1);
    memcpy(key + dl + 1, text_hex, SHA256_HEX_LEN);
    sha256_hex(key, dl + 1 + SHA256_HEX_LEN, hex);
}

int chat_count_entry(const char *text, size_t len, const chat_counter *cnt,
                     int64_t out[CHAT_ENTRY_ENDS])
{
    static const char ends[CHAT_ENTRY_ENDS] = {';', '.', ']'};
    const void *who = cnt->ctx ? cnt->ctx : (const void *)cnt->count;
    char text_hex[SHA256_HEX_LEN + 1], hex[2][SHA256_HEX_LEN + 1];
    int64_t v[2][TOKEN_CACHE_VALUES];
    sha256_hex(text, len, text_hex);
    cache_key("marker entry", text_hex, hex[0]);
    cache_key("marker entry, last", text_hex, hex[1]);
    if (token_cache_get(who, hex[0], v[0]) && token_cache_get(who, hex[1], v[1])) {
        out[CHAT_ENTRY_MORE] = v[0][0];
        out[CHAT_ENTRY_LIST] = v[0][1];
        out[CHAT_ENTRY_LAST] = v[1][0];
        return 0;
    }
    char *part = malloc(len + 2);
    if (!part)
        return -1;
    part[0] = ' ';
    memcpy(part + 1, text, len);
    for (int k = 0; k < CHAT_ENTRY_ENDS; k++) {
        part[len + 1] = ends[k];
        if ((out[k] = cnt->count(cnt->ctx, part, len + 2)) < 0) {
            free(part);
            return -1;
        }
    }
    free(part);
    int64_t put[2][TOKEN_CACHE_VALUES] = {{out[CHAT_ENTRY_MORE], out[CHAT_ENTRY_LIST]},
                                          {out[CHAT_ENTRY_LAST], 0}};
    token_cache_put(who, hex[0], put[0]);
    token_cache_put(who, hex[1], put[1]);
    return 0;
}

int64_t chat_count_remembered(const char *text, size_t len, const chat_counter *cnt)
{
    return remembered_count("text", "", text, len, cnt);
}

int64_t chat_price_text_message(const char *role, const char *text, size_t len,
                                const chat_counter *cnt)
{
    int64_t t = remembered_count("text message", role, text, len, cnt);
    return t < 0 ? -1 : CHAT_MESSAGE_FRAME_TOKENS + t;
}

int64_t chat_price_tools(const chat_rules *rules, const char *json, size_t len,
                         const chat_counter *cnt)
{
    int64_t t = remembered_count("tools", "", json, len, cnt);
    return t < 0 ? -1 : CHAT_MESSAGE_FRAME_TOKENS + t + rules->tools_prompt_tokens;
}
