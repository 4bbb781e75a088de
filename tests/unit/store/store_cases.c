/* The store against a real redis-server of its own: what each operation of
 * store.h promises, checked through the store and through redis-cli. */
#include "check.h"
#include "large_commit.h"
#include "redis_proc.h"
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redis_proc redis;

static store_config config_for_port(int port)
{
    store_config cfg = {.connect_timeout_ms = 500, .command_timeout_ms = 1000};
    char url[64], err[128];
    redis_store_url(port, url, sizeof(url), cfg.tls.ca_file, sizeof(cfg.tls.ca_file));
    if (store_config_parse_url(url, &cfg, err, sizeof(err)) != 0)
        fail("%s", err);
    return cfg;
}

static store_config config_for(const redis_proc *r)
{
    return config_for_port(r->port);
}

/* A digest of 64 hex digits: base (shorter than 64) padded with tail. */
static void digest(char out[65], const char *base, char tail)
{
    size_t n = strlen(base);
    memcpy(out, base, n);
    memset(out + n, tail, 64 - n);
    out[64] = '\0';
}

static int commit_one(store *s, const char *ns, const char *key, const char *sha, const char *text,
                      int64_t tokens, const char *created_at)
{
    store_spill sp = {key, strlen(key), "protected", tokens, sha, text, strlen(text), NULL, 0};
    return store_commit(s, ns, &sp, 1, created_at, NULL, 0);
}

/* ---- Helpers ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The number redis-cli prints for a command, or -1. */
static long long cli_number(const char *const *args)
{
    char *out = redis_cli(&redis, args);
    long long v = out && out[0] ? strtoll(out, NULL, 10) : -1;
    free(out);
    return v;
}

/* What redis-cli prints for "<cmd> <the session's key with suffix>". */
static long long session_number(const char *cmd, const char *ns, const char *suffix)
{
    char key[128];
    snprintf(key, sizeof(key), "compactd:{%s}:%s", ns, suffix);
    const char *args[] = {cmd, key, NULL};
    return cli_number(args);
}

static long long events_len(const char *ns)
{
    return session_number("XLEN", ns, "events");
}

static long long hash_len(const char *ns)
{
    return session_number("HLEN", ns, "text");
}

/* ---- Reads by digest prefix ---- */

