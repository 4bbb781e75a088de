/* A streamed answer relayed live across reacquire rounds: the upstream's
 * bytes read into events as they come, each event relayed, rewritten,
 * held or dropped by its API's rules (proxy_live_rules.c), and written to
 * the client's stream at once. */
#include "proxy_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- Reading ---- */

/* One whole event: its data parsed, and its API's rule applied. */
static void dispatch(proxy_live *l)
{
    if (l->has_data)
        jw_append(&l->data, "", 1); /* a NUL after the text, not counted */
    if (l->has_data && !l->data.oom) {
        l->data.len--;
        live_event ev = {l->name, NULL, l->data.buf, l->data.len};
        if (!live_is_done(&ev))
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
    size_t off;
    if (n == 0) {
        dispatch(l);
    } else if (proxy_sse_field(s, n, "data", &off)) {
        if (l->has_data)
            jw_append(&l->data, "\n", 1);
        jw_append(&l->data, s + off, n - off);
        l->has_data = 1;
    } else if (proxy_sse_field(s, n, "event", &off)) {
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
    /* A line ends at CR, LF or CRLF, as the clients' readers end it (the
     * SSE specification), a CRLF cut between two pieces included. */
    size_t skip = len > 0 && l->after_cr && data[0] == '\n';
    if (len > 0)
        l->after_cr = 0;
    data += skip;
    len -= skip;
    while (len > 0 && !l->broken) {
        size_t n = proxy_sse_line_len(data, len), end = 1;
        if (n == len) {
            jw_append(&l->line, data, len);
            break;
        }
        if (data[n] == '\r' && n + 1 == len)
            l->after_cr = 1;
        else if (data[n] == '\r' && data[n + 1] == '\n')
            end = 2;
        if (l->line.len > 0) {
            jw_append(&l->line, data, n);
            read_line(l, l->line.buf, l->line.len);
            l->line.len = 0;
        } else {
            read_line(l, data, n);
        }
        data += n + end;
        len -= n + end;
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
    l->after_cr = 0;
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
        live_event ev = live_from_held(h);
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
    live_event ev = {l->api->kind == PROXY_CHAT ? NULL : "error", data, "", 0};
    if (data)
        live_emit(l, &ev, 1);
    json_decref(data);
    json_decref(e);
    json_decref(doc);
}
