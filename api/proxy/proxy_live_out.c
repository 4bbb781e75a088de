/* The client's side of a streamed answer relayed live (proxy_live.c): what
 * each part of a round became, and events written to the client's stream,
 * or spooled while it is not open yet, or held for the round's end. */
#include "proxy_live.h"

#include <stdlib.h>
#include <string.h>

/* What an index of a part may be: past it the upstream is not one. */
#define PARTS_MAX 65536

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
 * sent, whether the data was changed]. The name and the data as sent are
 * bytes, whatever they hold (not UTF-8, say): they go back out as they
 * came (live_from_held()), never written as JSON. */
json_t *live_held_event(const live_event *ev, int changed)
{
    json_t *name = ev->name ? json_stringn_nocheck(ev->name, strlen(ev->name)) : json_null();
    json_t *raw = json_stringn_nocheck(ev->raw, ev->raw_len);
    if (!name || !raw) {
        json_decref(name);
        json_decref(raw);
        return NULL;
    }
    return json_pack("[oO?ob]", name, ev->e, raw, changed);
}

int live_is_done(const live_event *ev)
{
    return ev->raw_len == 6 && memcmp(ev->raw, "[DONE]", 6) == 0;
}

live_event live_from_held(json_t *h)
{
    json_t *e = json_array_get(h, 1), *raw = json_array_get(h, 2);
    return (live_event){json_string_value(json_array_get(h, 0)), json_is_null(e) ? NULL : e,
                        json_string_value(raw), json_string_length(raw)};
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
    jw_init(&w, 256 + (changed ? 0 : ev->raw_len));
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
        data_lines(&w, ev->raw, ev->raw_len);
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
    if (json_array_append_new(l->held, live_held_event(ev, changed)) != 0)
        l->broken = 1;
}
