/* A model's answer as the proxy reads it: which calls it makes (the
 * reacquire tool's, the client's own), the answer built back from its
 * events when it was streamed, and the answer or its events with the
 * reacquire calls taken out, as the API itself would have written them. */
#include "proxy_internal.h"

#include "json_region.h"

#include <stdlib.h>
#include <string.h>

#define REACQUIRE "reacquire"

/* ---- Where each API keeps its calls ---- */

json_t *proxy_turn_parts(const proxy_api *api, json_t *doc)
{
    switch (api->kind) {
    case PROXY_CHAT: {
        json_t *choice = json_array_get(json_object_get(doc, "choices"), 0);
        return json_object_get(json_object_get(choice, "message"), "tool_calls");
    }
    case PROXY_MESSAGES:
        return json_object_get(doc, "content");
    case PROXY_RESPONSES:
    default:
        return json_object_get(doc, "output");
    }
}

int proxy_call_kind(const proxy_api *api, json_t *part)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    const char *name = NULL;
    if (api->kind == PROXY_CHAT) {
        name = json_string_value(json_object_get(json_object_get(part, "function"), "name"));
        if (!name) /* a custom tool's call */
            name = json_string_value(json_object_get(json_object_get(part, "custom"), "name"));
    } else if (type && (strcmp(type, "tool_use") == 0 || strcmp(type, "function_call") == 0 ||
                        strcmp(type, "custom_tool_call") == 0)) {
        name = json_string_value(json_object_get(part, "name"));
    } else {
        return -1;
    }
    return name && strcmp(name, REACQUIRE) == 0 ? 1 : 0;
}

int proxy_is_reasoning(json_t *part)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    return type && strcmp(type, "reasoning") == 0;
}

/* 1 when the items after the reasoning item at i are reacquire calls
 * (one at least) and then another reasoning item or none: it led to
 * them alone. */
int proxy_led_to_reacquire_alone(const proxy_api *api, json_t *parts, size_t i)
{
    size_t n = json_array_size(parts), j = i + 1;
    if (api->kind != PROXY_RESPONSES || !proxy_is_reasoning(json_array_get(parts, i)))
        return 0;
    while (j < n && proxy_call_kind(api, json_array_get(parts, j)) == 1)
        j++;
    return j > i + 1 && (j == n || proxy_is_reasoning(json_array_get(parts, j)));
}

static void count_calls(const proxy_api *api, proxy_turn *t)
{
    json_t *parts = proxy_turn_parts(api, t->doc), *p;
    size_t i;
    t->n_reacquire = t->n_other = 0;
    json_array_foreach(parts, i, p)
    {
        int k = proxy_call_kind(api, p);
        if (k == 1)
            t->n_reacquire++;
        else if (k == 0)
            t->n_other++;
    }
}

int proxy_turn_parse(const proxy_api *api, const char *body, size_t len, proxy_turn *t)
{
    t->doc = json_loadb(body, len, 0, NULL);
    if (!json_is_object(t->doc)) {
        proxy_turn_free(t);
        return -1;
    }
    count_calls(api, t);
    return 0;
}

void proxy_turn_free(proxy_turn *t)
{
    json_decref(t->doc);
    t->doc = NULL;
}

char *proxy_turn_without_reacquire(const proxy_api *api, const proxy_turn *t, size_t *len)
{
    json_t *copy = json_deep_copy(t->doc);
    json_t *parts = proxy_turn_parts(api, copy);
    for (size_t i = json_array_size(parts); i-- > 0;)
        if (proxy_call_kind(api, json_array_get(parts, i)) == 1 ||
            proxy_led_to_reacquire_alone(api, parts, i))
            json_array_remove(parts, i);
    char *out = copy ? json_dumps_plain(copy, JSON_COMPACT) : NULL;
    json_decref(copy);
    *len = out ? strlen(out) : 0;
    return out;
}

/* ---- Server-sent events ---- */

/* One event: its name (or NULL) and its data, NUL-terminated copies. */
typedef struct {
    char *name, *data;
} sse_event;

/* Splits an event stream into events (data lines joined with '\n'; a line
 * ends at CR, LF or CRLF, as proxy_live.c reads it). A new array of *n
 * events, or NULL when out of memory. */
