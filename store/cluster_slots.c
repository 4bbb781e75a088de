/* Redis Cluster's slot arithmetic and reply parsing: which slot a key lives
 * in, which master serves each slot, and what a node's error reply asks of
 * its client. */
#include "cluster_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Slots ---- */

uint16_t cluster_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint8_t)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

int cluster_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open + 1 - key);
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return cluster_crc16(open + 1, (size_t)(close - open - 1)) & (CLUSTER_SLOTS - 1);
    }
    return cluster_crc16(key, len) & (CLUSTER_SLOTS - 1);
}

/* ---- Slot map ---- */

void cluster_slot_map_init(cluster_slot_map *m)
{
    m->masters = NULL;
    m->n_masters = 0;
    for (int i = 0; i < CLUSTER_SLOTS; i++)
        m->owner[i] = -1;
}

void cluster_slot_map_clear(cluster_slot_map *m)
{
    free(m->masters);
    cluster_slot_map_init(m);
}

size_t cluster_slot_map_served(const cluster_slot_map *m)
{
    size_t n = 0;
    for (int i = 0; i < CLUSTER_SLOTS; i++)
        n += m->owner[i] >= 0;
    return n;
}

/* The index of addr among m's masters, added when new; -1 when out of
 * memory. */
static int master_index(cluster_slot_map *m, const cluster_addr *addr)
{
    for (size_t i = 0; i < m->n_masters; i++)
        if (m->masters[i].port == addr->port && strcmp(m->masters[i].host, addr->host) == 0)
            return (int)i;
    cluster_addr *grown = realloc(m->masters, (m->n_masters + 1) * sizeof(*grown));
    if (!grown)
        return -1;
    m->masters = grown;
    m->masters[m->n_masters] = *addr;
    return (int)m->n_masters++;
}

int cluster_slot_map_assign(cluster_slot_map *m, int slot, const cluster_addr *addr)
{
    int idx = master_index(m, addr);
    if (idx < 0)
        return -1;
    m->owner[slot] = (int16_t)idx;
    return 0;
}

static int is_int(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER;
}

int cluster_slot_map_parse(const redisReply *r, const char *asked_host, cluster_slot_map *m,
                           char *err, size_t errlen)
{
    cluster_slot_map_clear(m);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "CLUSTER SLOTS: not an array");
        return -1;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || !is_int(e->element[0]) ||
            !is_int(e->element[1]) || e->element[2]->type != REDIS_REPLY_ARRAY ||
            e->element[2]->elements < 2 || !is_int(e->element[2]->element[1]))
            goto bad;
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        const redisReply *host = e->element[2]->element[0];
        cluster_addr addr;
        addr.port = (int)e->element[2]->element[1]->integer;
        if (lo < 0 || hi >= CLUSTER_SLOTS || lo > hi || addr.port < 1 || addr.port > 65535)
            goto bad;
        /* No usable endpoint: the node asked is the one meant. */
        const char *h = asked_host;
        size_t hlen = strlen(asked_host);
        if (host->type == REDIS_REPLY_STRING && host->len > 0 &&
            !(host->len == 1 && host->str[0] == '?')) {
            h = host->str;
            hlen = host->len;
        }
        if (hlen >= sizeof(addr.host))
            goto bad;
        memcpy(addr.host, h, hlen);
        addr.host[hlen] = '\0';
        int idx = master_index(m, &addr);
        if (idx < 0) {
            snprintf(err, errlen, "out of memory");
            cluster_slot_map_clear(m);
            return -1;
        }
        for (long long s = lo; s <= hi; s++)
            m->owner[s] = (int16_t)idx;
    }
    return 0;
bad:
    snprintf(err, errlen, "CLUSTER SLOTS: malformed reply");
    cluster_slot_map_clear(m);
    return -1;
}

/* ---- Error replies ---- */

static int starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

/* Parses "<slot> <host>:<port>" (the host may hold colons: IPv6). */
static int parse_redirect(const char *s, size_t len, int *slot, cluster_addr *to)
{
    char buf[CLUSTER_HOST_MAX + 32];
    if (len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf || *end != ' ' || v < 0 || v >= CLUSTER_SLOTS)
        return -1;
    char *host = end + 1, *colon = strrchr(host, ':');
    if (!colon || colon == host || (size_t)(colon - host) >= sizeof(to->host))
        return -1;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return -1;
    memcpy(to->host, host, (size_t)(colon - host));
    to->host[colon - host] = '\0';
    to->port = (int)port;
    *slot = (int)v;
    return 0;
}

cluster_reply_kind cluster_reply_classify(const char *str, size_t len, int *slot, cluster_addr *to)
{
    if (starts_with(str, len, "MOVED "))
        return parse_redirect(str + 6, len - 6, slot, to) == 0 ? CLUSTER_REPLY_MOVED
                                                               : CLUSTER_REPLY_OTHER;
    if (starts_with(str, len, "ASK "))
        return parse_redirect(str + 4, len - 4, slot, to) == 0 ? CLUSTER_REPLY_ASK
                                                               : CLUSTER_REPLY_OTHER;
    if (starts_with(str, len, "TRYAGAIN"))
        return CLUSTER_REPLY_TRYAGAIN;
    if (starts_with(str, len, "CLUSTERDOWN"))
        return CLUSTER_REPLY_CLUSTERDOWN;
    if (starts_with(str, len, "NOSCRIPT"))
        return CLUSTER_REPLY_NOSCRIPT;
    return CLUSTER_REPLY_OTHER;
}
