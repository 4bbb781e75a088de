/* A streamed answer relayed to the client as its events arrive, across the
 * rounds of reacquire calls the proxy answers itself: what belongs to a
 * reacquire call is held back, each round's closing events are held until
 * the round is known to be the last, and the next round's events continue
 * the same stream, renumbered, so that the client reads one answer as the
 * provider would have streamed it (docs/proxy.md, Streaming). Only
 * api/proxy/ includes it. */
#ifndef COMPACTD_PROXY_LIVE_H
#define COMPACTD_PROXY_LIVE_H

#include "proxy_internal.h"

typedef struct {
    const proxy_api *api;
    int opened;      /* the client's answer began (the first round's head) */
    api_stream *out; /* its stream; NULL when none could be had: */
    jw spool;        /* then its events, answered whole at the end */
    int round;       /* the round whose events come: 1 for the first */
    /* The event being read: the bytes of its line not ended yet, its name
     * and its data lines joined. */
    jw line, data;
    char *name;
    int has_data;
    int after_cr; /* the last line ended with a CR: a LF next is its end too */
    jw record; /* the round's bytes as they came, for its turn at its end */
    /* What each part of the round (a call, a content block, an output item,
     * by its index there) became for the client: its index, or one of
     * PART_* below. */
    int64_t *map;
    size_t n_map;
    int64_t next_part; /* the client's next part index */
    int64_t seq;       /* Responses: the client's next sequence_number */
    int closing;       /* the round's closing events began: held from there */
    json_t *held;      /* those events, in order */
    /* Responses: the events of a reasoning item, held until an item the
     * client sees follows it (a reacquire call between them goes), or none
     * does (it goes too: the API refuses a reasoning item given back
     * without the item it led to). */
    json_t *reasoning;
    int64_t reasoning_at;
    int reasoning_led_to_reacquire;
    json_t *first; /* what names the answer, from the first round: its id */
    json_t *items; /* Responses: the items the client got in earlier rounds */
    int altered;   /* a part was held back, or a round went on */
    int broken;    /* the client went, or memory ran out */
} proxy_live;

void proxy_live_init(proxy_live *l, const proxy_api *api);
void proxy_live_free(proxy_live *l);

/* Reads the upstream's bytes, relaying each whole event as the rules
 * above say. 0, or -1 when the call should stop (the client went, memory
 * ran out). */
int proxy_live_feed(proxy_live *l, const char *data, size_t len);

/* The events the client got, when they went to the spool (a new
 * string), or NULL. */
char *proxy_live_spooled(proxy_live *l, size_t *len);

/* The round's bytes as they came. */
const char *proxy_live_record(const proxy_live *l, size_t *len);

/* The round called reacquire only, and the next one follows: its closing
 * events are dropped, with a reasoning item still held. */
void proxy_live_next_round(proxy_live *l);

/* The round was the last: writes its closing events, with usage (every
 * round's, when there were several; NULL leaves the upstream's) and, for
 * Responses, the output as the client got it. 0, or -1 when the client
 * went. */
int proxy_live_finish(proxy_live *l, const json_t *usage);

/* Ends the stream with an error, the provider-shaped error body (len
 * bytes; compactd's or the upstream's, status its status) written as the
 * provider writes an error in a stream, which its SDK raises. broken says
 * afterwards whether it could not be written. */
void proxy_live_error(proxy_live *l, int status, const char *body, size_t len);

/* ---- Between proxy_live.c, the rules of each API (proxy_live_rules.c) and
 * the client's side (proxy_live_out.c) ---- */

/* What a part of a round became besides an index of the client's. */
enum { PART_NEW = -1, PART_DROPPED = -2, PART_HELD = -3 };

/* An event as read: its name (or NULL), its data parsed (NULL when it is
 * not JSON: "[DONE]") and as sent (raw_len bytes, NUL bytes and all). */
typedef struct {
    const char *name;
    json_t *e;
    const char *raw;
    size_t raw_len;
} live_event;

/* 1 when ev's data is Chat Completions' "[DONE]", exactly. */
int live_is_done(const live_event *ev);

/* Applies ev's API's rule to a fresh event: relayed (rewritten or not),
 * held, or dropped. */
void live_rule(proxy_live *l, live_event *ev);
/* Writes ev to the client: its data rewritten when changed, as sent when
 * not (a Responses sequence_number is always the client's next). */
void live_emit(proxy_live *l, const live_event *ev, int changed);
/* Holds ev among the round's closing events (its data changed or not). */
void live_hold(proxy_live *l, const live_event *ev, int changed);
/* An event as it is held: [name or null, data parsed or null, data as
 * sent, whether the data was changed]; and read back. */
json_t *live_held_event(const live_event *ev, int changed);
live_event live_from_held(json_t *h);

/* What part at of the round became (PART_NEW when not seen yet), and
 * recording it. */
int64_t live_part(const proxy_live *l, int64_t at);
void live_part_set(proxy_live *l, int64_t at, int64_t to);

/* Responses: holds ev of the reasoning item at (above); releasing it
 * relays its events (keep) or drops them. */
void live_hold_reasoning(proxy_live *l, const live_event *ev, int64_t at);
void live_release_reasoning(proxy_live *l, int keep);
/* Responses: relays ev of the output item the client sees at index to. */
void live_item_event(proxy_live *l, live_event *ev, int64_t to, int changed);

/* The last round's closing event e rewritten for the answer the client
 * got (its usage, its id, its output). 1 when changed. */
int live_rewrite_closing(proxy_live *l, json_t *e, const json_t *usage);
/* Keeps from a closing event h of a round that goes on what the client got
 * of it (Responses: its output items). */
void live_keep_items(proxy_live *l, json_t *h);

#endif
