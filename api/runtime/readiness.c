/* Readiness probed in the background: a thread of its own pings Redis on
 * its own connection every READINESS_PROBE_MS, and /readyz reads the time of
 * the last answer. A ping that hangs (Redis stopped) only ages that time.
 * A request that fails on Redis marks the service not ready at once, until
 * the next probe or request that Redis answers. */
#include "readiness.h"

#include "session.h"
#include "ticker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define READINESS_PROBE_MS 200
/* Ready while the last answer is younger than this: several probes, so one
 * slow ping does not flap the answer. */
#define READINESS_STALE_MS 1000

static pthread_t prober;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards stop, first_done, last_error */
static pthread_cond_t wake;
static int stop;
static int first_done; /* the first probe has ended */
static char last_error[256];
static atomic_int_fast64_t last_answer_ms = -1; /* -1: never */
static atomic_int last_failed;                  /* the last ping that ended failed */

static void probe(void)
{
    compactd_error err = {ERR_NONE, "", ""};
    if (session_ready(&err) == 0) {
        atomic_store(&last_answer_ms, ticker_now_ms());
        atomic_store(&last_failed, 0);
        return;
    }
    pthread_mutex_lock(&lock);
    snprintf(last_error, sizeof(last_error), "%s", err.message);
    pthread_mutex_unlock(&lock);
    atomic_store(&last_failed, 1);
}

static void *probe_loop(void *arg)
{
    (void)arg;
    /* The first answer is there before readiness_start() returns; probing
     * here rather than on the caller's thread keeps the probe to one Redis
     * connection for the life of the process. */
    probe();
    pthread_mutex_lock(&lock);
    first_done = 1;
    pthread_cond_broadcast(&wake);
    while (!stop) {
        ticker_wait(&wake, &lock, READINESS_PROBE_MS);
        if (stop)
            break;
        pthread_mutex_unlock(&lock);
        probe();
        pthread_mutex_lock(&lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int readiness_start(void)
{
    if (ticker_cond_init(&wake) != 0)
        return -1;
    if (pthread_create(&prober, NULL, probe_loop, NULL) != 0) {
        pthread_cond_destroy(&wake);
        return -1;
    }
    pthread_mutex_lock(&lock);
    while (!first_done)
        pthread_cond_wait(&wake, &lock);
    pthread_mutex_unlock(&lock);
    return 0;
}

void readiness_stop(void)
{
    pthread_mutex_lock(&lock);
    stop = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(prober, NULL);
    pthread_cond_destroy(&wake);
}

int readiness_ready(char *why, size_t len)
{
    int64_t last = atomic_load(&last_answer_ms);
    int64_t age = ticker_now_ms() - last;
    int failed = atomic_load(&last_failed);
    char store_why[200];
    /* A request that just failed on Redis is news the probe may not have yet. */
    if (!failed && !session_store_healthy(store_why, sizeof(store_why))) {
        snprintf(why, len, "not ready: Redis failed a request: %s", store_why);
        return 0;
    }
    if (last >= 0 && age <= READINESS_STALE_MS && !failed)
        return 1;
    pthread_mutex_lock(&lock);
    if (failed) /* the store's own words: "not ready: Redis does not answer: ..." */
        snprintf(why, len, "%s", last_error);
    else if (last < 0)
        snprintf(why, len, "not ready: Redis has not answered since start-up");
    else
        snprintf(why, len, "not ready: Redis has not answered for %lld ms", (long long)age);
    pthread_mutex_unlock(&lock);
    return 0;
}
