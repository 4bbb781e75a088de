/* A streamed answer relayed live across reacquire rounds: the upstream's
 * bytes read into events as they come, each event relayed, rewritten,
 * held or dropped by its API's rules (proxy_live_rules.c), and written to
 * the client's stream at once. */
#include "proxy_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What an index of a part may be: past it the upstream is not one. */
#define PARTS_MAX 65536

void proxy_live_init(proxy_live *l, const proxy_api *api)
{
    memset(l, 0, sizeof(*l));
    l->api = api;
    l->round = 1;
    l->reasoning_at = -1;
    jw_init(&l->line, 256);
    jw_init(&l->data, 1024);
    jw_init(&l->record, 16384);
    jw_init(&l->spool, 0);
    l->held = json_array();
    l->items = json_array();
    l->first = json_object();
    if (!l->held || !l->items || !l->first)
        l->broken = 1;
}

void proxy_live_free(proxy_live *l)
{
    jw_discard(&l->line);
    jw_discard(&l->data);
    jw_discard(&l->record);
    jw_discard(&l->spool);
    free(l->name);
    free(l->map);
    json_decref(l->held);
    json_decref(l->reasoning);
    json_decref(l->first);
    json_decref(l->items);
    memset(l, 0, sizeof(*l));
}

char *proxy_live_spooled(proxy_live *l, size_t *len)
{
    if (l->out || l->spool.oom)
        return NULL;
    char *s = jw_finish(&l->spool, len);
    jw_init(&l->spool, 0);
    return s;
}

const char *proxy_live_record(const proxy_live *l, size_t *len)
{
    *len = l->record.len;
    return l->record.buf ? l->record.buf : "";
}

/* ---- Parts ---- */

int64_t live_part(const proxy_live *l, int64_t at)
{
    return at >= 0 && (size_t)at < l->n_map ? l->map[at] : PART_NEW;
}

void live_part_set(proxy_live *l, int64_t at, int64_t to)
{
    if (at < 0 || at >= PARTS_MAX) {
        l->broken = 1;
        return;
    }
    if ((size_t)at >= l->n_map) {
        size_t n = (size_t)at + 16;
        int64_t *more = realloc(l->map, n * sizeof(*more));
        if (!more) {
            l->broken = 1;
            return;
        }
        for (size_t i = l->n_map; i < n; i++)
            more[i] = PART_NEW;
        l->map = more;
        l->n_map = n;
    }
    l->map[at] = to;
    if (to == PART_DROPPED)
        l->altered = 1;
}

/* ---- Writing ---- */

static int dump_into(const char *buffer, size_t size, void *data)
{
    jw_append(data, buffer, size);
    return 0;
}

/* Appends data as data lines (one per line of it). */
static void data_lines(jw *w, const char *s, size_t len)
{
    for (;;) {
        const char *nl = memchr(s, '\n', len);
        size_t n = nl ? (size_t)(nl - s) : len;
        jw_append(w, "data: ", 6);
        jw_append(w, s, n);
        jw_append(w, "\n", 1);
        if (!nl)
            break;
        s += n + 1;
        len -= n + 1;
    }
}

/* An event as it is held: [name or null, data parsed or null, data as
 * sent, whether the data was changed]. */
static json_t *held_event(const live_event *ev, int changed)
{
    return json_pack("[s?O?sb]", ev->name, ev->e, ev->raw, changed);
}

static live_event from_held(json_t *h)
{
    json_t *e = json_array_get(h, 1);
    return (live_event){json_string_value(json_array_get(h, 0)), json_is_null(e) ? NULL : e,
                        json_string_value(json_array_get(h, 2))};
}

void live_emit(proxy_live *l, const live_event *ev, int changed)
{
    if (l->broken)
        return;
    json_t *seq = json_object_get(ev->e, "sequence_number");
    if (l->api->kind == PROXY_RESPONSES && json_is_integer(seq)) {
        if (json_integer_value(seq) != l->seq) {
            json_object_set_new(ev->e, "sequence_number", json_integer(l->seq));
            changed = 1;
        }
        l->seq++;
    }
    jw w;
    jw_init(&w, 256 + (changed ? 0 : strlen(ev->raw)));
    if (ev->name) {
        jw_append(&w, "event: ", 7);
        jw_append(&w, ev->name, strlen(ev->name));
        jw_append(&w, "\n", 1);
    }
    if (changed && ev->e) {
        jw_append(&w, "data: ", 6);
        json_dump_callback(ev->e, dump_into, &w, JSON_COMPACT);
        jw_append(&w, "\n", 1);
    } else {
        data_lines(&w, ev->raw, strlen(ev->raw));
    }
    jw_append(&w, "\n", 1);
    if (w.oom)
        l->broken = 1;
    else if (!l->out)
        jw_append(&l->spool, w.buf, w.len);
    else if (api_stream_write(l->out, w.buf, w.len) != 0)
        l->broken = 1;
    if (l->spool.oom && !l->out)
        l->broken = 1;
    jw_discard(&w);
}

void live_hold(proxy_live *l, const live_event *ev, int changed)
{
    l->closing = 1;
    if (json_array_append_new(l->held, held_event(ev, changed)) != 0)
        l->broken = 1;
}

/* ---- Responses: reasoning held for what follows it ---- */

void live_hold_reasoning(proxy_live *l, const live_event *ev, int64_t at)
{
    if (!l->reasoning) {
        l->reasoning = json_array();
        l->reasoning_at = at;
        live_part_set(l, at, PART_HELD);
    }
    if (!l->reasoning || json_array_append_new(l->reasoning, held_event(ev, 0)) != 0)
        l->broken = 1;
}

