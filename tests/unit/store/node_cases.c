/* Log entries sent without waiting (store_event_defer()) on one handle are
 * in Redis before another handle of the process reads, deletes, commits
 * to or sends the next entry of their session, whatever order Redis serves its connections in.
 * Against a real redis-server of its own, stopped with SIGSTOP so that the entries queue: when it
 * resumes it serves each connection in turn, and a read sent on another connection is served before
 * entries it has not read yet (those of a connection it has not even accepted, or past the first 16
 * KiB it reads of one). */
#include "check.h"
#include "redis_proc.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redis_proc redis;

enum { ENTRIES = 200, ENTRY_BYTES = 1024 };

static store *open_store_on(const redis_proc *r, int command_timeout_ms)
{
    store_config cfg = {.connect_timeout_ms = 500, .command_timeout_ms = command_timeout_ms};
    char url[64], err[128];
    redis_store_url(r->port, url, sizeof(url), cfg.tls.ca_file, sizeof(cfg.tls.ca_file));
    if (store_config_parse_url(url, &cfg, err, sizeof(err)) != 0)
        fail("%s", err);
    return store_new(&cfg);
}

static store *open_store_timeout(int command_timeout_ms)
{
    return open_store_on(&redis, command_timeout_ms);
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

/* Where the entry with text `text` is in ns's log (n: not there), read
 * through s, which must see count entries. */
static size_t place_in_log(store *s, const char *ns, const char *text, size_t count)
{
    store_event *ev = NULL;
    size_t n = 0, at;
    check(store_event_range(s, ns, NULL, 10 * ENTRIES, SIZE_MAX, &ev, &n) == 0, "read: %s",
          store_errstr(s));
    check(n == count, "the log holds %zu entries, not %zu", n, count);
    for (at = 0; at < n; at++)
        if (ev[at].data_len == strlen(text) && memcmp(ev[at].data, text, ev[at].data_len) == 0)
            break;
    store_events_free(ev, n);
    return at;
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
} second_writer;

static const char COMMITTED[] = "{\"committed\":true}";

static void *commit_entry(void *arg)
{
    second_writer *c = arg;
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

/* The next entry of the session, sent without waiting on another handle:
 * it lands after them too. */
static const char LATER[] = "{\"later\":true}";

static void *defer_later(void *arg)
{
    second_writer *c = arg;
    c->rc = store_event_defer(c->s, c->ns, LATER, sizeof(LATER) - 1);
    snprintf(c->errstr, sizeof(c->errstr), "%s", store_errstr(c->s));
    return NULL;
}

/* ENTRIES entries of c's session sent without waiting on one handle while
 * Redis is stopped; then, on another handle already connected, write()
 * in a thread of its own, which Redis answers once it resumes. Its entry,
 * `text`, must land last. With unrelated_ns, an entry of that session
 * sent first on the second handle must go without waiting. */
static void check_lands_after(second_writer *c, void *(*write)(void *), const char *text,
                              const char *unrelated_ns)
{
    store *w = open_store();
    c->s = open_store();
    check(store_ping(c->s) == 0, "%s: the second handle connects: %s", c->ns, store_errstr(c->s));
    kill(redis.pid, SIGSTOP);
    defer_entries(w, c->ns, ENTRIES);
    check(!unrelated_ns || store_event_defer(c->s, unrelated_ns, text, strlen(text)) == 0,
          "%s: another session's entry is sent without waiting, Redis stopped: %s", c->ns,
          store_errstr(c->s));
    pthread_t t;
    int started = pthread_create(&t, NULL, write, c) == 0;
    check(started, "%s: writer thread", c->ns);
    redis_sleep_ms(300);
    kill(redis.pid, SIGCONT);
    if (started)
        pthread_join(t, NULL);
    check(started && c->rc == 0, "%s: the write answers: %s", c->ns, c->errstr);
    size_t at = place_in_log(c->s, c->ns, text, ENTRIES + 1);
    check(at == ENTRIES,
          "%s: the entry is at place %zu of the log, before entries sent ahead of it", c->ns, at);
    store_free(w);
    store_free(c->s);
}

static void test_commit_lands_after_entries_sent_before_it(void)
{
    second_writer c = {.ns = "t:commit-after"};
    check_lands_after(&c, commit_entry, COMMITTED, NULL);
}

static void test_next_entry_lands_after_entries_sent_before_it(void)
{
    second_writer c = {.ns = "t:defer-after"};
    check_lands_after(&c, defer_later, LATER, "t:defer-other");
}

/* Four threads, each with its handle, send the entries of four sessions
 * one after another, each entry of a session on another thread than the
 * one before it (as a session's compactions land on any worker): every
 * session's log holds its entries in the order they were sent, with
 * Redis stopped for 20 ms every 5 ms so that replies are owed when the
 * next entry goes. */
enum { CHAIN_THREADS = 4, CHAIN_SESSIONS = 4, CHAIN_ENTRIES = 150 };

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t turn_changed;
    int turn, failed;
} chain;

typedef struct {
    chain *ch;
    int thread;
} chain_writer;

static void chain_ns(int session, char *ns, size_t len)
{
    snprintf(ns, len, "t:chain-%d", session);
}

static void *chain_write(void *arg)
{
    chain_writer *cw = arg;
    chain *ch = cw->ch;
    store *s = open_store();
    for (int turn = 0; turn < CHAIN_SESSIONS * CHAIN_ENTRIES; turn++) {
        int session = turn % CHAIN_SESSIONS, k = turn / CHAIN_SESSIONS;
        if ((k + session) % CHAIN_THREADS != cw->thread)
            continue;
        pthread_mutex_lock(&ch->lock);
        while (ch->turn != turn && !ch->failed)
            pthread_cond_wait(&ch->turn_changed, &ch->lock);
        pthread_mutex_unlock(&ch->lock);
        char ns[32], entry[32];
        chain_ns(session, ns, sizeof(ns));
        snprintf(entry, sizeof(entry), "%d", k);
        int rc = store_event_defer(s, ns, entry, strlen(entry));
        pthread_mutex_lock(&ch->lock);
        ch->failed |= rc != 0;
        ch->turn++;
        pthread_cond_broadcast(&ch->turn_changed);
        pthread_mutex_unlock(&ch->lock);
    }
    store_free(s);
    return NULL;
}

static void *chain_stall(void *arg)
{
    chain *ch = arg;
    for (;;) {
        pthread_mutex_lock(&ch->lock);
        int over = ch->turn >= CHAIN_SESSIONS * CHAIN_ENTRIES || ch->failed;
        pthread_mutex_unlock(&ch->lock);
        if (over)
            return NULL;
        kill(redis.pid, SIGSTOP);
        redis_sleep_ms(20);
        kill(redis.pid, SIGCONT);
        redis_sleep_ms(5);
    }
}

static void test_entries_sent_one_after_another_on_many_handles_stay_in_order(void)
{
    chain ch = {.turn = 0};
    pthread_mutex_init(&ch.lock, NULL);
    pthread_cond_init(&ch.turn_changed, NULL);
    chain_writer cw[CHAIN_THREADS];
    pthread_t t[CHAIN_THREADS], stall;
    int started = 0, stalling = pthread_create(&stall, NULL, chain_stall, &ch) == 0;
    for (int i = 0; i < CHAIN_THREADS; i++) {
        cw[i] = (chain_writer){&ch, i};
        started += pthread_create(&t[i], NULL, chain_write, &cw[i]) == 0;
    }
    check(started == CHAIN_THREADS && stalling, "threads start");
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    if (stalling)
        pthread_join(stall, NULL);
    check(!ch.failed, "every entry is sent");
    store *r = open_store();
    for (int session = 0; session < CHAIN_SESSIONS; session++) {
        char ns[32];
        chain_ns(session, ns, sizeof(ns));
        store_event *ev = NULL;
        size_t n = 0, in_order = 0;
        check(store_event_range(r, ns, NULL, 2 * CHAIN_ENTRIES, SIZE_MAX, &ev, &n) == 0,
              "%s: read: %s", ns, store_errstr(r));
        for (size_t i = 0; i < n; i++) {
            char want[32];
            int len = snprintf(want, sizeof(want), "%zu", i);
            in_order += ev[i].data_len == (size_t)len && memcmp(ev[i].data, want, (size_t)len) == 0;
        }
        check(n == CHAIN_ENTRIES && in_order == n, "%s: %zu entries, %zu of them in place", ns, n,
              in_order);
        store_events_free(ev, n);
    }
    store_free(r);
    pthread_cond_destroy(&ch.turn_changed);
    pthread_mutex_destroy(&ch.lock);
}

/* A process with stores on two Redis servers: a session's entry on the
 * second never joins its entries still unanswered on the first. */
static void test_entries_stay_on_their_redis(void)
{
    redis_proc other = {0};
    int up = redis_start(&other, 0) == 0;
    check(up, "a second redis-server starts");
    if (!up)
        return;
    store *first = open_store(), *second = open_store_on(&other, 5000);
    const char *ns = "t:two-redis";
    check(store_ping(first) == 0 && store_ping(second) == 0, "both connect");
    kill(redis.pid, SIGSTOP);
    defer_entries(first, ns, 1);
    int sent = store_event_defer(second, ns, LATER, sizeof(LATER) - 1) == 0;
    kill(redis.pid, SIGCONT);
    check(sent, "the second Redis's entry is sent: %s", store_errstr(second));
    check(place_in_log(second, ns, LATER, 1) == 0, "the entry is in the second Redis's log");
    check(log_length(first, ns) == 1, "the first Redis holds its own entry only");
    store_free(first);
    store_free(second);
    redis_stop(&other);
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
        test_next_entry_lands_after_entries_sent_before_it();
        test_entries_sent_one_after_another_on_many_handles_stay_in_order();
        test_entries_stay_on_their_redis();
        test_read_fails_while_entries_stay_unanswered();
    }
    redis_stop(&redis);
    return check_done("node_cases");
}
