/* The answer the client gets after rounds answered inside: what it sees of
 * the earlier rounds (their text, thinking and items, but the reacquire
 * calls and the reasoning that led to them alone) put before the last
 * round's own, and every round's usage summed: the same answer, whole or
 * streamed (proxy_live.c). */
#include "proxy_internal.h"

#include "json_region.h"
#include "json_span.h"

#include <stdlib.h>
#include <string.h>

/* ---- Reasoning ---- */

/* 1 when a part the client sees comes after the reasoning item at i
 * before another reasoning item. */
static int leads_to_shown(const proxy_api *api, json_t *parts, size_t i)
{
    for (size_t j = i + 1; j < json_array_size(parts); j++) {
        json_t *p = json_array_get(parts, j);
        if (proxy_is_reasoning(p))
            return 0;
        if (proxy_call_kind(api, p) != 1)
            return 1;
    }
    return 0;
}

/* ---- The rounds' parts ---- */

/* Chat Completions' message, whose content is its text. */
static json_t *chat_answer_message(json_t *doc)
{
    return json_object_get(json_array_get(json_object_get(doc, "choices"), 0), "message");
}

void proxy_turn_shown(const proxy_api *api, const proxy_turn *t, json_t *shown)
{
    if (api->kind == PROXY_CHAT) {
        json_t *text = json_object_get(chat_answer_message(t->doc), "content");
        if (json_string_length(text) > 0)
            json_array_append(shown, text);
        return;
    }
    /* Anthropic's content blocks, the Responses items. */
    json_t *parts = api->kind == PROXY_MESSAGES ? json_object_get(t->doc, "content")
                                                : json_object_get(t->doc, "output");
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p)
    {
        if (proxy_call_kind(api, p) == 1 || (proxy_is_reasoning(p) && !leads_to_shown(api, parts, i)))
            continue;
        json_array_append(shown, p);
    }
}

int proxy_turn_after_shown(const proxy_api *api, proxy_turn *t, const json_t *shown)
{
    size_t i;
    json_t *p;
    if (json_array_size(shown) == 0)
        return 0;
    if (api->kind == PROXY_CHAT) { /* one text, the rounds' in order */
        json_t *message = chat_answer_message(t->doc), *own = json_object_get(message, "content");
        if (!json_is_object(message))
            return 0; /* not an answer of the API's: nowhere to put them */
        size_t len = json_string_length(own), at = 0;
        json_array_foreach(shown, i, p) len += json_string_length(p);
        char *text = malloc(len + 1);
        if (!text)
            return -1;
        json_array_foreach(shown, i, p)
        {
            memcpy(text + at, json_string_value(p), json_string_length(p));
            at += json_string_length(p);
        }
        memcpy(text + at, json_is_string(own) ? json_string_value(own) : "", len - at);
        int rc = json_object_set_new(message, "content", json_stringn(text, len));
        free(text);
        return rc;
    }
    const char *key = api->kind == PROXY_MESSAGES ? "content" : "output";
    if (!json_is_array(json_object_get(t->doc, key)))
        return 0; /* as above */
    json_t *all = json_copy((json_t *)shown);
    if (!all || json_array_extend(all, json_object_get(t->doc, key)) != 0) {
        json_decref(all);
        return -1;
    }
    return json_object_set_new(t->doc, key, all);
}

/* ---- A round's answer ---- */

proxy_round_kind proxy_round_judge(const proxy_turn *t, int parsed, int rounds, int max_rounds)
{
    if (!parsed || t->n_reacquire == 0)
        return ROUND_ANSWER;
    if (t->n_other > 0)
        return ROUND_ASIDE;
    return rounds >= max_rounds ? ROUND_LIMIT : ROUND_AGAIN;
}

char *proxy_round_answer(const proxy_api *api, proxy_turn *t, int parsed, proxy_round_kind k,
                         const json_t *usage, const json_t *shown, char *body, size_t len,
                         size_t *out_len)
{
    char *out = NULL;
    if (k == ROUND_ANSWER && (!parsed || !usage)) { /* as it came */
        *out_len = len;
        return body;
    }
    if (k == ROUND_ANSWER && json_array_size(shown) == 0) { /* as it came, but for its usage */
        out = proxy_with_usage(body, len, usage, out_len);
    } else {
        /* The earlier rounds' parts first, as a stream would have had them. */
        if (usage)
            json_object_set(t->doc, "usage", (json_t *)usage);
        if (proxy_turn_after_shown(api, t, shown) == 0)
            out = proxy_turn_without_reacquire(api, t, out_len);
    }
    free(body);
    return out;
}

/* ---- Usage ---- */

/* Adds the counts of u into sum, member by member (nested ones too); a
 * member sum lacks, or one that is no count (a tier's name), is u's. */
static void usage_into(json_t *sum, const json_t *u)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)u, k, v)
    {
        json_t *had = json_object_get(sum, k);
        if (json_is_integer(v) && json_is_integer(had))
            json_object_set_new(sum, k,
                                json_integer(json_integer_value(had) + json_integer_value(v)));
        else if (json_is_object(v) && json_is_object(had))
            usage_into(had, v);
        else if (!json_is_null(v) || !had)
            json_object_set_new(sum, k, json_deep_copy(v));
    }
}

void proxy_usage_add(json_t **sum, const json_t *usage)
{
    if (!json_is_object(usage))
        return;
    if (!*sum)
        *sum = json_object();
    if (*sum)
        usage_into(*sum, usage);
}

char *proxy_with_usage(const char *body, size_t len, const json_t *usage, size_t *out_len)
{
    size_t u0, u1;
    char *u = json_dumps_plain(usage, JSON_COMPACT), *out = NULL;
    if (u && json_span_member(body, len, json_span_skip_ws(body, 0, len), "usage", &u0, &u1) == 0)
        out = proxy_splice(body, len, u0, u1, u, strlen(u), out_len);
    else if (u && (out = malloc(len + 1))) { /* none to replace */
        memcpy(out, body, len);
        out[len] = '\0';
        *out_len = len;
    }
    free(u);
    return out;
}
