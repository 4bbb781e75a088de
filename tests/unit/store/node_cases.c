/* Log entries sent without waiting (store_event_defer()) on one handle are
 * in Redis before another handle of the process reads, deletes or commits
 * to their session, whatever order Redis serves its connections in. Against a real
 * redis-server of its own, stopped with SIGSTOP so that the entries queue:
 * when it resumes it serves each connection in turn, and a read sent on
 * another connection is served before entries it has not read yet (those
 * of a connection it has not even accepted, or past the first 16 KiB it
 * reads of one). */
#include "check.h"
#include "redis_proc.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redis_proc redis;

enum { ENTRIES = 200, ENTRY_BYTES = 1024 };

static store *open_store_timeout(int command_timeout_ms)
{
    store_config cfg = {.connect_timeout_ms = 500, .command_timeout_ms = command_timeout_ms};
    char url[64], err[128];
    redis_store_url(redis.port, url, sizeof(url), cfg.tls.ca_file, sizeof(cfg.tls.ca_file));
    if (store_config_parse_url(url, &cfg, err, sizeof(err)) != 0)
        fail("%s", err);
    return store_new(&cfg);
}

static store *open_store(void)
{
    return open_store_timeout(5000);
}

static void defer_entries(store *w, const char *ns, int count)
{
    static char entry[ENTRY_BYTES + 1];
    memset(entry, 'e', ENTRY_BYTES);
    int sent = 0;
    for (int i = 0; i < count; i++)
        sent += store_event_defer(w, ns, entry, ENTRY_BYTES) == 0;
    check(sent == count, "%s: %d of %d entries sent without waiting: %s", ns, sent, count,
          store_errstr(w));
}

static size_t log_length(store *s, const char *ns)
{
    store_event *ev = NULL;
    size_t n = 0;
    check(store_event_range(s, ns, NULL, 10 * ENTRIES, SIZE_MAX, &ev, &n) == 0, "%s: read: %s", ns,
          store_errstr(s));
    store_events_free(ev, n);
    return n;
}

typedef struct {
    store *s;
    const char *ns;
    int rc;
    size_t n;
    char errstr[256];
} reader;

/* Reads the session's log, as a request on another worker thread would. */
static void *read_log(void *arg)
{
    reader *r = arg;
    store_event *ev = NULL;
    r->rc = store_event_range(r->s, r->ns, NULL, 10 * ENTRIES, SIZE_MAX, &ev, &r->n);
    snprintf(r->errstr, sizeof(r->errstr), "%s", store_errstr(r->s));
    if (r->rc == 0)
        store_events_free(ev, r->n);
    return NULL;
}

/* Defers ENTRIES entries on a handle while Redis is stopped; a reader on
 * another handle, already connected, asks for the log before Redis
 * resumes, and must see them all. With the writer's connection opened while
 * Redis is stopped, Redis accepts it only once it resumes, after it has
 * served the reader's; with it open before, Redis reads 16 KiB of it per
 * turn and serves the reader's in between. */
static void test_read_sees_entries_sent_before_it(int writer_connected_before, const char *ns)
{
    store *w = open_store();
    reader r = {.s = open_store(), .ns = ns};
    check(!writer_connected_before || store_ping(w) == 0, "%s: the writer connects: %s", ns,
          store_errstr(w));
    check(store_ping(r.s) == 0, "%s: the reader connects: %s", ns, store_errstr(r.s));
    kill(redis.pid, SIGSTOP);
    defer_entries(w, ns, ENTRIES);
    pthread_t t;
    int started = pthread_create(&t, NULL, read_log, &r) == 0;
    check(started, "reader thread");
    redis_sleep_ms(300); /* the reader's question is on its way, or waiting */
    kill(redis.pid, SIGCONT);
    if (started)
        pthread_join(t, NULL);
    check(started && r.rc == 0, "%s: the read answers: %s", ns, r.errstr);
    check(started && r.n == ENTRIES, "%s: the read saw %zu of the %d entries sent before it", ns,
          r.n, ENTRIES);
    store_free(w);
    store_free(r.s);
}

/* A session deleted after entries were sent stays deleted: the entries
 * land first, not after the delete (which would bring the log back). */
static void *delete_session(void *arg)
{
    reader *r = arg;
    r->rc = store_session_delete(r->s, r->ns);
    snprintf(r->errstr, sizeof(r->errstr), "%s", store_errstr(r->s));
    return NULL;
}

