/* Recognising compactd's own loss markers and pointer messages. See
 * chat_own.h. */
#include "chat_own.h"

#include "pointer.h"

#include <string.h>

static const char *find(const char *s, size_t len, const char *what)
{
    size_t w = strlen(what);
    for (size_t i = 0; i + w <= len; i++)
        if (memcmp(s + i, what, w) == 0)
            return s + i;
    return NULL;
}

int chat_own_is_marker(chat_str t)
{
    size_t open = strlen(CHAT_MARKER_OPEN);
    return t.len > open && memcmp(t.s, CHAT_MARKER_OPEN, open) == 0 && t.s[t.len - 1] == ']' &&
           find(t.s, t.len, " dropped") != NULL;
}

static int is_pointer(const char *s, size_t len)
{
    char key[UNIT_KEY_MAX_BYTES + 1], sha[POINTER_SHA_HEX + 1];
    size_t key_len;
    return len > 0 && s[0] == '[' && pointer_parse(s, len, key, sizeof(key), &key_len, sha) == 0;
}

int chat_own_pointer_of(chat_str t, chat_str *p)
{
    static const char head[] = "{\"" CHAT_CARRIER_KEY "\":\"";
    size_t h = sizeof(head) - 1;
    if (t.len > h + 2 && memcmp(t.s, head, h) == 0 && memcmp(t.s + t.len - 2, "\"}", 2) == 0)
        *p = (chat_str){t.s + h, t.len - h - 2};
    else
        *p = t;
    return is_pointer(p->s, p->len);
}

static int is_args(const chat_message *m, chat_str t)
{
    for (size_t k = 0; k < m->n_calls; k++)
        if (t.s == m->calls[k].args.s)
            return 1;
    return 0;
}

/* Whether every text of m (every one but its calls' arguments, with
 * skip_args) is one and the same pointer, and there is one. */
static int one_pointer(const chat_message *m, int skip_args)
{
    chat_str first = {NULL, 0};
    for (size_t i = 0; i < m->n_payload; i++) {
        chat_str p;
        if (skip_args && is_args(m, m->payload[i]))
            continue;
        if (!chat_own_pointer_of(m->payload[i], &p))
            return 0;
        if (!first.s)
            first = p;
        else if (p.len != first.len || memcmp(p.s, first.s, p.len) != 0)
            return 0;
    }
    return first.s != NULL;
}

chat_own_kind chat_own_kind_of(const chat_message *m)
{
    if (m->n_payload == 0 || m->opaque)
        return CHAT_OWN_NONE;
    if (m->n_payload == 1 && m->n_calls == 0 && m->n_answers == 0 &&
        chat_own_is_marker(m->payload[0]))
        return CHAT_OWN_MARKER;
    /* Narration behind its pointer keeps its calls' arguments as sent. */
    return one_pointer(m, 0) || one_pointer(m, 1) ? CHAT_OWN_POINTER : CHAT_OWN_NONE;
}

/* Appends list to out (at *at), "; " before it when out has one already. */
static void join(chat_str *out, chat_str list, char *buf, size_t *at)
{
    if (list.len == 0)
        return;
    if (out->len == 0)
        *out = (chat_str){buf + *at, 0};
    else {
        memcpy(buf + *at, "; ", 2);
        *at += 2;
        out->len += 2;
    }
    memcpy(buf + *at, list.s, list.len);
    *at += list.len;
    out->len += list.len;
}

size_t chat_own_marker_lists_all(chat_str text, char *buf, chat_str *reacquire, chat_str *ran)
{
    static const char next[] = "]\n" CHAT_MARKER_OPEN;
    const char *cut = find(text.s, text.len, next);
    if (!cut) {
        chat_own_marker_lists(text, reacquire, ran);
        return 0;
    }
    /* Both lists are written in turn: each one's entries stay together. */
    size_t at = 0;
    for (int list = 0; list < 2; list++) {
        chat_str *out = list ? ran : reacquire;
        *out = (chat_str){"", 0};
        const char *s = text.s, *end = text.s + text.len;
        while (s < end) {
            const char *c = find(s, (size_t)(end - s), next);
            chat_str one = {s, c ? (size_t)(c + 1 - s) : (size_t)(end - s)}, re, rn;
            chat_own_marker_lists(one, &re, &rn);
            join(out, list ? rn : re, buf, &at);
            s = c ? c + 2 : end;
        }
    }
    return at;
}

void chat_own_marker_lists(chat_str text, chat_str *reacquire, chat_str *ran)
{
    const char *end = text.s + text.len - 1; /* the closing ']' */
    const char *re = find(text.s, text.len, CHAT_MARKER_REACQUIRE);
    const char *rn = find(text.s, text.len, CHAT_MARKER_RAN);
    *reacquire = (chat_str){"", 0};
    *ran = (chat_str){"", 0};
    if (rn) {
        const char *from = rn + strlen(CHAT_MARKER_RAN);
        *ran = (chat_str){from, (size_t)(end - from)};
        end = rn;
    }
    if (re && re < end) {
        const char *from = re + strlen(CHAT_MARKER_REACQUIRE);
        *reacquire = (chat_str){from, (size_t)(end - from)};
    }
}