static void test_prefix_read(void)
{
    store_config cfg = config_for(&redis);
    store *s = store_new(&cfg);
    char a[65], b[65], c[65], other[65];
    digest(a, "0123456789abcdef0000", '0');
    digest(b, "0123456789abcdef0000", '0');
    a[63] = '1';
    b[63] = '2'; /* shares 63 digits with a */
    digest(c, "fedcba9876543210", '3');
    digest(other, "0123456789abcdef0000", '4');

    check(commit_one(s, "t:p", "k", a, "text a", 10, "2026-01-01T00:00:00.000Z") == 0, "%s",
          store_errstr(s));
    check(commit_one(s, "t:p", "k", b, "text b", 20, "2026-01-01T00:00:01.000Z") == 0, "%s",
          store_errstr(s));
    check(commit_one(s, "t:p", "k", c, "text c", 30, "2026-01-01T00:00:02.000Z") == 0, "%s",
          store_errstr(s));
    /* Other keys whose digests match the prefix must never count. */
    check(commit_one(s, "t:p", "kk", other, "x", 1, "t") == 0, "%s", store_errstr(s));
    check(commit_one(s, "t:p", ":k", other, "x", 1, "t") == 0, "%s", store_errstr(s));
    check(commit_one(s, "t:p", "k*", other, "x", 1, "t") == 0, "%s", store_errstr(s));
    check(commit_one(s, "t:other", "k", other, "x", 1, "t") == 0, "%s", store_errstr(s));

    store_record r;
    char(*cands)[65] = (void *)1;
    size_t n = 99;

    /* A unique prefix: the whole record, as store_spill_get() gives it. */
    int rc = store_spill_get_prefix(s, "t:p", "k", 1, c, 16, &r, &cands, &n);
    check(rc == STORE_FOUND, "unique prefix: %d %s", rc, store_errstr(s));
    if (rc == STORE_FOUND) {
        check(strcmp(r.sha256, c) == 0 && r.text_len == 6 && memcmp(r.text, "text c", 6) == 0,
              "unique prefix read %s", r.sha256);
        check(r.tokens == 30 && strcmp(r.cls, "protected") == 0, "metadata");
        store_record_clear(&r);
    }
    check(cands == NULL && n == 0, "no candidates unless ambiguous");

    /* 16 and 63 shared digits: ambiguous, with both full digests sorted. */
    size_t lens[] = {16, 20, 63};
    for (size_t i = 0; i < 3; i++) {
        rc = store_spill_get_prefix(s, "t:p", "k", 1, a, lens[i], &r, &cands, &n);
        check(rc == STORE_AMBIGUOUS, "prefix of %zu: %d", lens[i], rc);
        check(n == 2 && cands && strcmp(cands[0], a) == 0 && strcmp(cands[1], b) == 0,
              "candidates of %zu: %zu", lens[i], n);
        free(cands);
    }
    /* All 64 digits, or 64 of which 63 are shared: exact. */
    rc = store_spill_get_prefix(s, "t:p", "k", 1, b, 64, &r, NULL, NULL);
    check(rc == STORE_FOUND && strcmp(r.text, "text b") == 0, "full digest: %d", rc);
    if (rc == STORE_FOUND)
        store_record_clear(&r);
    rc = store_spill_get_prefix(s, "t:p", "k", 1, a, 64, &r, NULL, NULL);
    check(rc == STORE_FOUND && strcmp(r.text, "text a") == 0, "full digest a: %d", rc);
    if (rc == STORE_FOUND)
        store_record_clear(&r);

    /* Digests only other keys (or sessions) have: not found. */
    const char *keys[] = {"k", "kk", ":k", "k*", "*", "?", "[k]"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
        int want = i == 0 ? STORE_NOT_FOUND : i <= 3 ? STORE_FOUND : STORE_NOT_FOUND;
        rc = store_spill_get_prefix(s, "t:p", keys[i], strlen(keys[i]), other, 40, &r, &cands, &n);
        check(rc == want, "key '%s' prefix of another key's digest: %d", keys[i], rc);
        if (rc == STORE_FOUND) {
            check(r.key_len == strlen(keys[i]) && memcmp(r.key, keys[i], r.key_len) == 0,
                  "read the key asked for");
            store_record_clear(&r);
        }
    }
    rc = store_spill_get_prefix(s, "t:none", "k", 1, a, 16, &r, &cands, &n);
    check(rc == STORE_NOT_FOUND, "empty session: %d", rc);

    /* Bad prefixes are the caller's mistake. */
    const char *bad[] = {"0123456789abcde", "0123456789ABCDEF", "0123456789abcdeg"};
    for (size_t i = 0; i < 3; i++) {
        rc = store_spill_get_prefix(s, "t:p", "k", 1, bad[i], strlen(bad[i]), &r, &cands, &n);
        check(rc == -1 && store_err(s) == STORE_ERR_INVALID, "bad prefix '%s': %d %d", bad[i], rc,
              store_err(s));
    }
    char long_prefix[66];
    memcpy(long_prefix, a, 64);
    strcpy(long_prefix + 64, "1");
    rc = store_spill_get_prefix(s, "t:p", "k", 1, long_prefix, 65, &r, &cands, &n);
    check(rc == -1 && store_err(s) == STORE_ERR_INVALID, "65 digits: %d", rc);
    store_free(s);
}

/* A session large enough for HSCAN to page (and Redis to use a real hash
 * table): the match is found whatever page it is on. */