static void test_delete_after_entries_stays_deleted(void)
{
    store *w = open_store();
    reader r = {.s = open_store(), .ns = "t:deleted"};
    check(store_ping(r.s) == 0, "the deleter connects: %s", store_errstr(r.s));
    kill(redis.pid, SIGSTOP);
    defer_entries(w, r.ns, 5);
    pthread_t t;
    int started = pthread_create(&t, NULL, delete_session, &r) == 0;
    check(started, "deleter thread");
    redis_sleep_ms(300);
    kill(redis.pid, SIGCONT);
    if (started)
        pthread_join(t, NULL);
    check(started && r.rc == 0, "the delete answers: %s", r.errstr);
    check(store_ping(w) == 0, "the writer's replies are read: %s", store_errstr(w));
    check(log_length(r.s, r.ns) == 0, "the deleted session's log came back");
    store_free(w);
    store_free(r.s);
}

/* A commit on another handle, after entries were sent: its entry lands
 * after them in the session's log, as the compactions happened. */
typedef struct {
    store *s;
    const char *ns;
    int rc;
    char errstr[256];
} committer;

static const char COMMITTED[] = "{\"committed\":true}";

static void *commit_entry(void *arg)
{
    committer *c = arg;
    char sha256[65];
    memset(sha256, 'a', 64);
    sha256[64] = '\0';
    store_spill spill = {.key = "k",
                         .key_len = 1,
                         .cls = "protected",
                         .tokens = 2,
                         .sha256 = sha256,
                         .text = "spilled",
                         .text_len = 7};
    c->rc = store_commit(c->s, c->ns, &spill, 1, "2026-12-07T00:00:00Z", COMMITTED,
                         sizeof(COMMITTED) - 1);
    snprintf(c->errstr, sizeof(c->errstr), "%s", store_errstr(c->s));
    return NULL;
}

static void test_commit_lands_after_entries_sent_before_it(void)
{
    store *w = open_store();
    committer c = {.s = open_store(), .ns = "t:commit-after"};
    check(store_ping(c.s) == 0, "the committer connects: %s", store_errstr(c.s));
    kill(redis.pid, SIGSTOP);
    defer_entries(w, c.ns, ENTRIES);
    pthread_t t;
    int started = pthread_create(&t, NULL, commit_entry, &c) == 0;
    check(started, "committer thread");
    redis_sleep_ms(300);
    kill(redis.pid, SIGCONT);
    if (started)
        pthread_join(t, NULL);
    check(started && c.rc == 0, "the commit answers: %s", c.errstr);
    store_event *ev = NULL;
    size_t n = 0;
    check(store_event_range(c.s, c.ns, NULL, 10 * ENTRIES, SIZE_MAX, &ev, &n) == 0, "read: %s",
          store_errstr(c.s));
    check(n == ENTRIES + 1, "the log holds %zu entries, not %d", n, ENTRIES + 1);
    size_t at = n;
    for (size_t i = 0; i < n; i++)
        if (ev[i].data_len == sizeof(COMMITTED) - 1 &&
            memcmp(ev[i].data, COMMITTED, ev[i].data_len) == 0)
            at = i;
    check(at == ENTRIES,
          "the commit's entry is at place %zu of the log, before entries sent "
          "ahead of it",
          at);
    store_events_free(ev, n);
    store_free(w);
    store_free(c.s);
}

/* A Redis that stays stopped: the read answers an error naming the
 * entries it waited for, within its timeout, instead of a log without
 * them. */
static void test_read_fails_while_entries_stay_unanswered(void)
{
    store *w = open_store(), *s = open_store_timeout(300);
    const char *ns = "t:stays-stopped";
    check(store_ping(s) == 0, "the reader connects: %s", store_errstr(s));
    kill(redis.pid, SIGSTOP);
    defer_entries(w, ns, 1);
    store_event *ev = NULL;
    size_t n = 0;
    int rc = store_event_range(s, ns, NULL, 10, SIZE_MAX, &ev, &n);
    kill(redis.pid, SIGCONT);
    check(rc == -1, "a read with an entry unanswered answers %d", rc);
    check(strstr(store_errstr(s), "log entries sent earlier") != NULL, "the error: %s",
          store_errstr(s));
    check(log_length(s, ns) == 1, "once Redis resumes, the entry is read");
    store_free(w);
    store_free(s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int up = redis_start(&redis, 0) == 0;
    check(up, "redis-server starts");
    if (up) {
        test_read_sees_entries_sent_before_it(0, "t:new-conn");
        test_read_sees_entries_sent_before_it(1, "t:open-conn");
        test_delete_after_entries_stays_deleted();
        test_commit_lands_after_entries_sent_before_it();
        test_read_fails_while_entries_stay_unanswered();
    }
    redis_stop(&redis);
    return check_done("node_cases");
}
