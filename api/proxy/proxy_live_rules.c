/* What each API's events become on a live stream (proxy_live.c): the
 * parts of a reacquire call dropped (OpenAI: a tool_calls delta of
 * reacquire and its argument deltas; Responses: the function_call item of
 * reacquire, its events, and a reasoning item that led to it and to no
 * item the client sees; Anthropic: the
 * tool_use block of reacquire and its input_json deltas), every other part
 * renumbered to follow what the client got before it, a later round's
 * opening events dropped (the client's answer began already) and each
 * round's closing events held until the round is known to be the last. */
#include "proxy_live.h"

#include <string.h>

static int is(const char *s, const char *want)
{
    return s && strcmp(s, want) == 0;
}

static int is_reacquire(const char *name)
{
    return is(name, "reacquire");
}

/* Sets member name of o to v (NULL leaves it): 1 when set. */
static int set_member(json_t *o, const char *name, json_t *v)
{
    return v && json_object_set(o, name, v) == 0;
}

/* ---- Chat Completions ---- */

/* The calls of a delta renumbered, reacquire's dropped (a call's name
 * comes whole in its first delta). 1 when changed. */
static int chat_calls(proxy_live *l, json_t *delta)
{
    json_t *calls = json_object_get(delta, "tool_calls");
    size_t had = json_array_size(calls);
    int changed = 0;
    for (size_t i = had; i-- > 0;) {
        json_t *c = json_array_get(calls, i);
        int64_t at = json_integer_value(json_object_get(c, "index")), to = live_part(l, at);
        if (to == PART_NEW) {
            json_t *fn = json_object_get(c, "function");
            to = is_reacquire(json_string_value(json_object_get(fn, "name"))) ? PART_DROPPED
                                                                              : l->next_part++;
            live_part_set(l, at, to);
        }
        if (to == PART_DROPPED) {
            json_array_remove(calls, i);
            changed = 1;
        } else if (to != at) {
            json_object_set_new(c, "index", json_integer(to));
            changed = 1;
        }
    }
    if (had && json_array_size(calls) == 0)
        json_object_del(delta, "tool_calls");
    return changed;
}

/* A later round's chunk as part of the first's completion: its id and
 * time, and no second role. 1 when changed. */
static int chat_one_completion(proxy_live *l, json_t *e)
{
    if (l->round == 1) {
        if (!json_object_get(l->first, "id")) {
            set_member(l->first, "id", json_object_get(e, "id"));
            set_member(l->first, "created", json_object_get(e, "created"));
        }
        return 0;
    }
    set_member(e, "id", json_object_get(l->first, "id"));
    set_member(e, "created", json_object_get(l->first, "created"));
    json_t *choice = json_array_get(json_object_get(e, "choices"), 0);
    json_object_del(json_object_get(choice, "delta"), "role");
    return 1;
}

static void chat_rule(proxy_live *l, live_event *ev)
{
    json_t *e = ev->e, *choices = json_object_get(e, "choices");
    if (!e) { /* [DONE] ends the round; what is not JSON goes as it is */
        if (live_is_done(ev))
            live_hold(l, ev, 0);
        else
            live_emit(l, ev, 0);
        return;
    }
    if (!json_is_array(choices)) { /* an error */
        live_emit(l, ev, 0);
        return;
    }
    if (l->closing) {
        live_hold(l, ev, 0);
        return;
    }
    int changed = chat_one_completion(l, e);
    json_t *choice = json_array_get(choices, 0), *delta = json_object_get(choice, "delta");
    if (!choice) { /* the usage chunk (stream_options.include_usage) closes */
        if (json_is_object(json_object_get(e, "usage")))
            live_hold(l, ev, changed);
        else
            live_emit(l, ev, changed);
        return;
    }
    int had_calls = json_object_get(delta, "tool_calls") != NULL;
    changed |= chat_calls(l, delta);
    json_t *finish = json_object_get(choice, "finish_reason");
    if (finish && !json_is_null(finish)) {
        if (json_object_size(delta) > 0) { /* its delta goes now, its end with the round's */
            json_t *now = json_deep_copy(e);
            json_object_set_new(json_array_get(json_object_get(now, "choices"), 0), "finish_reason",
                                json_null());
            live_event part = {ev->name, now, ev->raw, ev->raw_len};
            if (now)
                live_emit(l, &part, 1);
            json_decref(now);
            json_object_clear(delta);
            changed = 1;
        }
        live_hold(l, ev, changed);
        return;
    }
    if (had_calls && json_object_size(delta) == 0)
        return; /* it carried reacquire's parts only */
    live_emit(l, ev, changed);
}