static void test_prefix_read_pages(void)
{
    store_config cfg = config_for(&redis);
    store *s = store_new(&cfg);
    enum { N = 5000 };
    store_spill *sp = calloc(N, sizeof(*sp));
    char(*keys)[16] = calloc(N, 16), (*shas)[65] = calloc(N, 65);
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], 16, "key-%zu", i);
        snprintf(shas[i], 65, "%064zx", i * 7919);
        sp[i] = (store_spill){keys[i], strlen(keys[i]), "protected", 1, shas[i], "t", 1, NULL, 0};
    }
    check(store_commit(s, "t:big", sp, N, "2026-01-01T00:00:00.000Z", NULL, 0) == 0, "%s",
          store_errstr(s));
    for (size_t i = 0; i < N; i += 977) {
        store_record r;
        int rc = store_spill_get_prefix(s, "t:big", keys[i], strlen(keys[i]), shas[i], 64, &r, NULL,
                                        NULL);
        check(rc == STORE_FOUND && strcmp(r.sha256, shas[i]) == 0, "paged read %zu: %d", i, rc);
        if (rc == STORE_FOUND)
            store_record_clear(&r);
    }
    free(sp);
    free(keys);
    free(shas);
    store_free(s);
}

static void test_prefix_read_store_down(void)
{
    store_config cfg = config_for_port(redis_free_port());
    store *s = store_new(&cfg);
    store_record r;
    char a[65];
    digest(a, "", '0');
    int rc = store_spill_get_prefix(s, "t:p", "k", 1, a, 16, &r, NULL, NULL);
    check(rc == -1 && store_err(s) == STORE_ERR_IO, "store down: %d %d", rc, store_err(s));
    store_free(s);
}

/* ---- Metadata ---- */

/* A unit's metadata is stored with its spill, spaces and all, and read back
 * by every read; a spill without metadata reads back without it. */
static void test_metadata_round_trip(void)
{
    static const char meta[] = "{\"role\":\"tool\",\"note\":\"a b  c\"}";
    store_config cfg = config_for(&redis);
    store *s = store_new(&cfg);
    char a[65], b[65];
    digest(a, "aa", '1');
    digest(b, "bb", '2');
    store_spill sp[2] = {{"m", 1, "protected", 5, a, "with", 4, meta, sizeof(meta) - 1},
                         {"n", 1, "derivable", 6, b, "without", 7, NULL, 0}};
    check(store_commit(s, "t:meta", sp, 2, "2026-01-01T00:00:00.000Z", NULL, 0) == 0, "%s",
          store_errstr(s));
    store_record r;
    check(store_spill_get(s, "t:meta", "m", 1, a, &r) == 1, "read m: %s", store_errstr(s));
    check(r.metadata && r.metadata_len == sizeof(meta) - 1 && strcmp(r.metadata, meta) == 0,
          "metadata read back: %s", r.metadata ? r.metadata : "(none)");
    check(strcmp(r.created_at, "2026-01-01T00:00:00.000Z") == 0 && r.tokens == 5,
          "the fields before it: %s %lld", r.created_at, (long long)r.tokens);
    store_record_clear(&r);
    check(store_spill_get(s, "t:meta", "n", 1, NULL, &r) == 1, "read n: %s", store_errstr(s));
    check(!r.metadata && strcmp(r.created_at, "2026-01-01T00:00:00.000Z") == 0,
          "no metadata, created_at whole");
    store_record_clear(&r);
    store_record *list;
    size_t n = 0;
    check(store_spill_list(s, "t:meta", &list, &n) == 0 && n == 2, "list: %zu", n);
    for (size_t i = 0; i < n; i++)
        check((list[i].key[0] == 'm') == (list[i].metadata != NULL), "listed metadata of %s",
              list[i].key);
    store_records_free(list, n);

    /* Spilled again with other metadata, after another version: the one
     * read, with its first spill's metadata. */
    static const char other_meta[] = "{\"role\":\"user\"}";
    store_spill again = {"m", 1, "protected", 9, a, "with", 4, other_meta, sizeof(other_meta) - 1};
    char c[65];
    digest(c, "cc", '3');
    store_spill between = {"m", 1, "protected", 7, c, "between", 7, NULL, 0};
    check(store_commit(s, "t:meta", &between, 1, "2026-01-01T00:00:01.000Z", "{}", 2) == 0 &&
              store_commit(s, "t:meta", &again, 1, "2026-01-01T00:00:02.000Z", "{}", 2) == 0,
          "%s", store_errstr(s));
    check(store_spill_get(s, "t:meta", "m", 1, NULL, &r) == 1, "read m: %s", store_errstr(s));
    check(strcmp(r.sha256, a) == 0 && r.tokens == 5 && r.metadata &&
              strcmp(r.metadata, meta) == 0 &&
              strcmp(r.created_at, "2026-01-01T00:00:00.000Z") == 0,
          "re-spilled: %.8s %lld %s", r.sha256, (long long)r.tokens,
          r.metadata ? r.metadata : "(none)");
    store_record_clear(&r);
    store_free(s);
}

