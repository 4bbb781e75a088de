/* Message classification: defaults, policy, annotations, then the group
 * rule. See chat_classify.h. */
#include "chat_classify.h"

#include "bytemap.h"
#include "chat_own.h"
#include "chat_tools.h"

#include <stdlib.h>
#include <string.h>

const char *chat_role_name(chat_role r)
{
    switch (r) {
    case ROLE_SYSTEM:
        return "system";
    case ROLE_DEVELOPER:
        return "developer";
    case ROLE_USER:
        return "user";
    case ROLE_ASSISTANT:
        return "assistant";
    case ROLE_TOOL:
        return "tool";
    }
    return "unknown";
}

/* ---- Exchanges ---- */

/* A message that answers calls belongs to the exchange opened by the last
 * message that made calls; the decoders have checked that it answers only
 * those. A message of the same turn as the one before it (same_turn) joins
 * that one's exchange, which opens at the turn's first message. Stale
 * reasoning (chat.h) belongs to none: the items around it link across it,
 * as they would were it not sent. */
static void find_exchanges(const chat_request *req, size_t *owner)
{
    size_t open = SIZE_MAX, prev = SIZE_MAX;
    int linked = 1; /* the stale messages since prev continued its turn */
    for (size_t i = 0; i < req->n; i++) {
        const chat_message *m = &req->m[i];
        owner[i] = SIZE_MAX;
        if (m->stale) {
            linked &= m->same_turn;
            continue;
        }
        int same = m->same_turn && linked && prev != SIZE_MAX;
        linked = 1;
        size_t before = prev;
        prev = i;
        if (same && m->n_answers == 0 && req->m[before].n_answers == 0) {
            size_t first = owner[before] != SIZE_MAX ? owner[before] : before;
            owner[before] = owner[i] = first;
            if (m->n_calls > 0 || open == first)
                open = first;
            continue;
        }
        if (m->n_calls > 0) {
            open = i;
            owner[i] = i;
        } else if (m->n_answers > 0 && open != SIZE_MAX) {
            owner[i] = open;
        } else {
            open = SIZE_MAX;
        }
    }
}

/* A call is identified by its tool and its arguments: "name\0args". */
static size_t call_identity(const chat_call *c, char *out)
{
    memcpy(out, c->name.s, c->name.len);
    out[c->name.len] = '\0';
    memcpy(out + c->name.len + 1, c->args.s, c->args.len);
    return c->name.len + 1 + c->args.len;
}

/* Marks superseded[i] for each exchange whose every call is repeated,
 * same tool and same arguments, by a later exchange. A pointer message's
 * calls carry the pointer, not their arguments: they are left out. Returns
 * 0 or -1. */
static int find_superseded(const chat_request *req, const unsigned char *own,
                           unsigned char *superseded)
{
    size_t ncalls = 0, bytes = 0;
    for (size_t i = 0; i < req->n; i++)
        for (size_t k = 0; own[i] != CHAT_OWN_POINTER && k < req->m[i].n_calls; k++) {
            ncalls++;
            bytes += req->m[i].calls[k].name.len + 1 + req->m[i].calls[k].args.len;
        }
    if (ncalls == 0)
        return 0;
    char *ids = malloc(bytes);
    size_t *off = malloc(ncalls * sizeof(*off));
    bytemap last = {0};
    int rc = -1;
    if (!ids || !off || bytemap_init(&last, ncalls) != 0)
        goto done;

    /* Each identity maps to the last exchange that made it. */
    size_t c = 0, at = 0;
    for (size_t i = 0; i < req->n; i++)
        for (size_t k = 0; own[i] != CHAT_OWN_POINTER && k < req->m[i].n_calls; k++, c++) {
            size_t len = call_identity(&req->m[i].calls[k], ids + at);
            off[c] = at;
            size_t *seen = bytemap_put_new(&last, ids + at, len, i);
            if (seen)
                *seen = i;
            at += len;
        }
    c = 0;
    for (size_t i = 0; i < req->n; i++) {
        const chat_message *m = &req->m[i];
        int all_later = m->n_calls > 0 && own[i] != CHAT_OWN_POINTER;
        for (size_t k = 0; own[i] != CHAT_OWN_POINTER && k < m->n_calls; k++, c++) {
            size_t len = m->calls[k].name.len + 1 + m->calls[k].args.len;
            size_t *lastx = bytemap_get(&last, ids + off[c], len);
            all_later &= lastx && *lastx > i;
        }
        superseded[i] = (unsigned char)all_later;
    }
    rc = 0;
done:
    bytemap_free(&last);
    free(ids);
    free(off);
    return rc;
}

