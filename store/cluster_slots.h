/* Redis Cluster's key-to-slot rule and slot map, as plain data: CRC16 of a
 * key's hash tag, the map CLUSTER SLOTS describes, and the redirections
 * (MOVED, ASK) and refusals (TRYAGAIN, CLUSTERDOWN) a node answers with. No
 * I/O: cluster.c does the talking. */
#ifndef COMPACTD_CLUSTER_SLOTS_H
#define COMPACTD_CLUSTER_SLOTS_H

#include <hiredis/hiredis.h>

#include <stddef.h>
#include <stdint.h>

#define CLUSTER_SLOTS 16384
#define CLUSTER_HOST_MAX 256

/* CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with. */
uint16_t cluster_crc16(const char *buf, size_t len);

/* The slot of key: of the part between the first '{' and the next '}' when
 * that part is not empty, else of the whole key (the cluster spec's rule). */
int cluster_key_slot(const char *key, size_t len);

typedef struct {
    char host[CLUSTER_HOST_MAX];
    int port;
} cluster_addr;

/* Which master serves each slot. owner[slot] indexes masters, -1 when no
 * node serves the slot. */
typedef struct {
    cluster_addr *masters; /* owned; free with cluster_slot_map_clear() */
    size_t n_masters;
    int16_t owner[CLUSTER_SLOTS];
} cluster_slot_map;

/* Fills m (which it clears first) from a CLUSTER SLOTS reply. A node listed
 * with an empty or "?" endpoint is the node asked, whose address is
 * asked_host (the cluster spec's rule). Returns 0, or -1 with a message in
 * err when the reply is malformed or memory runs out. */
int cluster_slot_map_parse(const redisReply *r, const char *asked_host, cluster_slot_map *m,
                           char *err, size_t errlen);
void cluster_slot_map_init(cluster_slot_map *m);
void cluster_slot_map_clear(cluster_slot_map *m);

/* Records that addr serves slot (what a MOVED redirection says). Returns 0,
 * or -1 when out of memory. */
int cluster_slot_map_assign(cluster_slot_map *m, int slot, const cluster_addr *addr);

/* Slots some master serves. */
size_t cluster_slot_map_served(const cluster_slot_map *m);

typedef enum {
    CLUSTER_REPLY_OTHER = 0, /* not a cluster error: the command's own answer */
    CLUSTER_REPLY_MOVED,     /* the slot lives elsewhere for good: update the map */
    CLUSTER_REPLY_ASK,       /* this once, ask the importing node (after ASKING) */
    CLUSTER_REPLY_TRYAGAIN,  /* the session's keys are split by a migration */
    CLUSTER_REPLY_CLUSTERDOWN,
    CLUSTER_REPLY_NOSCRIPT
} cluster_reply_kind;

/* Classifies an error reply's text. For MOVED and ASK fills slot and to
 * (host and port of "MOVED <slot> <host>:<port>"); a malformed redirection
 * is CLUSTER_REPLY_OTHER. */
cluster_reply_kind cluster_reply_classify(const char *str, size_t len, int *slot, cluster_addr *to);

#endif