/* ---- Spill order ---- */

static void check_newest(store *s, const char *ns, const char *want_sha, int64_t want_tokens,
                         const char *want_created, const char *what)
{
    store_record r;
    int rc = store_spill_get(s, ns, "k", 1, NULL, &r);
    check(rc == 1, "%s: %d %s", what, rc, store_errstr(s));
    if (rc != 1)
        return;
    check(strcmp(r.sha256, want_sha) == 0, "%s: read %.8s, want %.8s", what, r.sha256, want_sha);
    check(r.tokens == want_tokens && strcmp(r.created_at, want_created) == 0,
          "%s: metadata %lld %s", what, (long long)r.tokens, r.created_at);
    store_record_clear(&r);
}

static int commit_logged(store *s, const char *ns, const char *sha, int64_t tokens,
                         const char *created_at, int with_event)
{
    store_spill sp = {"k", 1, "protected", tokens, sha, "text", 4, NULL, 0};
    return store_commit(s, ns, &sp, 1, created_at, with_event ? "{}" : NULL, with_event ? 2 : 0);
}

/* The version read without a digest is the one spilled last, whatever the
 * clocks of the compactd that spilled them said; its metadata is its first
 * spill's. With and without a log entry in the commit. */
static void test_newest_is_last_spilled(void)
{
    store_config cfg = config_for(&redis);
    store *s = store_new(&cfg);
    char a[65], b[65], c[65], d[65];
    digest(a, "aa", '0');
    digest(b, "bb", '0');
    digest(c, "cc", '0');
    digest(d, "dd", '0');
    for (int with_event = 1; with_event >= 0; with_event--) {
        const char *ns = with_event ? "t:order" : "t:order-quiet";
        check(commit_logged(s, ns, a, 10, "2026-01-01T00:00:01.000Z", with_event) == 0, "%s",
              store_errstr(s));
        redis_sleep_ms(2);
        check(commit_logged(s, ns, b, 20, "2026-01-01T00:00:02.000Z", with_event) == 0, "%s",
              store_errstr(s));
        check_newest(s, ns, b, 20, "2026-01-01T00:00:02.000Z", "B after A");
        redis_sleep_ms(2);
        /* A again: the newest once more, with its first spill's metadata. */
        check(commit_logged(s, ns, a, 30, "2026-01-01T00:00:03.000Z", with_event) == 0, "%s",
              store_errstr(s));
        check_newest(s, ns, a, 10, "2026-01-01T00:00:01.000Z", "A re-spilled after B");
        redis_sleep_ms(2);
        /* A replica whose clock runs behind spills D after C. */
        check(commit_logged(s, ns, c, 40, "2026-01-01T00:00:09.000Z", with_event) == 0, "%s",
              store_errstr(s));
        redis_sleep_ms(2);
        check(commit_logged(s, ns, d, 50, "2026-01-01T00:00:05.000Z", with_event) == 0, "%s",
              store_errstr(s));
        check_newest(s, ns, d, 50, "2026-01-01T00:00:05.000Z", "D after C, earlier clock");

        store_record *list;
        size_t n;
        check(store_spill_list(s, ns, &list, &n) == 0 && n == 4, "listing: %zu versions", n);
        if (n == 4)
            check(strcmp(list[0].sha256, a) == 0 && list[0].tokens == 10 &&
                      strcmp(list[0].created_at, "2026-01-01T00:00:01.000Z") == 0,
                  "first listed: %.8s %s", list[0].sha256, list[0].created_at);
        store_records_free(list, n);
    }
    store_free(s);
}