static sse_event *sse_split(const char *s, size_t len, size_t *n)
{
    size_t cap = 16;
    sse_event *ev = calloc(cap, sizeof(*ev));
    sse_event cur = {0};
    size_t data_len = 0;
    *n = 0;
    for (size_t i = 0; ev && i <= len;) {
        size_t line_end = i + proxy_sse_line_len(s + i, len - i);
        int end = line_end < len;
        size_t ll = line_end - i, off;
        const char *line = s + i;
        if (ll == 0) { /* a blank line ends the event */
            if (cur.data) {
                if (*n == cap) {
                    sse_event *more = realloc(ev, 2 * cap * sizeof(*ev));
                    if (!more)
                        break;
                    ev = more;
                    cap *= 2;
                }
                ev[(*n)++] = cur;
            } else {
                free(cur.name);
            }
            cur = (sse_event){0};
            data_len = 0;
        } else if (proxy_sse_field(line, ll, "data", &off)) {
            char *d = realloc(cur.data, data_len + (ll - off) + 2);
            if (!d)
                break;
            if (data_len)
                d[data_len++] = '\n';
            memcpy(d + data_len, line + off, ll - off);
            data_len += ll - off;
            d[data_len] = '\0';
            cur.data = d;
        } else if (proxy_sse_field(line, ll, "event", &off)) {
            free(cur.name);
            cur.name = strndup(line + off, ll - off);
        }
        if (!end)
            break;
        i = line_end +
            (s[line_end] == '\r' && line_end + 1 < len && s[line_end + 1] == '\n' ? 2 : 1);
    }
    free(cur.name);
    free(cur.data);
    return ev;
}

static void sse_free(sse_event *ev, size_t n)
{
    for (size_t i = 0; ev && i < n; i++) {
        free(ev[i].name);
        free(ev[i].data);
    }
    free(ev);
}

/* Appends s to the string member name of o. */
static void append_string(json_t *o, const char *name, const char *s)
{
    const char *had = json_string_value(json_object_get(o, name));
    size_t a = had ? strlen(had) : 0, b = strlen(s);
    char *joined = malloc(a + b + 1);
    if (!joined)
        return;
    memcpy(joined, had ? had : "", a);
    memcpy(joined + a, s, b + 1);
    json_object_set_new(o, name, json_string(joined));
    free(joined);
}

/* ---- Building the answer back from its events ---- */