static int chat_closing(proxy_live *l, json_t *e, const json_t *usage)
{
    int changed = chat_one_completion(l, e);
    if (usage && json_is_object(json_object_get(e, "usage")))
        changed |= set_member(e, "usage", (json_t *)usage);
    return changed;
}

/* ---- Anthropic Messages ---- */

static void messages_rule(proxy_live *l, live_event *ev)
{
    json_t *e = ev->e, *index = json_object_get(e, "index");
    const char *type = json_string_value(json_object_get(e, "type"));
    if (!type || is(type, "error") || is(type, "ping")) {
        live_emit(l, ev, 0);
    } else if (l->closing || is(type, "message_delta") || is(type, "message_stop")) {
        live_hold(l, ev, 0);
    } else if (is(type, "message_start")) {
        if (l->round == 1) /* one message, however many rounds */
            live_emit(l, ev, 0);
    } else if (!json_is_integer(index)) {
        live_emit(l, ev, 0);
    } else {
        int64_t at = json_integer_value(index), to = live_part(l, at);
        if (to == PART_NEW && is(type, "content_block_start")) {
            json_t *b = json_object_get(e, "content_block");
            to = is(json_string_value(json_object_get(b, "type")), "tool_use") &&
                         is_reacquire(json_string_value(json_object_get(b, "name")))
                     ? PART_DROPPED
                     : l->next_part++;
            live_part_set(l, at, to);
        }
        if (to == PART_DROPPED)
            return;
        if (to == PART_NEW) { /* a block that never started: as it came */
            live_emit(l, ev, 0);
            return;
        }
        if (to != at)
            json_object_set_new(e, "index", json_integer(to));
        live_emit(l, ev, to != at);
    }
}

static int messages_closing(json_t *e, const json_t *usage)
{
    const char *type = json_string_value(json_object_get(e, "type"));
    return usage && is(type, "message_delta") && set_member(e, "usage", (json_t *)usage);
}

/* ---- OpenAI Responses ---- */

static int lifecycle(const char *type)
{
    return is(type, "response.created") || is(type, "response.queued") ||
           is(type, "response.in_progress");
}

static int response_end(const char *type)
{
    return is(type, "response.completed") || is(type, "response.incomplete") ||
           is(type, "response.failed");
}

void live_item_event(proxy_live *l, live_event *ev, int64_t to, int changed)
{
    json_t *index = json_object_get(ev->e, "output_index");
    if (json_integer_value(index) != to) {
        json_object_set_new(ev->e, "output_index", json_integer(to));
        changed = 1;
    }
    live_emit(l, ev, changed);
}

/* The first event of output item at: where it goes, or PART_DROPPED or
 * PART_HELD. */
static int64_t responses_item_added(proxy_live *l, json_t *e, int64_t at)
{
    json_t *item = json_object_get(e, "item");
    const char *type = json_string_value(json_object_get(item, "type"));
    if (is(type, "function_call") &&
        is_reacquire(json_string_value(json_object_get(item, "name")))) {
        l->reasoning_led_to_reacquire = l->reasoning != NULL;
        live_part_set(l, at, PART_DROPPED);
        return PART_DROPPED;
    }
    if (is(type, "reasoning")) { /* one that led only to reacquire goes */
        live_release_reasoning(l, !l->reasoning_led_to_reacquire);
        return PART_HELD;
    }
    live_release_reasoning(l, 1); /* it leads to this item */
    int64_t to = l->next_part++;
    live_part_set(l, at, to);
    return to;
}

