/* A connection to one Redis node: connect and reconnect, commands under a
 * deadline, pipelines, replies deferred to the next command, Redis's clock
 * against ours, and scripts run by digest. Knows nothing of compactd's keys
 * (see layout.h); a transport holds one conn per node it
 * talks to. Internal to store/. Not thread-safe: one per worker thread.
 *
 * The socket is non-blocking and every wait is a poll() against a
 * deadline, so that a command's timeout covers the whole exchange (sending
 * a large command included), and so that conn_defer() never waits at all.
 *
 * Like hiredis's redisContext, a conn keeps its last error in err/errstr.
 * After an I/O error or a timeout the connection is dropped and the next
 * call reconnects; an error reply leaves it up.
 *
 * Over TLS (store_config.tls.on), hiredis still formats the commands and
 * parses the replies, and the bytes go through a tls_link (tls.h) on the
 * same socket; the handshake is part of connecting, under the connect
 * timeout. */
#ifndef COMPACTD_STORE_CONN_H
#define COMPACTD_STORE_CONN_H

#include "store.h"

#include <hiredis/hiredis.h>

#include <stdint.h>

#define CONN_SCRIPTS_MAX 8

struct tls_context; /* tls.h's */
struct tls_link;

typedef struct store_conn {
    store_node_addr addr;
    int db;
    int connect_timeout_ms;
    int command_timeout_ms;

    redisContext *ctx;
    int err;
    char errstr[256];
    int connecting;          /* a non-blocking connect (and handshake) not yet seen to finish */
    int answered;            /* a reply has come on this connection */
    int ever_connected;      /* for counting reconnects */
    int clock_ok;            /* clock_offset_us measured on this connection */
    int64_t clock_offset_us; /* Redis's clock minus ours */
    int setup_due;           /* the first replies due are the connection's AUTH and SELECT */
    int auth_first;          /* the first of them is AUTH's */
    char user[STORE_AUTH_MAX];
    char password[STORE_AUTH_MAX];     /* empty: no AUTH */
    size_t deferred;                   /* replies due for conn_defer() commands */
    size_t pending;                    /* replies due for conn_append() commands */
    int sent;                          /* the last command was written whole */
    int tls_on;                        /* connections go over TLS */
    const struct tls_context *tls_ctx; /* its shared part (NULL when out of memory) */
    char tls_name[STORE_HOST_MAX];     /* the name to check, when not the node's */
    struct tls_link *tls;              /* this connection's, once its TCP connect is done */
    struct {
        const char *text; /* identifies the script: a static string */
        char sha[41];     /* its digest as loaded on this connection */
    } scripts[CONN_SCRIPTS_MAX];
} store_conn;

/* Prepares c for the node at addr with cfg's database and timeouts; it
 * connects on first use. */
void conn_init(store_conn *c, const store_node_addr *addr, const store_config *cfg);

/* Prepares c for the node from talks to, with its own command timeout: a
 * second connection to the same node, for a question that must not queue
 * behind from's unanswered commands. */
void conn_init_like(store_conn *c, const store_conn *from, int command_timeout_ms);

/* Closes the connection, if any. Unread deferred replies are lost (their
 * commands may or may not have run). */
void conn_close(store_conn *c);

/* Connects if needed, sends what is queued and reads the replies due.
 * Returns 0, or -1 with the error set. */
int conn_ensure(store_conn *c);

/* Runs one command. Returns its reply, which the caller frees with
 * freeReplyObject(), or NULL with the error set; an error reply is
 * STORE_ERR_PROTOCOL and freed here. After a NULL, c->sent tells whether
 * the command was written whole (then Redis may have run it). */
redisReply *conn_command(store_conn *c, int argc, const char **argv, const size_t *lens);

/* A pipeline: conn_append() queues commands (nothing is sent), then
 * conn_read_by() sends them in one write and reads their n replies by
 * deadline (mono_clock_us() microseconds). Error replies are returned like
 * any other (the caller looks at each). conn_read_by() returns 0 with
 * replies[0..n-1] set (the caller frees each), or -1 with the error set and
 * nothing to free (then c->sent tells whether the commands were written
 * whole); n must be the number of commands appended since the last read. */
int conn_append(store_conn *c, int argc, const char **argv, const size_t *lens);
int conn_read_by(store_conn *c, redisReply **replies, size_t n, int64_t deadline);

/* Runs script (a static string, cached by its address) with argv[0] and
 * argv[1] left free for EVALSHA and the digest: argv[2..argc-1] are the key
 * count, keys and arguments. By digest when this connection has loaded it,
 * else by EVAL (and loaded again by the next conn_script_prepare()). Same
 * result as conn_command(). */
redisReply *conn_script(store_conn *c, const char *script, int argc, const char **argv,
                        size_t *lens);

/* Connects if needed, measures Redis's clock on a new connection and loads
 * script on it, so that a conn_script() right after costs one round trip
 * and conn_redis_time_us() is good. Returns 0, or -1. */
int conn_script_prepare(store_conn *c, const char *script);

/* Sends one command without waiting for anything, ever: its reply is read
 * (and discarded, an error reply counted in store_stats.errors) by a later
 * call. On a connection that is not up, a non-blocking connect starts and
 * the command waits in the buffer to be sent by a later call. Returns 0
 * when the command is sent or queued, -1 when it is dropped: the connect
 * failed at once, or Redis has not kept up with the ones already queued
 * (it is stalled or slow: queueing more would only hold memory). A command
 * queued can still be lost unseen if the connection fails first. */
int conn_defer(store_conn *c, int argc, const char **argv, const size_t *lens);

/* Sends what conn_defer() left queued and reads the replies that have come,
 * waiting for nothing. Returns 0 when no reply is due any more (Redis has
 * run every deferred command), 1 when some still are, -1 when the
 * connection failed (dropped: its unanswered commands may be lost). */
int conn_settle(store_conn *c);

/* Redis's clock now, in microseconds, from ours and the measured offset. */
int64_t conn_redis_time_us(const store_conn *c);

/* Counters shared by every conn of the process (store_get_stats()). */
void conn_count_error(void);
void conn_get_stats(store_stats *out);

#endif
