/* A connection to one Redis node: connect and reconnect, commands with a
 * timeout, replies deferred to the next command, Redis's clock against
 * ours, and scripts run by digest. Knows nothing of compactd's keys (see
 * layout.h); an implementation of store_ops holds one conn per node it
 * talks to. Internal to store/; the only header besides the .c files that
 * includes hiredis.h. Not thread-safe: one per worker thread.
 *
 * Like hiredis's redisContext, a conn keeps its last error in err/errstr.
 * After an I/O error the connection is dropped and the next call
 * reconnects; an error reply leaves it up. */
#ifndef COMPACTD_STORE_CONN_H
#define COMPACTD_STORE_CONN_H

#include "store.h"

#include <hiredis/hiredis.h>

#include <stdint.h>

#define CONN_SCRIPTS_MAX 4

typedef struct {
    store_node_addr addr;
    int db;
    int connect_timeout_ms;
    int command_timeout_ms;

    redisContext *ctx;
    int err;
    char errstr[128];
    int ever_connected;
    int64_t clock_offset_us; /* Redis's clock minus ours, measured at connect */
    int deferred;            /* sent commands whose replies are still unread */
    struct {
        const char *text; /* identifies the script: a static string */
        char sha[41];     /* its digest as loaded on this connection */
    } scripts[CONN_SCRIPTS_MAX];
} store_conn;

/* Prepares c for the node at addr with cfg's database and timeouts; it
 * connects on first use. */
void conn_init(store_conn *c, const store_node_addr *addr, const store_config *cfg);

/* Closes the connection, if any. c may be initialised again. */
void conn_close(store_conn *c);

/* Connects if needed and reads the replies still due. Returns 0, or -1. */
int conn_ensure(store_conn *c);

/* Runs one command. Returns its reply, which the caller frees with
 * freeReplyObject(), or NULL with the error set; an error reply is
 * STORE_ERR_PROTOCOL and freed here. */
redisReply *conn_command(store_conn *c, int argc, const char **argv, const size_t *lens);

/* Runs script (a static string, cached by its address) with argv[0] and
 * argv[1] left free for EVALSHA and the digest: argv[2..argc-1] are the key
 * count, keys and arguments. By digest when this connection has loaded it,
 * else SCRIPT LOAD first; after a SCRIPT FLUSH, by EVAL. Same result as
 * conn_command(). */
redisReply *conn_script(store_conn *c, const char *script, int argc, const char **argv,
                        size_t *lens);

/* Connects if needed and loads script (if this connection has not), so
 * that a conn_script() right after costs one round trip. Returns 0, or -1. */
int conn_script_prepare(store_conn *c, const char *script);

/* Sends one command without waiting for its reply, which is read before
 * the connection's next command. Returns 0 when sent, -1 on error. A
 * command sent can still fail unseen (then counted in store_stats.errors). */
int conn_defer(store_conn *c, int argc, const char **argv, const size_t *lens);

/* Redis's clock now, in microseconds, from ours and the measured offset. */
int64_t conn_redis_time_us(const store_conn *c);

/* Drops the connection with an I/O error that names what failed. */
void conn_drop(store_conn *c, const char *what);

/* Counters shared by every conn of the process (store_get_stats()). */
void conn_count_error(void);
void conn_get_stats(store_stats *out);

#endif
