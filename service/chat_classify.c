/* Message classification: defaults, policy, annotations, then the group
 * rule. See chat_classify.h. */
#include "chat_classify.h"

#include "bytemap.h"

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

static int names_has(const chat_names *names, chat_str s)
{
    for (size_t i = 0; i < names->n; i++)
        if (names->names[i].len == s.len && memcmp(names->names[i].s, s.s, s.len) == 0)
            return 1;
    return 0;
}

/* ---- Exchanges ---- */

/* A message that answers calls belongs to the exchange opened by the last
 * message that made calls; the decoders have checked that it answers only
 * those. A message of the same turn as the one before it (same_turn) joins
 * that one's exchange, which opens at the turn's first message. */
static void find_exchanges(const chat_request *req, size_t *owner)
{
    size_t open = SIZE_MAX;
    for (size_t i = 0; i < req->n; i++) {
        const chat_message *m = &req->m[i];
        owner[i] = SIZE_MAX;
        if (m->same_turn && i > 0 && m->n_answers == 0 && req->m[i - 1].n_answers == 0) {
            size_t first = owner[i - 1] != SIZE_MAX ? owner[i - 1] : i - 1;
            owner[i - 1] = owner[i] = first;
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
 * same tool and same arguments, by a later exchange. Returns 0 or -1. */
static int find_superseded(const chat_request *req, unsigned char *superseded)
{
    size_t ncalls = 0, bytes = 0;
    for (size_t i = 0; i < req->n; i++)
        for (size_t k = 0; k < req->m[i].n_calls; k++) {
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
        for (size_t k = 0; k < req->m[i].n_calls; k++, c++) {
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
        int all_later = m->n_calls > 0;
        for (size_t k = 0; k < m->n_calls; k++, c++) {
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

static size_t hint_bytes(const chat_message *m)
{
    size_t n = 0;
    for (size_t k = 0; k < m->n_calls; k++)
        n += m->calls[k].name.len + 1 + CHAT_HINT_ARGS_MAX + 3 + 2;
    return n + 2; /* and "; " before it in its turn's hint */
}

/* "name args; name args", the calls an exchange would make again. */
static size_t write_hint(const chat_message *m, char *out)
{
    char *p = out;
    for (size_t k = 0; k < m->n_calls; k++) {
        const chat_call *c = &m->calls[k];
        if (k > 0) {
            memcpy(p, "; ", 2);
            p += 2;
        }
        memcpy(p, c->name.s, c->name.len);
        p += c->name.len;
        *p++ = ' ';
        size_t keep = utf8_cut(c->args.s, c->args.len, CHAT_HINT_ARGS_MAX);
        memcpy(p, c->args.s, keep);
        p += keep;
        if (keep < c->args.len) {
            memcpy(p, "...", 3);
            p += 3;
        }
    }
    return (size_t)(p - out);
}

/* ---- Classes ---- */

static unit_class default_class(const chat_message *m)
{
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

/* The class the tools of the exchange opened at own give it, or -1 when
 * they say nothing. Its calls are those of the turn's messages. */
static int tools_class(const chat_request *req, const size_t *owner, size_t own,
                       const unsigned char *superseded)
{
    int all_redundant = 1, all_superseded = 1, any = 0;
    for (size_t j = own; j < req->n && owner[j] == own; j++) {
        const chat_message *m = &req->m[j];
        if (m->n_calls == 0)
            continue;
        any = 1;
        all_superseded &= superseded[j];
        for (size_t k = 0; k < m->n_calls; k++) {
            if (names_has(&req->policy.protect_tools, m->calls[k].name))
                return UNIT_PROTECTED;
            all_redundant &= names_has(&req->policy.redundant_tools, m->calls[k].name);
        }
    }
    if (any && (all_redundant || all_superseded))
        return UNIT_REDUNDANT;
    return -1;
}

/* The hint of the exchange opened at own: the calls of its turn. */
static size_t write_turn_hint(const chat_request *req, const size_t *owner, size_t own, char *out)
{
    char *p = out;
    for (size_t j = own; j < req->n && owner[j] == own; j++) {
        if (req->m[j].n_calls == 0)
            continue;
        if (p != out) {
            memcpy(p, "; ", 2);
            p += 2;
        }
        p += write_hint(&req->m[j], p);
    }
    return (size_t)(p - out);
}

int chat_classify(const chat_request *req, chat_classes *out)
{
    size_t n = req->n, bytes = 1;
    memset(out, 0, sizeof(*out));
    out->cls = malloc((n ? n : 1) * sizeof(*out->cls));
    out->owner = malloc((n ? n : 1) * sizeof(*out->owner));
    out->hint = calloc(n ? n : 1, sizeof(*out->hint));
    unsigned char *superseded = calloc(n ? n : 1, 1);
    if (!out->cls || !out->owner || !out->hint || !superseded)
        goto fail;
    for (size_t i = 0; i < n; i++)
        bytes += hint_bytes(&req->m[i]);
    if (!(out->buf = malloc(bytes)) || find_superseded(req, superseded) != 0)
        goto fail;
    find_exchanges(req, out->owner);

    char *p = out->buf;
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &req->m[i];
        size_t own = out->owner[i];
        unit_class c = default_class(m);
        if (own != SIZE_MAX && (m->role == ROLE_ASSISTANT || m->results_only)) {
            int tc = tools_class(req, out->owner, own, superseded);
            if (tc >= 0)
                c = (unit_class)tc;
        }
        if (n - i <= req->policy.keep_last)
            c = UNIT_PROTECTED;
        if (m->note.has_class)
            c = m->note.cls;
        out->cls[i] = c;

        if (m->note.has_reacquire) {
            out->hint[i] = m->note.reacquire;
        } else if (own == i) {
            size_t len = write_turn_hint(req, out->owner, i, p);
            out->hint[i] = (chat_str){p, len};
            p += len;
        } else if (own != SIZE_MAX) {
            out->hint[i] = out->hint[own];
        }
    }

    /* The group rule: a call is never separated from a result that must
     * stay, and a kept call never loses its result. */
    for (size_t i = 0; i < n; i++)
        if (out->owner[i] != SIZE_MAX && out->owner[i] != i)
            out->cls[out->owner[i]] = chat_stronger(out->cls[out->owner[i]], out->cls[i]);
    for (size_t i = 0; i < n; i++)
        if (out->owner[i] != SIZE_MAX)
            out->cls[i] = out->cls[out->owner[i]];
    free(superseded);
    return 0;
fail:
    free(superseded);
    return -1;
}

void chat_classes_free(chat_classes *c)
{
    free(c->cls);
    free(c->owner);
    free(c->hint);
    free(c->buf);
    memset(c, 0, sizeof(*c));
}