/* ---- Session delete ---- */

static void test_delete_unlinks(void)
{
    store_config cfg = config_for(&redis);
    store *s = store_new(&cfg);
    char a[65];
    digest(a, "de1", '0');
    check(commit_logged(s, "t:del", a, 1, "t", 1) == 0, "%s", store_errstr(s));
    const char *reset[] = {"CONFIG", "RESETSTAT", NULL};
    check(redis_cli_is(&redis, reset, "OK"), "resetstat");
    check(store_session_delete(s, "t:del") == 0, "%s", store_errstr(s));
    char *stats = redis_cli(&redis, (const char *const[]){"INFO", "commandstats", NULL});
    check(stats && strstr(stats, "cmdstat_unlink:calls=1,") && !strstr(stats, "cmdstat_del:"),
          "deleted with UNLINK, not DEL: %s", stats ? stats : "(no stats)");
    free(stats);
    const char *exists[] = {"EXISTS", "compactd:{t:del}:text", "compactd:{t:del}:meta",
                            "compactd:{t:del}:events", NULL};
    check(redis_cli_is(&redis, exists, "0"), "every key of the session gone");
    store_free(s);
}

/* ---- Existence of many spills ---- */

/* Bytes waiting unread in the receive queues of Redis's side of its
 * connections (from /proc/net/tcp), or -1. */
static long redis_unread_bytes(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    long total = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned local_port, st;
        unsigned long tx, rx;
        if (sscanf(line, " %*d: %*8x:%x %*8x:%*x %x %lx:%lx", &local_port, &st, &tx, &rx) == 4 &&
            (int)local_port == port && st == 1 /* ESTABLISHED */)
            total += (long)rx;
    }
    fclose(f);
    return total;
}

static void test_exists_many(void)
{
    store_config cfg = config_for(&redis);
    store *s = store_new(&cfg);
    enum { N = 3000 };
    store_spill *sp = calloc(N, sizeof(*sp));
    store_spill_ref *refs = calloc(N, sizeof(*refs));
    char(*keys)[24] = calloc(N, 24), (*shas)[65] = calloc(N, 65);
    unsigned char *found = calloc(N, 1);
    size_t n_stored = 0;
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], 24, "key-%zu", i);
        snprintf(shas[i], 65, "%064zx", i);
        refs[i] = (store_spill_ref){keys[i], strlen(keys[i]), shas[i]};
        if (i % 3 != 0) /* every third does not exist */
            sp[n_stored++] =
                (store_spill){keys[i], strlen(keys[i]), "protected", 1, shas[i], "t", 1, NULL, 0};
    }
    /* The right digest under another key does not count. */
    refs[1].key = "key-2";
    refs[1].key_len = 5;
    check(store_commit(s, "t:many", sp, n_stored, "t", "{}", 2) == 0, "%s", store_errstr(s));
    check(store_spill_exists_many(s, "t:many", refs, N, found) == 0, "%s", store_errstr(s));
    size_t wrong = 0;
    for (size_t i = 0; i < N; i++)
        wrong += found[i] != (i % 3 != 0 && i != 1);
    check(wrong == 0, "%zu of %d answers wrong", wrong, N);
    check(store_spill_exists_many(s, "t:many", refs, 0, found) == 0, "an empty batch");
    check(store_spill_exists(s, "t:many", keys[2], strlen(keys[2]), shas[2]) == 1 &&
              store_spill_exists(s, "t:many", keys[3], strlen(keys[3]), shas[3]) == 0,
          "one at a time");

    /* One round trip: with Redis stopped, every command of the batch is
     * already in its socket before any reply could have come. */
    pid_t child = fork();
    if (child == 0) {
        /* Time enough for a busy machine: the parent holds Redis stopped
         * until it has seen the batch arrive. */
        store_config patient = config_for(&redis);
        patient.command_timeout_ms = 20000;
        store *mine = store_new(&patient);
        check(store_ping(mine) == 0, "%s", store_errstr(mine));
        kill(getpid(), SIGSTOP); /* until the parent has stopped Redis */
        if (store_spill_exists_many(mine, "t:many", refs, N, found) == 0)
            _exit(0);
        fprintf(stderr, "batch: %s\n", store_errstr(mine));
        _exit(1);
    }
    waitpid(child, NULL, WUNTRACED);
    kill(redis.pid, SIGSTOP);
    kill(child, SIGCONT);
    long unread = 0;
    for (int i = 0; i < 50 && unread < 100000; i++) {
        redis_sleep_ms(20);
        unread = redis_unread_bytes(redis.port);
    }
    kill(redis.pid, SIGCONT);
    int status = 0;
    waitpid(child, &status, 0);
    check(unread >= 100000, "%ld bytes of the batch waited in Redis's socket at once", unread);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the batch after Redis resumed");

    free(sp);
    free(refs);
    free(keys);
    free(shas);
    free(found);
    store_free(s);
}

