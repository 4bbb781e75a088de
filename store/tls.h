/* TLS under a Redis connection, over OpenSSL: the only part of compactd
 * that includes OpenSSL's headers. Internal to store/.
 *
 * hiredis 0.14 (Debian bookworm's) has no TLS, but it never needs to own
 * the socket: conn.c lets hiredis format commands into its output buffer
 * and parse replies fed to its reader, and moves the bytes itself. On a TLS
 * connection it moves them through a tls_link instead of write() and
 * read(): the same non-blocking socket, the same waits against the same
 * deadlines, with no thread, relay or plaintext socket in between.
 *
 * A tls_context holds what every connection shares (the CAs trusted, the
 * client certificate and key); it is made once per distinct set of files
 * and kept for the process, shared by every thread. A tls_link is one
 * connection's TLS state, used by one thread at a time. */
#ifndef COMPACTD_STORE_TLS_H
#define COMPACTD_STORE_TLS_H

#include "store.h"

#include <stddef.h>
#include <sys/types.h>

typedef struct tls_context tls_context;
typedef struct tls_link tls_link;

/* The context for cfg's files, read on the first call for them. Borrowed:
 * valid for the life of the process. A context whose files could not be
 * used is returned too, with the reason in tls_context_error(). NULL only
 * when out of memory. */
const tls_context *tls_context_for(const store_tls_config *cfg);

/* NULL when the context is usable, else why not (names the file). */
const char *tls_context_error(const tls_context *t);

/* Starts TLS as a client on fd, a connected non-blocking socket, to the
 * node at host: its certificate must name server_name when that is not
 * empty, else host (a DNS name, or an IP address matched against the
 * certificate's IP addresses). The link never closes fd. Returns a new
 * link, freed with tls_link_free(), or NULL when out of memory. */
tls_link *tls_link_new(const tls_context *t, int fd, const char *host, const char *server_name);

/* Sends close_notify if the link is up and the socket takes it now (never
 * waits), and frees the link. NULL is allowed. */
void tls_link_free(tls_link *l);

/* The link's last error: what failed, in OpenSSL's words, with what
 * compactd knows of why (the CA trusted, the name checked). Borrowed. */
const char *tls_link_error(const tls_link *l);

/* Each call below does what the socket allows now and never waits. When it
 * cannot go on, it returns 0 with *events set to what to poll() the socket
 * for (POLLIN or POLLOUT) before calling again. */

/* Advances the handshake. Returns 1 when it is done, 0 (see above), or -1
 * when it failed (tls_link_error() says why). */
int tls_link_handshake(tls_link *l, short *events);

/* Writes buf[0..len): returns len once all of it is sent (or INT_MAX of
 * it, when len is larger), 0 (see above: part of it may be sent, and the
 * next call must pass the same bytes again, possibly with more after
 * them), or -1 when the connection failed. */
ssize_t tls_link_write(tls_link *l, const char *buf, size_t len, short *events);

/* Reads what has arrived, up to len bytes: returns how many (> 0), 0 (see
 * above), or -1 when the connection failed or Redis closed it. */
ssize_t tls_link_read(tls_link *l, char *buf, size_t len, short *events);

/* Whether a link with nothing due is fit for a command: 1 when nothing
 * waits on it (records that carry no data, such as session tickets, are
 * taken in), 0 when Redis closed it, it failed, or data waits that no
 * command asked for. */
int tls_link_idle_fit(tls_link *l);

#endif