static void responses_rule(proxy_live *l, live_event *ev)
{
    json_t *e = ev->e, *index = json_object_get(e, "output_index");
    const char *type = json_string_value(json_object_get(e, "type"));
    if (!type || is(type, "error")) {
        live_emit(l, ev, 0);
    } else if (l->closing || response_end(type)) {
        live_hold(l, ev, 0);
    } else if (lifecycle(type)) {
        if (l->round > 1)
            return; /* the client's response was created in the first round */
        if (!json_object_get(l->first, "id"))
            set_member(l->first, "id", json_object_get(json_object_get(e, "response"), "id"));
        live_emit(l, ev, 0);
    } else if (!json_is_integer(index)) {
        live_emit(l, ev, 0);
    } else {
        int64_t at = json_integer_value(index), to = live_part(l, at);
        if (to == PART_NEW && is(type, "response.output_item.added"))
            to = responses_item_added(l, e, at);
        if (to == PART_HELD)
            live_hold_reasoning(l, ev, at);
        else if (to == PART_NEW) /* an item that never began: as it came */
            live_emit(l, ev, 0);
        else if (to != PART_DROPPED)
            live_item_event(l, ev, to, 0);
    }
}

/* The items of a round's final output the client got, appended to out. */
static void items_got(proxy_live *l, json_t *output, json_t *out)
{
    size_t i;
    json_t *item;
    json_array_foreach(output, i, item)
    {
        int64_t to = live_part(l, (int64_t)i);
        const char *type = json_string_value(json_object_get(item, "type"));
        int reacquire = is(type, "function_call") &&
                        is_reacquire(json_string_value(json_object_get(item, "name")));
        if (to >= 0 || (to == PART_NEW && !reacquire))
            json_array_append(out, item);
    }
}

static int responses_closing(proxy_live *l, json_t *e, const json_t *usage)
{
    json_t *response = json_object_get(e, "response");
    if (!response_end(json_string_value(json_object_get(e, "type"))) || !json_is_object(response))
        return 0;
    json_t *output = json_deep_copy(l->items);
    items_got(l, json_object_get(response, "output"), output);
    json_object_set_new(response, "output", output);
    set_member(response, "id", json_object_get(l->first, "id"));
    if (usage)
        set_member(response, "usage", (json_t *)usage);
    return 1;
}

void live_keep_items(proxy_live *l, json_t *h)
{
    json_t *e = json_array_get(h, 1), *response = json_object_get(e, "response");
    if (l->api->kind == PROXY_RESPONSES &&
        response_end(json_string_value(json_object_get(e, "type"))))
        items_got(l, json_object_get(response, "output"), l->items);
}

/* ---- Each API's ---- */

void live_rule(proxy_live *l, live_event *ev)
{
    switch (l->api->kind) {
    case PROXY_CHAT:
        chat_rule(l, ev);
        break;
    case PROXY_MESSAGES:
        messages_rule(l, ev);
        break;
    case PROXY_RESPONSES:
    default:
        responses_rule(l, ev);
    }
}

int live_rewrite_closing(proxy_live *l, json_t *e, const json_t *usage)
{
    switch (l->api->kind) {
    case PROXY_CHAT:
        return chat_closing(l, e, usage);
    case PROXY_MESSAGES:
        return messages_closing(e, usage);
    case PROXY_RESPONSES:
    default:
        return responses_closing(l, e, usage);
    }
}

/* ---- Responses: reasoning held for what follows it ---- */

void live_hold_reasoning(proxy_live *l, const live_event *ev, int64_t at)
{
    if (!l->reasoning) {
        l->reasoning = json_array();
        l->reasoning_at = at;
        live_part_set(l, at, PART_HELD);
    }
    if (!l->reasoning || json_array_append_new(l->reasoning, live_held_event(ev, 0)) != 0)
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
        live_event ev = live_from_held(h);
        live_item_event(l, &ev, to, 0);
    }
    json_decref(l->reasoning);
    l->reasoning = NULL;
    l->reasoning_at = -1;
    l->reasoning_led_to_reacquire = 0;
}