/* ---- Large commits ---- */

static void test_large_commit_answers_truly(void)
{
    store_config cfg = config_for(&redis);
    const large_commit_counts count = {hash_len, events_len};
    large_commit_answers_truly(&cfg, &count);
}

/* ---- Deferred commands ---- */

/* A log entry sent without waiting never waits, whether the connection is
 * up with replies due, or not up at all, while Redis is stopped; the
 * entries land once it runs again. */
static void test_defer_never_waits_for_a_stopped_redis(void)
{
    store_config cfg = config_for(&redis);
    store *warm = store_new(&cfg), *cold = store_new(&cfg);
    check(store_event_append(warm, "t:defer", "first", 5) == 0, "%s", store_errstr(warm));
    long long before = events_len("t:defer");

    kill(redis.pid, SIGSTOP);
    double worst = 0;
    int sent = 0;
    for (int i = 0; i < 20; i++) {
        char entry[32];
        int len = snprintf(entry, sizeof(entry), "entry %d", i);
        double t0 = now_s();
        sent += store_event_defer(i % 2 ? warm : cold, "t:defer", entry, (size_t)len) == 0;
        double took = now_s() - t0;
        worst = took > worst ? took : worst;
    }
    /* A command that needs Redis still waits for it, up to its timeout. */
    store *other = store_new(&cfg);
    double t0 = now_s();
    check(store_ping(other) != 0, "ping of a stopped Redis");
    double ping_took = now_s() - t0;
    store_free(other);
    kill(redis.pid, SIGCONT);

    check(worst < 0.05, "a deferred entry waited %.3f s for a stopped Redis", worst);
    check(sent == 20, "%d of 20 entries sent or queued", sent);
    /* At the command timeout; over TLS at the connect timeout, as the
     * handshake, which needs Redis, is part of connecting. */
    double gives_up = (redis_tls_dir() ? cfg.connect_timeout_ms : cfg.command_timeout_ms) / 1000.0;
    check(ping_took > gives_up * 0.9 && ping_took < 2.0, "ping gave up after %.3f s", ping_took);
    /* The next command on each handle reads the replies due first. */
    check(store_ping(warm) == 0 && store_ping(cold) == 0, "%s %s", store_errstr(warm),
          store_errstr(cold));
    check(events_len("t:defer") == before + 20, "%lld entries after %lld", events_len("t:defer"),
          before);
    store_free(warm);
    store_free(cold);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (redis_start(&redis, 0) != 0) {
        fprintf(stderr, "redis-server did not start\n");
        redis_stop(&redis);
        return 1;
    }
    test_prefix_read();
    test_prefix_read_pages();
    test_prefix_read_store_down();
    test_metadata_round_trip();
    test_defer_never_waits_for_a_stopped_redis();
    test_newest_is_last_spilled();
    test_delete_unlinks();
    test_exists_many();
    test_large_commit_answers_truly();
    redis_stop(&redis);
    return check_done("store_cases");
}