static void chat_chunk(json_t *doc, json_t *message, json_t *choice_out, json_t *chunk)
{
    if (json_is_object(json_object_get(chunk, "usage")))
        json_object_set(doc, "usage", json_object_get(chunk, "usage"));
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    json_t *delta = json_object_get(choice, "delta"), *calls = json_object_get(delta, "tool_calls");
    const char *text = json_string_value(json_object_get(delta, "content"));
    if (text)
        append_string(message, "content", text);
    json_t *finish = json_object_get(choice, "finish_reason");
    if (json_is_string(finish))
        json_object_set(choice_out, "finish_reason", finish);
    size_t i;
    json_t *c;
    json_t *out = json_object_get(message, "tool_calls");
    json_array_foreach(calls, i, c)
    {
        size_t at = (size_t)json_integer_value(json_object_get(c, "index"));
        while (json_array_size(out) <= at)
            json_array_append_new(out, json_pack("{ss s{ss ss}}", "type", "function", "function",
                                                 "name", "", "arguments", ""));
        json_t *have = json_array_get(out, at), *fn = json_object_get(c, "function");
        if (json_is_string(json_object_get(c, "id")))
            json_object_set(have, "id", json_object_get(c, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        if (name)
            append_string(json_object_get(have, "function"), "name", name);
        if (args)
            append_string(json_object_get(have, "function"), "arguments", args);
    }
}

static json_t *chat_from_events(sse_event *ev, size_t n)
{
    json_t *message =
        json_pack("{ss so s[]}", "role", "assistant", "content", json_null(), "tool_calls");
    json_t *choice = json_pack("{si sO}", "index", 0, "message", message);
    json_t *doc = json_pack("{ss s[O]}", "object", "chat.completion", "choices", choice);
    for (size_t i = 0; doc && i < n; i++) {
        json_t *chunk = json_loads(ev[i].data, 0, NULL);
        if (chunk)
            chat_chunk(doc, message, choice, chunk);
        json_decref(chunk);
    }
    if (json_array_size(json_object_get(message, "tool_calls")) == 0)
        json_object_del(message, "tool_calls");
    json_decref(message);
    json_decref(choice);
    return doc;
}

static void messages_delta(json_t *block, json_t *delta)
{
    const char *type = json_string_value(json_object_get(delta, "type"));
    static const struct {
        const char *delta, *field, *member;
    } deltas[] = {{"text_delta", "text", "text"},
                  {"thinking_delta", "thinking", "thinking"},
                  {"signature_delta", "signature", "signature"},
                  {"input_json_delta", "partial_json", "\x01partial"}};
    for (size_t k = 0; type && k < sizeof(deltas) / sizeof(deltas[0]); k++) {
        const char *s = json_string_value(json_object_get(delta, deltas[k].field));
        if (strcmp(type, deltas[k].delta) == 0 && s)
            append_string(block, deltas[k].member, s);
    }
}

static json_t *messages_from_events(sse_event *ev, size_t n)
{
    json_t *doc = NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_loads(ev[i].data, 0, NULL);
        const char *type = json_string_value(json_object_get(e, "type"));
        json_t *content = json_object_get(doc, "content");
        size_t at = (size_t)json_integer_value(json_object_get(e, "index"));
        if (!type) {
        } else if (strcmp(type, "message_start") == 0 && !doc) {
            doc = json_deep_copy(json_object_get(e, "message"));
            if (!json_is_array(json_object_get(doc, "content")))
                json_object_set_new(doc, "content", json_array());
        } else if (strcmp(type, "content_block_start") == 0 && content) {
            while (json_array_size(content) < at)
                json_array_append_new(content, json_object());
            json_array_insert_new(content, at, json_deep_copy(json_object_get(e, "content_block")));
        } else if (strcmp(type, "content_block_delta") == 0 && content) {
            messages_delta(json_array_get(content, at), json_object_get(e, "delta"));
        } else if (strcmp(type, "content_block_stop") == 0 && content) {
            json_t *b = json_array_get(content, at);
            const char *partial = json_string_value(json_object_get(b, "\x01partial"));
            if (partial) { /* a tool's input, streamed as JSON text */
                json_t *input = json_loads(partial, 0, NULL);
                json_object_set_new(b, "input", input ? input : json_object());
                json_object_del(b, "\x01partial");
            }
        } else if (strcmp(type, "message_delta") == 0 && doc) {
            json_object_update(doc, json_object_get(e, "delta"));
            /* Its counts are the message's so far: they replace the start's. */
            json_t *usage = json_object_get(doc, "usage");
            if (json_is_object(usage) && json_is_object(json_object_get(e, "usage")))
                json_object_update(usage, json_object_get(e, "usage"));
        }
        json_decref(e);
    }
    return doc;
}

static json_t *responses_from_events(sse_event *ev, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        json_t *e = json_loads(ev[i].data, 0, NULL);
        const char *type = json_string_value(json_object_get(e, "type"));
        if (type &&
            (strcmp(type, "response.completed") == 0 || strcmp(type, "response.incomplete") == 0)) {
            json_t *doc = json_incref(json_object_get(e, "response"));
            json_decref(e);
            return doc;
        }
        json_decref(e);
    }
    return NULL;
}

int proxy_turn_from_events(const proxy_api *api, const char *sse, size_t len, proxy_turn *t)
{
    size_t n;
    sse_event *ev = sse_split(sse, len, &n);
    if (!ev)
        return -1;
    t->doc = api->kind == PROXY_CHAT       ? chat_from_events(ev, n)
             : api->kind == PROXY_MESSAGES ? messages_from_events(ev, n)
                                           : responses_from_events(ev, n);
    sse_free(ev, n);
    if (!json_is_object(t->doc)) {
        proxy_turn_free(t);
        return -1;
    }
    count_calls(api, t);
    return 0;
}