/* ---- Hints ---- */

/* How many bytes of s to keep within max, cut on a character boundary. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

/* Room for both lists: a call goes in one of them, "; name args..." or
 * "; name (id)"; room for both is simpler and still small. */
static size_t hint_bytes(const chat_message *m)
{
    size_t n = 0;
    for (size_t k = 0; k < m->n_calls; k++)
        n += (2 + m->calls[k].name.len + 1 + CHAT_HINT_ARGS_MAX + 3) +
             (2 + m->calls[k].name.len + 2 + m->calls[k].id.len + 1);
    return n + 4; /* and "; " before each list in its turn's */
}

static int read_only(const chat_request *req, const chat_call *c)
{
    return chat_tools_has(&req->policy.read_only_tools, c->name) &&
           !chat_tools_has(&req->policy.protect_tools, c->name);
}

static char *put(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

/* "name args; name args", the read-only calls an exchange would make again:
 * only a call that is safe to repeat is ever offered as a way back. */
static size_t write_hint(const chat_request *req, const chat_message *m, char *out)
{
    char *p = out;
    for (size_t k = 0; k < m->n_calls; k++) {
        const chat_call *c = &m->calls[k];
        if (!read_only(req, c))
            continue;
        if (p > out)
            p = put(p, "; ", 2);
        p = put(p, c->name.s, c->name.len);
        *p++ = ' ';
        size_t keep = utf8_cut(c->args.s, c->args.len, CHAT_HINT_ARGS_MAX);
        p = put(p, c->args.s, keep);
        if (keep < c->args.len)
            p = put(p, "...", 3);
    }
    return (size_t)(p - out);
}

/* "name (id); name (id)", the other calls: they ran, and running them again
 * would repeat their effect. */
static size_t write_ran(const chat_request *req, const chat_message *m, char *out)
{
    char *p = out;
    for (size_t k = 0; k < m->n_calls; k++) {
        const chat_call *c = &m->calls[k];
        if (read_only(req, c))
            continue;
        if (p > out)
            p = put(p, "; ", 2);
        p = put(p, c->name.s, c->name.len);
        p = put(p, " (", 2);
        p = put(p, c->id.s, c->id.len);
        *p++ = ')';
    }
    return (size_t)(p - out);
}

/* ---- Classes ---- */

/* The decoders add a message's arguments to its payload in the order of
 * its calls: a cursor over the calls finds each one in a single pass, and
 * only a text out of that order is looked for among all of them. */
int chat_has_prose(const chat_message *m)
{
    if (m->role != ROLE_ASSISTANT)
        return 0;
    size_t next = 0;
    for (size_t i = 0; i < m->n_payload; i++) {
        if (next < m->n_calls && m->payload[i].s == m->calls[next].args.s) {
            next++;
            continue;
        }
        if (m->payload[i].len == 0)
            continue;
        int args = 0;
        for (size_t k = 0; k < m->n_calls && !args; k++)
            args = m->payload[i].s == m->calls[k].args.s;
        if (!args)
            return 1;
    }
    return 0;
}

static unit_class default_class(const chat_request *req, const chat_message *m)
{
    if (chat_has_prose(m) && req->policy.assistant_text == CHAT_PROSE_PROTECTED)
        return UNIT_PROTECTED;
    switch (m->role) {
    case ROLE_SYSTEM:
    case ROLE_DEVELOPER:
        return UNIT_PROTECTED;
    case ROLE_USER:
        /* Constraints are stated once; a turn of tool results states none. */
        return m->results_only ? UNIT_DERIVABLE : UNIT_PROTECTED;
    case ROLE_ASSISTANT:
    case ROLE_TOOL:
        break;
    }
    return UNIT_DERIVABLE;
}

/* Whether message j is in the exchange opened at own, and whether the
 * exchange may go on after it: its messages follow one another, but a
 * finished turn's reasoning between two of them is in no exchange. */
static int in_exchange(const chat_request *req, const size_t *owner, size_t own, size_t j,
                       int *goes_on)
{
    *goes_on = j < req->n && (owner[j] == own || req->m[j].stale);
    return *goes_on && owner[j] == own;
}

/* The class the tools of the exchange opened at own give it, or -1 when
 * they say nothing (read-only calls: derivable). Its calls are those of the
 * turn's messages. A tool in no list has side effects: that it ran, and
 * what it answered, is stated nowhere else. */
static int tools_class(const chat_request *req, const size_t *owner, size_t own,
                       const unsigned char *superseded)
{
    int all_redundant = 1, all_superseded = 1, any = 0, side_effects = 0, more = 1;
    for (size_t j = own; more; j++) {
        const chat_message *m = &req->m[j];
        if (!in_exchange(req, owner, own, j, &more) || m->n_calls == 0)
            continue;
        any = 1;
        all_superseded &= superseded[j];
        for (size_t k = 0; k < m->n_calls; k++) {
            chat_str name = m->calls[k].name;
            if (chat_tools_has(&req->policy.protect_tools, name))
                return UNIT_PROTECTED;
            int redundant = chat_tools_has(&req->policy.redundant_tools, name);
            all_redundant &= redundant;
            side_effects |= !redundant && !chat_tools_has(&req->policy.read_only_tools, name);
        }
    }
    if (!any)
        return -1;
    if (all_redundant)
        return UNIT_REDUNDANT;
    if (side_effects)
        return UNIT_PROTECTED;
    return all_superseded ? UNIT_REDUNDANT : -1;
}

/* A loss marker fed back is derivable: it stands for what is already
 * gone, and dropped, its lists pass to the marker of its run. A pointer
 * message keeps the class of what it stands for, which its form still
 * shows (its role, its tools, a pointer where its prose was). */
static unit_class own_class(chat_own_kind k, unit_class c)
{
    return k == CHAT_OWN_MARKER ? UNIT_DERIVABLE : c;
}

/* One of the lists of the exchange opened at own (write: write_hint or
 * write_ran), over the calls of its turn's messages, "; " between them. */
static size_t write_turn(const chat_request *req, const size_t *owner, size_t own, char *out,
                         size_t (*write)(const chat_request *, const chat_message *, char *))
{
    char *p = out;
    int more = 1;
    for (size_t j = own; more; j++) {
        if (!in_exchange(req, owner, own, j, &more) || req->m[j].n_calls == 0)
            continue;
        size_t gap = p != out ? 2 : 0, len = write(req, &req->m[j], p + gap);
        if (len == 0)
            continue;
        memcpy(p, "; ", gap);
        p += gap + len;
    }
    return (size_t)(p - out);
}

/* ---- Narration ---- */

/* Whether message j is reasoning a narration may keep before it: a
 * Responses reasoning item, which leads to the items after it. */
static int leads_narration(const chat_request *req, size_t j)
{
    const chat_message *m = &req->m[j];
    return m->sealed_state && m->n_calls == 0 && m->n_answers == 0 && !chat_has_prose(m);
}

/* Takes the narration out of each read-only exchange it alone protects
 * (chat_classes.calls_with): the exchange opened at own, whose messages
 * narrate[j] marks as protected by their prose only. The rest, which must
 * be contiguous and hold nothing else protected, stays one exchange opened
 * at its first message. Reasoning before the narration (one response's
 * items) goes with the calls it led to (chat_leads_calls()), as it would
 * were there no narration: sent while they are kept, so that no call goes
 * without it, and gone with them, the narration then sent without its id
 * as the one text it holds. Narration that holds more than one text would
 * not render the same so: its reasoning stays with it, one exchange opened
 * at own, reasoning going back with the item after it. A side-effecting
 * exchange is protected by its tools and is never split. */
static void split_narration(const chat_request *req, const unsigned char *narrate, size_t own,
                            chat_classes *out)
{
    size_t first = SIZE_MAX, last = 0, n_narration = 0, n_lead = 0;
    int more = 1;
    for (size_t j = own; more; j++) {
        if (!in_exchange(req, out->owner, own, j, &more))
            continue;
        if (narrate[j]) {
            if (first != SIZE_MAX) /* narration after the rest began: not contiguous */
                return;
            n_narration++;
        } else if (n_narration == 0 && first == SIZE_MAX && leads_narration(req, j) &&
                   out->cls[j] != UNIT_PROTECTED) {
            n_lead++;
        } else if (out->cls[j] == UNIT_PROTECTED) {
            return;
        } else {
            if (first == SIZE_MAX)
                first = j;
            else if (last + 1 != j)
                return;
            last = j;
        }
    }
    if (n_narration == 0 || first == SIZE_MAX)
        return;
    int lead_goes = n_lead > 0;
    for (size_t j = own; j < first && lead_goes; j++)
        if (out->owner[j] == own && narrate[j] && !req->m[j].one_text)
            lead_goes = 0;
    for (size_t j = own; j <= last; j++) {
        if (out->owner[j] != own)
            continue;
        if (j >= first) {
            out->owner[j] = first;
        } else if (!narrate[j] && lead_goes) {
            /* Reasoning that goes with the calls: no exchange of its own,
             * never spilled, priced with them (chat_plan). */
            out->owner[j] = SIZE_MAX;
            out->cls[j] = UNIT_PROTECTED;
            out->calls_with[j] = first;
            out->hint[j] = out->ran[j] = (chat_str){NULL, 0}; /* the calls' own */
        } else {
            /* The narration, alone or with the reasoning that led to it. */
            out->owner[j] = n_lead && !lead_goes ? own : SIZE_MAX;
            if (narrate[j] && (req->m[j].n_calls > 0 || lead_goes))
                out->calls_with[j] = first;
        }
    }
}

int chat_classify(const chat_request *req, chat_classes *out)
{
    size_t n = req->n, bytes = 1;
    memset(out, 0, sizeof(*out));
    out->cls = malloc((n ? n : 1) * sizeof(*out->cls));
    out->owner = malloc((n ? n : 1) * sizeof(*out->owner));
    out->hint = calloc(n ? n : 1, sizeof(*out->hint));
    out->ran = calloc(n ? n : 1, sizeof(*out->ran));
    out->tail_hint = calloc(n ? n : 1, sizeof(*out->tail_hint));
    out->tail_ran = calloc(n ? n : 1, sizeof(*out->tail_ran));
    out->own = calloc(n ? n : 1, 1);
    out->calls_with = malloc((n ? n : 1) * sizeof(*out->calls_with));
    unsigned char *superseded = calloc(n ? n : 1, 1), *narrate = calloc(n ? n : 1, 1);
    int *tools_cls = malloc((n ? n : 1) * sizeof(*tools_cls));
    if (!tools_cls || !out->cls || !out->owner || !out->hint || !out->ran || !out->tail_hint ||
        !out->tail_ran || !out->own || !out->calls_with || !superseded || !narrate)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &req->m[i];
        out->calls_with[i] = SIZE_MAX;
        out->own[i] = (unsigned char)chat_own_kind_of(m);
        bytes += hint_bytes(m);
        /* The lists of a text of several markers are joined in buf. */
        if (out->own[i] == CHAT_OWN_MARKER)
            bytes += CHAT_OWN_LISTS_ROOM(m->payload[0].len);
        if (m->tail_marker)
            bytes += CHAT_OWN_LISTS_ROOM(m->tail.len);
    }
    if (!(out->buf = malloc(bytes)) || find_superseded(req, out->own, superseded) != 0)
        goto fail;
    find_exchanges(req, out->owner);
    /* Each exchange's tools give it one class, found once: asked for each
     * of its messages, an exchange of K calls would cost K times K. */
    for (size_t i = 0; i < n; i++)
        if (out->owner[i] == i)
            tools_cls[i] = tools_class(req, out->owner, i, superseded);

    char *p = out->buf;
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &req->m[i];
        size_t own = out->owner[i];
        unit_class c = default_class(req, m);
        chat_own_kind kind = (chat_own_kind)out->own[i];
        if (own != SIZE_MAX && (m->role == ROLE_ASSISTANT || m->results_only)) {
            int tc = tools_cls[own];
            /* Prose stays protected beside any tool's class. */
            if (tc >= 0)
                c = c == UNIT_PROTECTED && chat_has_prose(m) ? c : (unit_class)tc;
        }
        if (n - i <= req->policy.keep_last)
            c = UNIT_PROTECTED;
        if (m->protect)
            c = UNIT_PROTECTED;
        c = own_class(kind, c);
        if (m->note.has_class)
            c = m->note.cls;
        if (m->pinned)
            c = UNIT_PROTECTED; /* the provider's rule, above any annotation */
        if (m->stale)
            c = UNIT_REDUNDANT; /* the provider drops it unread, whatever is said */
        out->cls[i] = c;
        /* Protected by its prose alone, in an exchange its tools leave
         * unprotected: narration that may part from what it calls. */
        narrate[i] = c == UNIT_PROTECTED && own != SIZE_MAX && tools_cls[own] != UNIT_PROTECTED &&
                     m->role == ROLE_ASSISTANT && chat_has_prose(m) &&
                     req->policy.assistant_text == CHAT_PROSE_PROTECTED &&
                     n - i > req->policy.keep_last && !m->protect && !m->pinned &&
                     kind == CHAT_OWN_NONE && !m->note.has_class;

        if (kind == CHAT_OWN_MARKER) {
            p += chat_own_marker_lists_all(m->payload[0], p, &out->hint[i], &out->ran[i]);
        } else if (kind == CHAT_OWN_POINTER) {
            /* Dropped, its way back is its pointer, never its calls. */
            for (size_t k = 0; k < m->n_payload; k++)
                if (chat_own_pointer_of(m->payload[k], &out->hint[i]))
                    break;
        } else if (own == i) {
            size_t len = write_turn(req, out->owner, i, p, write_hint);
            out->hint[i] = (chat_str){p, len};
            p += len;
            len = write_turn(req, out->owner, i, p, write_ran);
            out->ran[i] = (chat_str){p, len};
            p += len;
        } else if (own != SIZE_MAX) {
            out->hint[i] = out->hint[own];
            out->ran[i] = out->ran[own];
        }
        if (m->note.has_reacquire)
            out->hint[i] = m->note.reacquire;
        if (m->tail_marker)
            p += chat_own_marker_lists_all(m->tail, p, &out->tail_hint[i], &out->tail_ran[i]);
    }

    for (size_t i = 0; i < n; i++)
        if (out->owner[i] == i && tools_cls[i] != UNIT_PROTECTED)
            split_narration(req, narrate, i, out);
    /* The group rule: a call is never separated from a result that must
     * stay, and a kept call never loses its result. */
    for (size_t i = 0; i < n; i++)
        if (out->owner[i] != SIZE_MAX && out->owner[i] != i)
            out->cls[out->owner[i]] = chat_stronger(out->cls[out->owner[i]], out->cls[i]);
    for (size_t i = 0; i < n; i++)
        if (out->owner[i] != SIZE_MAX)
            out->cls[i] = out->cls[out->owner[i]];
    free(superseded);
    free(narrate);
    free(tools_cls);
    return 0;
fail:
    free(superseded);
    free(narrate);
    free(tools_cls);
    return -1;
}

void chat_classes_free(chat_classes *c)
{
    free(c->cls);
    free(c->owner);
    free(c->hint);
    free(c->ran);
    free(c->tail_hint);
    free(c->tail_ran);
    free(c->own);
    free(c->calls_with);
    free(c->buf);
    memset(c, 0, sizeof(*c));
}
