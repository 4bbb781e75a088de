/* The commit of a planned compaction (see commit.h): its spills and log
 * entry written under one name, or the entry alone when nothing spills. */
#include "commit.h"

#include "session.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends "<sep>name" (sep one byte, name a string) at buf + at. */
static size_t put_word(char *buf, size_t at, char sep, const char *name)
{
    size_t n = strlen(name);
    buf[at++] = sep;
    memcpy(buf + at, name, n);
    return at + n;
}

/* Appends " <v>" in decimal at buf + at, as "%s %lld" (or %zu) writes it:
 * without printf, which cost more than the rest of a unit's part of the
 * name. The magnitude is taken unsigned, so INT64_MIN has one too. */
static size_t put_number(char *buf, size_t at, uint64_t magnitude, int negative)
{
    char num[24], *d = num + sizeof(num);
    do
        *--d = (char)('0' + magnitude % 10);
    while ((magnitude /= 10) != 0);
    if (negative)
        *--d = '-';
    buf[at++] = ' ';
    size_t n = (size_t)(num + sizeof(num) - d);
    memcpy(buf + at, d, n);
    return at + n;
}

/* The commit's name (compaction_commit()): 8 hex digits naming its
 * scope, then 8 naming all it writes, each from a digest of NUL-separated
 * parts. The scope is the session and Idempotency-Key when there is one
 * (the same key with another body is then refused), else the content. The
 * content is the plan the log entry records, less its time: the budget, and
 * every unit's key, class, tokens, text length and decision, with each
 * spill's digest, so that two compactions are one only when their entries
 * would say the same. Returns 0, or -1 when out of memory. */
static int commit_name(const char *ns, const char *idempotency_key, const compaction_request *req,
                       const compaction *c, char key[POINTER_SHA_HEX + 1])
{
    enum { UNIT_FIGURES = 80 }; /* class, decision and three numbers */
    size_t key_len = idempotency_key ? strlen(idempotency_key) : 0;
    size_t len = strlen(ns) + 64 + key_len;
    for (size_t i = 0; i < req->n; i++)
        len += req->units[i].key_len + UNIT_FIGURES + 65;
    char *buf = malloc(len), content[65], scope[65];
    if (!buf)
        return -1;
    size_t at = (size_t)snprintf(buf, len, "%s%ckey%c", ns, '\0', '\0');
    memcpy(buf + at, idempotency_key ? idempotency_key : "", key_len);
    at += key_len;
    if (idempotency_key)
        sha256_hex(buf, at, scope);
    at += (size_t)snprintf(buf + at, len - at, "%cplan%c%lld %zu", '\0', '\0',
                           (long long)c->plan.budget, req->n);
    for (size_t i = 0; i < req->n; i++) {
        const plan_unit *u = &req->units[i];
        plan_decision d = c->plan.entries[i].decision;
        buf[at++] = '\0';
        memcpy(buf + at, u->key, u->key_len);
        at += u->key_len;
        /* "\0<class> <tokens> <text length> <decision>" */
        at = put_word(buf, at, '\0', unit_class_name(u->cls));
        at = put_number(buf, at, u->tokens < 0 ? 0 - (uint64_t)u->tokens : (uint64_t)u->tokens,
                        u->tokens < 0);
        at = put_number(buf, at, u->text_len, 0);
        at = put_word(buf, at, ' ', plan_decision_name(d));
        if (d != DECISION_EXTERNALIZED)
            continue;
        buf[at++] = '\0';
        memcpy(buf + at, req->sha256[i], 64);
        at += 64;
    }
    sha256_hex(buf, at, content);
    free(buf);
    memcpy(key, idempotency_key ? scope : content, POINTER_SHA_HEX / 2);
    memcpy(key + POINTER_SHA_HEX / 2, content, POINTER_SHA_HEX / 2);
    key[POINTER_SHA_HEX] = '\0';
    return 0;
}

int compaction_commit(const char *ns, const char *idempotency_key, const compaction_request *req,
                      const compaction *c, const char *event, size_t event_len, compactd_error *err)
{
    if (req->dry_run || (c->plan.n_externalized == 0 && !event))
        return COMMIT_DONE;
    /* No pointer is returned that does not resolve: spills wait for Redis.
     * Nor is a key answered that was not checked against the ones the
     * session holds: a keyed commit waits too. */
    if (c->plan.n_externalized > 0 || idempotency_key) {
        char name[POINTER_SHA_HEX + 1];
        if (commit_name(ns, idempotency_key, req, c, name) != 0)
            return error_set(err, ERR_INTERNAL, "out of memory while spilling");
        int written =
            session_commit(ns, req, c, event, event_len, name, idempotency_key != NULL, err);
        if (written == SESSION_WRITTEN)
            return COMMIT_DONE;
        /* Nothing to spill, so the plan stands without the store, as one
         * without a key does, when nothing was written (its key then not
         * held either); one that may have been written is a 503, whose
         * retry under the key is safe. */
        if (c->plan.n_externalized == 0 && written == SESSION_NOT_WRITTEN &&
            err->kind == ERR_STORE_UNAVAILABLE)
            return COMMIT_LOG_LOST;
        return -1;
    }
    /* Nothing to spill: the plan stands without the store, and the log
     * entry is written if the store answers. */
    return session_log_send(ns, event, event_len, err) == 0 ? COMMIT_DONE : COMMIT_LOG_LOST;
}

int compaction_commit_waits(const compaction_request *req, const compaction *c, int has_event,
                            const char *idempotency_key)
{
    if (req->dry_run)
        return 0;
    if (c->plan.n_externalized > 0 || (has_event && idempotency_key))
        return 1;
    return has_event && session_log_send_waits();
}
