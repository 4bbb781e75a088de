/* The slow-client watchdog, which holds every request and response to a
 * deadline, and the connection limit over all of libmicrohttpd's threads. */
#include "http_internal.h"

#include "ticker.h"

#include <stdlib.h>
#include <sys/socket.h>

/* The socket context of a connection that is counted but not watched (out
 * of memory): MHD's idle timeout still applies to it. */
char http_unwatched;

conn_watch *http_watch_of(void *socket_context)
{
    return socket_context == &http_unwatched ? NULL : socket_context;
}

/* Starts the connection's deadline over: the next request, or the response
 * just queued, must be through within the connection timeout. */
void http_arm(conn_watch *w)
{
    if (!w)
        return;
    atomic_store(&w->since_ms, ticker_now_ms());
    atomic_store(&w->armed, 1);
}

/* ---- Slow clients ---- */

/* libmicrohttpd's connection timeout counts from the last byte received, so a
 * client that sends a byte a second holds a connection for ever (slowloris,
 * and its slow-body variant), and one that reads a byte a second holds a
 * large response as long. The watchdog holds every request to a deadline
 * instead: headers and body must have arrived within the connection timeout
 * of the end of the previous request on that connection (or of its accept),
 * and a response must have been taken in full within the connection timeout
 * of being queued. A late connection is cut with shutdown(2), which MHD then sees as a client
 * gone; the descriptor stays MHD's to close, and the entry leaves the list
 * (under the lock) before MHD closes it. */

void http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    http_server *s = cls;
    conn_watch *w;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->open, 1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        w = ci ? calloc(1, sizeof(*w)) : NULL;
        if (!w) {
            *socket_context = &http_unwatched;
            return;
        }
        w->fd = ci->connect_fd;
        http_arm(w);
        pthread_mutex_lock(&s->watch_lock);
        w->next = s->watched;
        if (s->watched)
            s->watched->prev = w;
        s->watched = w;
        pthread_mutex_unlock(&s->watch_lock);
        *socket_context = w;
        return;
    }
    if (!*socket_context)
        return; /* never started */
    atomic_fetch_sub(&s->open, 1);
    w = http_watch_of(*socket_context);
    *socket_context = NULL;
    if (!w)
        return;
    pthread_mutex_lock(&s->watch_lock);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->watched = w->next;
    if (w->next)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&s->watch_lock);
    free(w);
}

#define WATCH_TICK_MS 200

/* A response must leave at an even pace that would take it all within the
 * connection timeout, after a first second: a reader that falls behind is
 * cut as soon as it does, not at the deadline, so that a large answer read
 * slowly holds its share of the budget no longer than a body sent as
 * slowly would (a body holds only what has arrived). */
#define PACE_GRACE_MS 1000

static int behind_pace(conn_watch *w, int64_t elapsed_ms, int64_t timeout_ms)
{
    size_t len = atomic_load(&w->out_len);
    if (len == 0 || elapsed_ms <= PACE_GRACE_MS)
        return 0;
    double due = (double)len * (double)(elapsed_ms - PACE_GRACE_MS) / (double)timeout_ms;
    return (double)atomic_load(&w->out_taken) < due;
}

static void *watchdog(void *arg)
{
    http_server *s = arg;
    pthread_mutex_lock(&s->watch_lock);
    while (!s->watch_stop) {
        ticker_wait(&s->watch_wake, &s->watch_lock, WATCH_TICK_MS);
        int64_t now = ticker_now_ms();
        for (conn_watch *w = s->watched; w; w = w->next)
            if (!w->cut && atomic_load(&w->armed) &&
                (now - atomic_load(&w->since_ms) > s->request_timeout_ms ||
                 behind_pace(w, now - atomic_load(&w->since_ms), s->request_timeout_ms))) {
                /* What is queued for a slow reader is dropped, not
                 * delivered at its pace: MHD's close then resets. */
                struct linger drop = {1, 0};
                setsockopt(w->fd, SOL_SOCKET, SO_LINGER, &drop, sizeof(drop));
                shutdown(w->fd, SHUT_RDWR);
                w->cut = 1;
            }
    }
    pthread_mutex_unlock(&s->watch_lock);
    return NULL;
}

int http_watchdog_start(http_server *s)
{
    if (ticker_cond_init(&s->watch_wake) != 0)
        return -1;
    if (pthread_mutex_init(&s->watch_lock, NULL) != 0) {
        pthread_cond_destroy(&s->watch_wake);
        return -1;
    }
    if (pthread_create(&s->watchdog, NULL, watchdog, s) != 0) {
        pthread_mutex_destroy(&s->watch_lock);
        pthread_cond_destroy(&s->watch_wake);
        return -1;
    }
    return 0;
}

void http_watchdog_stop(http_server *s)
{
    pthread_mutex_lock(&s->watch_lock);
    s->watch_stop = 1;
    pthread_cond_signal(&s->watch_wake);
    pthread_mutex_unlock(&s->watch_lock);
    pthread_join(s->watchdog, NULL);
    pthread_mutex_destroy(&s->watch_lock);
    pthread_cond_destroy(&s->watch_wake);
}

/* ---- Connection limit ---- */

/* MHD's own limit is split evenly over the worker threads and, once a
 * worker reaches its share, that worker stops accepting: connections then
 * wait unserved in the kernel's queue. Counted here over all workers, a
 * connection past the limit is closed at once instead, so a client knows.
 * MHD's limit is set one per thread above this one, so that some worker is
 * always still accepting. Workers accepting at the same moment can pass the
 * check together: the count may pass the limit by fewer than the number of
 * threads, briefly. */
MHD_Result_t http_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    http_server *s = cls;
    (void)addr;
    (void)addrlen;
    return atomic_load(&s->open) < s->max_connections ? MHD_YES : MHD_NO;
}
