/* What the store hands out, free of hiredis and of any handle: the records
 * and decision-log entries a read returns (with the functions that free
 * them) and the connection statistics. The service passes these types up
 * as they are (session.h), so a record is described once. */
#ifndef COMPACTD_STORE_TYPES_H
#define COMPACTD_STORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Connection statistics, summed over every handle of the process. */
typedef struct {
    uint64_t errors;
    uint64_t reconnects;
    /* On a cluster: redirections followed, attempts retried, slot maps
     * fetched. On any Redis: commits fewer replicas acknowledged than
     * min_replicas. */
    uint64_t moved;
    uint64_t ask;
    uint64_t retries;
    uint64_t slot_map_refreshes;
    uint64_t wait_shortfalls;
} store_stats;

/* A spill as read back. Every string is owned by the record. */
typedef struct {
    char *key;
    size_t key_len;
    char *cls;
    int64_t tokens;
    char sha256[65];
    char *created_at;
    char *metadata; /* the first spill's metadata (JSON object text), or NULL */
    size_t metadata_len;
    char *text; /* NULL in listings */
    size_t text_len;
} store_record;

void store_record_clear(store_record *r);
void store_records_free(store_record *r, size_t n);

/* A decision-log entry as read back: its stream id and its bytes (owned). */
typedef struct {
    char id[48];
    char *data;
    size_t data_len;
} store_event;
void store_events_free(store_event *e, size_t n);

#endif