void live_release_reasoning(proxy_live *l, int keep)
{
    if (!l->reasoning)
        return;
    int64_t to = keep ? l->next_part++ : PART_DROPPED;
    live_part_set(l, l->reasoning_at, to);
    size_t i;
    json_t *h;
    json_array_foreach(l->reasoning, i, h) if (keep)
    {
        live_event ev = from_held(h);
        live_item_event(l, &ev, to, 0);
    }
    json_decref(l->reasoning);
    l->reasoning = NULL;
    l->reasoning_at = -1;
    l->reasoning_led_to_reacquire = 0;
}

/* ---- Reading ---- */

/* One whole event: its data parsed, and its API's rule applied. */
static void dispatch(proxy_live *l)
{
    if (l->has_data)
        jw_append(&l->data, "", 1); /* a NUL after the text, not counted */
    if (l->has_data && !l->data.oom) {
        l->data.len--;
        live_event ev = {l->name, NULL, l->data.buf};
        if (strcmp(ev.raw, "[DONE]") != 0)
            ev.e = json_loadb(l->data.buf, l->data.len, 0, NULL);
        live_rule(l, &ev);
        json_decref(ev.e);
    } else if (l->data.oom) {
        l->broken = 1;
    }
    free(l->name);
    l->name = NULL;
    l->has_data = 0;
    l->data.len = 0;
}

/* One line of the event stream (without its end). */
static void read_line(proxy_live *l, const char *s, size_t n)
{
    if (n && s[n - 1] == '\r')
        n--;
    if (n == 0) {
        dispatch(l);
    } else if (n >= 5 && memcmp(s, "data:", 5) == 0) {
        size_t off = n > 5 && s[5] == ' ' ? 6 : 5;
        if (l->has_data)
            jw_append(&l->data, "\n", 1);
        jw_append(&l->data, s + off, n - off);
        l->has_data = 1;
    } else if (n >= 6 && memcmp(s, "event:", 6) == 0) {
        size_t off = n > 6 && s[6] == ' ' ? 7 : 6;
        free(l->name);
        l->name = strndup(s + off, n - off);
        if (!l->name)
            l->broken = 1;
    }
    /* Comments, id: and retry: lines: nothing a client of these APIs reads. */
}

int proxy_live_feed(proxy_live *l, const char *data, size_t len)
{
    jw_append(&l->record, data, len);
    if (l->record.oom)
        l->broken = 1;
    while (len > 0 && !l->broken) {
        const char *nl = memchr(data, '\n', len);
        if (!nl) {
            jw_append(&l->line, data, len);
            break;
        }
        size_t n = (size_t)(nl - data);
        if (l->line.len > 0) {
            jw_append(&l->line, data, n);
            read_line(l, l->line.buf, l->line.len);
            l->line.len = 0;
        } else {
            read_line(l, data, n);
        }
        data += n + 1;
        len -= n + 1;
    }
    if (l->line.oom)
        l->broken = 1;
    return l->broken ? -1 : 0;
}

/* ---- Rounds ---- */

/* The end of a round's bytes: an event the upstream did not end with a
 * blank line is read all the same. */
static void round_over(proxy_live *l)
{
    if (l->line.len > 0)
        read_line(l, l->line.buf, l->line.len);
    l->line.len = 0;
    dispatch(l);
}

void proxy_live_next_round(proxy_live *l)
{
    round_over(l);
    live_release_reasoning(l, 0);
    size_t i;
    json_t *h;
    json_array_foreach(l->held, i, h) live_keep_items(l, h);
    json_array_clear(l->held);
    free(l->map);
    l->map = NULL;
    l->n_map = 0;
    l->closing = 0;
    l->record.len = 0;
    l->altered = 1;
    l->round++;
}

int proxy_live_finish(proxy_live *l, const json_t *usage)
{
    round_over(l);
    live_release_reasoning(l, !l->reasoning_led_to_reacquire);
    size_t i;
    json_t *h;
    json_array_foreach(l->held, i, h)
    {
        live_event ev = from_held(h);
        int changed = json_is_true(json_array_get(h, 3));
        if (l->altered && ev.e)
            changed |= live_rewrite_closing(l, ev.e, usage);
        live_emit(l, &ev, changed);
    }
    json_array_clear(l->held);
    return l->broken ? -1 : 0;
}

/* ---- Errors ---- */

void proxy_live_error(proxy_live *l, int status, const char *body, size_t len)
{
    /* Memory for the round may have run out: the client can still be told. */
    l->broken = 0;
    json_t *doc = json_loadb(body, len, 0, NULL), *e = json_object_get(doc, "error"), *data;
    char message[160];
    if (!json_is_object(e)) {
        snprintf(message, sizeof(message),
                 "the upstream answered %d with a body that is not the provider's error", status);
        e = json_pack("{ss ss s? ss}", "message", message, "type", "api_error", "param", NULL,
                      "code", "upstream_error");
    } else {
        json_incref(e);
    }
    if (l->api->kind == PROXY_CHAT) {
        data = json_pack("{sO}", "error", e);
    } else if (l->api->kind == PROXY_MESSAGES) {
        data = json_pack("{ss sO}", "type", "error", "error", e);
    } else { /* Responses: the error's members are the event's own */
        data = json_pack("{ss sI}", "type", "error", "sequence_number", (json_int_t)l->seq);
        static const char *const members[] = {"code", "message", "param"};
        for (size_t k = 0; data && k < 3; k++) {
            json_t *v = json_object_get(e, members[k]);
            json_object_set(data, members[k], v ? v : json_null());
        }
    }
    live_event ev = {l->api->kind == PROXY_CHAT ? NULL : "error", data, ""};
    if (data)
        live_emit(l, &ev, 1);
    json_decref(data);
    json_decref(e);
    json_decref(doc);
}
