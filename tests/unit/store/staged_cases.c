/* Large commits in pieces against a real redis-server: no script runs
 * long, a commit that fails leaves nothing, and no reader ever sees part
 * of one, whoever finishes merging it. */
#include "check.h"
#include "redis_proc.h"
#include "store.h"

#include <hiredis/hiredis.h>

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

static redis_proc redis;

/* How a large commit is held to short scripts: by the work each script
 * does, not by milliseconds. Redis's slow log counts wall time, which a
 * loaded machine stretches (on two busy cores one 128-spill script was seen
 * to take 1 s, while the same one takes 1-20 ms when the machine is idle),
 * so no bound in time tells a short script from a long one there. What
 * makes each script short is that the commit runs one to stage and one to
 * merge each piece of at most LAYOUT_PIECE_SPILLS spills (store/layout.h:
 * 128), where the single script such a commit used to be did it all. */
enum { PIECE_SPILLS = 128 };

static store_config config(int timeout_ms)
{
    store_config cfg = {.connect_timeout_ms = 1000, .command_timeout_ms = timeout_ms};
    char url[64], err[128];
    redis_store_url(redis.port, url, sizeof(url), cfg.tls.ca_file, sizeof(cfg.tls.ca_file));
    if (store_config_parse_url(url, &cfg, err, sizeof(err)) != 0)
        fail("%s", err);
    return cfg;
}

static redisContext *raw(void)
{
    redisContext *c = redisConnect("127.0.0.1", redis.port);
    if (!c || c->err) {
        fail("connect: %s", c ? c->errstr : "out of memory");
        exit(1);
    }
    return c;
}

/* The integer reply of a command, or -1. */
static long long number(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

static void ok(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);
    check(r && r->type != REDIS_REPLY_ERROR, "%s: %s", cmd, r ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
}

/* Keys of the session whose name contains part. */
static long long keys_like(redisContext *c, const char *ns, const char *part)
{
    redisReply *r = redisCommand(c, "KEYS compactd:{%s}:*%s*", ns, part);
    long long n = r && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

/* n spills "<prefix>-<i>", text bytes each, digests from seed. */
typedef struct {
    store_spill *sp;
    char (*keys)[32], (*shas)[65], *text;
    size_t n;
} batch;

static batch batch_make(const char *prefix, size_t n, size_t text, unsigned seed)
{
    batch b = {calloc(n, sizeof(store_spill)), calloc(n, 32), calloc(n, 65), malloc(text), n};
    memset(b.text, 'a' + (char)(seed % 26), text);
    for (size_t i = 0; i < n; i++) {
        snprintf(b.keys[i], 32, "%s-%zu", prefix, i);
        snprintf(b.shas[i], 65, "%08x%056zx", seed, i);
        b.sp[i] = (store_spill){
            b.keys[i], strlen(b.keys[i]), "protected", 7, b.shas[i], b.text, text, NULL, 0};
    }
    return b;
}

static void batch_free(batch *b)
{
    free(b->sp);
    free(b->keys);
    free(b->shas);
    free(b->text);
}

/* The scripts Redis ran since CONFIG RESETSTAT: how many, and their time
 * in microseconds (EVAL and EVALSHA in INFO commandstats). */
static void script_stats(redisContext *c, long long *calls, long long *usec)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    check(r && r->type == REDIS_REPLY_STRING, "INFO commandstats");
    for (const char *name = "cmdstat_eval:"; r && r->str; name = "cmdstat_evalsha:") {
        const char *at = strstr(r->str, name);
        long long n = 0, us = 0;
        if (at && sscanf(at + strlen(name), "calls=%lld,usec=%lld", &n, &us) == 2) {
            *calls += n;
            *usec += us;
        }
        if (strcmp(name, "cmdstat_evalsha:") == 0)
            break;
    }
    if (r)
        freeReplyObject(r);
}

/* ---- No script runs long ---- */

static void test_no_long_script(void)
{
    redisContext *c = raw();
    /* Commands inside scripts are logged too: only what took over 1 ms. */
    ok(c, "CONFIG SET slowlog-log-slower-than 1000");
    ok(c, "CONFIG SET slowlog-max-len 100000");
    ok(c, "SLOWLOG RESET");
    ok(c, "CONFIG RESETSTAT");
    /* The largest request compactd takes: 100,000 spills, 28 MiB. */
    batch b = batch_make("unit", 100000, 280, 1);
    store_config cfg = config(60000);
    store *s = store_new(&cfg);
    check(store_commit(s, "t:slow", b.sp, b.n, "2026-01-01T00:00:00.000Z", "{}", 2) == 0, "%s",
          store_errstr(s));
    redisReply *log = redisCommand(c, "SLOWLOG GET 100000");
    long long longest = 0, entries = 0;
    char what[64] = "";
    for (size_t i = 0; log && log->type == REDIS_REPLY_ARRAY && i < log->elements; i++) {
        redisReply *e = log->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4 || e->element[3]->elements == 0)
            continue;
        long long us = e->element[2]->integer;
        const redisReply *cmd = e->element[3]->element[0];
        if (strncasecmp(cmd->str, "SLOWLOG", 7) == 0 || strncasecmp(cmd->str, "CONFIG", 6) == 0)
            continue;
        entries++;
        if (us > longest) {
            longest = us;
            snprintf(what, sizeof(what), "%.*s", (int)cmd->len, cmd->str);
        }
    }
    if (log)
        freeReplyObject(log);
    long long scripts = 0, script_us = 0;
    script_stats(c, &scripts, &script_us);
    printf("100,000 spills: %lld scripts (%.1f ms in all), %lld commands over 1 ms, the longest "
           "%.2f ms (%s)\n",
           scripts, script_us / 1000.0, entries, longest / 1000.0, what);
    /* A staged commit leaves its marker. */
    check(keys_like(c, "t:slow", "stage:") == 1, "not staged");
    int pieces = (100000 + PIECE_SPILLS - 1) / PIECE_SPILLS;
    check(scripts >= 2 * pieces, "%lld scripts for %d pieces staged and merged", scripts, pieces);
    check(number(c, "HLEN compactd:{t:slow}:meta") == 100000, "spills visible");
    check(number(c, "EXISTS compactd:{t:slow}:pending") == 0, "still pending");
    ok(c, "CONFIG SET slowlog-log-slower-than 10000");
    check(store_session_delete(s, "t:slow") == 0, "%s", store_errstr(s));
    store_free(s);
    batch_free(&b);
    redisFree(c);
}

/* ---- A failed commit leaves nothing ---- */

static void test_failed_commit_leaves_nothing(void)
{
    redisContext *c = raw();
    redisReply *info = redisCommand(c, "INFO memory");
    const char *used = info && info->str ? strstr(info->str, "used_memory:") : NULL;
    long long now = used ? strtoll(used + 12, NULL, 10) : 0;
    if (info)
        freeReplyObject(info);
    check(now > 0, "used_memory not found");
    /* Room for a few pieces, not for 28 MiB: staging fails part way. */
    redisReply *r = redisCommand(c, "CONFIG SET maxmemory %lld", now + (6ll << 20));
    check(r && r->type == REDIS_REPLY_STATUS, "maxmemory");
    if (r)
        freeReplyObject(r);
    batch b = batch_make("unit", 100000, 280, 2);
    store_config cfg = config(5000);
    store *s = store_new(&cfg);
    int rc = store_commit(s, "t:oom", b.sp, b.n, "2026-01-01T00:00:00.000Z", "{}", 2);
    printf("commit past maxmemory: %s (%s)\n", rc == 0 ? "written" : "failed", store_errstr(s));
    check(rc != 0 && store_err(s) != STORE_ERR_UNKNOWN, "answered %d: %s", rc, store_errstr(s));
    check(number(c, "HLEN compactd:{t:oom}:meta") == 0 &&
              number(c, "HLEN compactd:{t:oom}:text") == 0,
          "a failed commit left spills");
    check(number(c, "XLEN compactd:{t:oom}:events") == 0, "a failed commit left its entry");
    check(keys_like(c, "t:oom", "") == 0, "a failed commit left %lld keys",
          keys_like(c, "t:oom", ""));
    ok(c, "CONFIG SET maxmemory 0");
    check(store_commit(s, "t:oom", b.sp, b.n, "2026-01-01T00:00:00.000Z", "{}", 2) == 0, "%s",
          store_errstr(s));
    check(number(c, "HLEN compactd:{t:oom}:meta") == 100000, "the retry is whole");
    check(store_session_delete(s, "t:oom") == 0, "%s", store_errstr(s));
    store_free(s);
    batch_free(&b);
    redisFree(c);
}

/* ---- A commit published and not merged ---- */

/* A committer frozen between publishing and merging (as one that crashed
 * there would be): the next reader merges the commit and sees it whole. */
static void test_reader_finishes_the_merge(void)
{
    batch b = batch_make("unit", 30000, 100, 3);
    int caught = 0;
    for (int attempt = 0; attempt < 5 && !caught; attempt++) {
        char ns[32];
        snprintf(ns, sizeof(ns), "t:frozen-%d", attempt);
        redisContext *c = raw();
        pid_t child = fork();
        if (child == 0) {
            store_config cfg = config(20000);
            store *mine = store_new(&cfg);
            _exit(store_commit(mine, ns, b.sp, b.n, "2026-01-01T00:00:00.000Z", "{}", 2) == 0 ? 0
                                                                                              : 1);
        }
        /* Freeze it as soon as its commit is published. */
        while (number(c, "EXISTS compactd:{%s}:pending", ns) != 1 &&
               waitpid(child, NULL, WNOHANG) == 0)
            ;
        kill(child, SIGSTOP);
        redisReply *p = redisCommand(c, "GET compactd:{%s}:pending", ns);
        unsigned total = 0, left = 0;
        if (p && p->type == REDIS_REPLY_STRING)
            sscanf(p->str, "%*s %*s %u %u", &total, &left);
        if (p)
            freeReplyObject(p);
        long long merged_before = number(c, "HLEN compactd:{%s}:meta", ns);
        if (left > 0) {
            caught = 1;
            printf("frozen with %u of %u pieces left, %lld spills merged\n", left, total,
                   merged_before);
            store_config cfg = config(20000);
            store *s = store_new(&cfg);
            store_record *recs = NULL;
            size_t n = 0;
            check(store_spill_list(s, ns, &recs, &n) == 0, "%s", store_errstr(s));
            check(n == b.n, "the reader saw %zu of %zu spills", n, b.n);
            store_records_free(recs, n);
            store_record one;
            check(store_spill_get(s, ns, b.keys[b.n - 1], strlen(b.keys[b.n - 1]), NULL, &one) == 1,
                  "the last spill");
            store_record_clear(&one);
            check(number(c, "EXISTS compactd:{%s}:pending", ns) == 0, "pending after the read");
            check(number(c, "XLEN compactd:{%s}:events", ns) == 1, "one log entry");
            check(store_session_delete(s, ns) == 0, "%s", store_errstr(s));
            store_free(s);
        }
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        redisFree(c);
    }
    check(caught, "the committer was never caught between publishing and merging");
    batch_free(&b);
}

/* ---- Readers and writers at once ---- */

enum { ROUNDS = 12, LARGE = 700 };

static atomic_int writers_done;
static atomic_long partial_views, views, small_failed, large_failed;

static void *large_writer(void *arg)
{
    (void)arg;
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    for (int i = 0; i < ROUNDS; i++) {
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "L%02d", i);
        batch b = batch_make(prefix, LARGE, 64, 100 + (unsigned)i);
        if (store_commit(s, "t:race", b.sp, b.n, "2026-01-01T00:00:00.000Z", "{}", 2) != 0)
            atomic_fetch_add(&large_failed, 1);
        batch_free(&b);
    }
    store_free(s);
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

static void *small_writer(void *arg)
{
    (void)arg;
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    for (int i = 0; i < 10 * ROUNDS; i++) {
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "S%03d", i);
        batch b = batch_make(prefix, 3, 16, 1000 + (unsigned)i);
        if (store_commit(s, "t:race", b.sp, b.n, "2026-01-01T00:00:00.000Z", "{}", 2) != 0)
            atomic_fetch_add(&small_failed, 1);
        batch_free(&b);
    }
    store_free(s);
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

/* Lists the session until the writers are done: every large commit must
 * show all of its spills or none. */
static void *reader(void *arg)
{
    (void)arg;
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    while (atomic_load(&writers_done) < 2) {
        store_record *recs;
        size_t n;
        if (store_spill_list(s, "t:race", &recs, &n) != 0)
            continue;
        int per[ROUNDS] = {0};
        for (size_t i = 0; i < n; i++)
            if (recs[i].key[0] == 'L')
                per[atoi(recs[i].key + 1)]++;
        for (int i = 0; i < ROUNDS; i++)
            if (per[i] != 0 && per[i] != LARGE)
                atomic_fetch_add(&partial_views, 1);
        atomic_fetch_add(&views, 1);
        store_records_free(recs, n);
    }
    store_free(s);
    return NULL;
}

static void test_readers_see_all_or_nothing(void)
{
    pthread_t t[3];
    pthread_create(&t[0], NULL, large_writer, NULL);
    pthread_create(&t[1], NULL, small_writer, NULL);
    pthread_create(&t[2], NULL, reader, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("concurrent: %ld listings, %ld saw part of a commit\n", atomic_load(&views),
           atomic_load(&partial_views));
    check(atomic_load(&views) > 0, "no listing");
    check(atomic_load(&partial_views) == 0, "%ld listings saw part of a commit",
          atomic_load(&partial_views));
    check(atomic_load(&large_failed) == 0 && atomic_load(&small_failed) == 0,
          "%ld large and %ld small commits failed", atomic_load(&large_failed),
          atomic_load(&small_failed));
    redisContext *c = raw();
    check(number(c, "HLEN compactd:{t:race}:meta") == ROUNDS * LARGE + 10 * ROUNDS * 3,
          "every acknowledged spill is there");
    check(number(c, "XLEN compactd:{t:race}:events") == ROUNDS + 10 * ROUNDS,
          "one log entry per commit");
    ok(c, "DEL compactd:{t:race}:text compactd:{t:race}:meta compactd:{t:race}:events");
    redisFree(c);
}

/* ---- The spill order across both kinds of commit ---- */

static void test_newest_across_kinds(void)
{
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    batch large = batch_make("bulk", 600, 32, 7), small = batch_make("x", 1, 8, 8);
    /* The large commit's first spill and the small one's share a key. */
    snprintf(large.keys[0], 32, "same");
    large.sp[0].key_len = 4;
    snprintf(small.keys[0], 32, "same");
    small.sp[0].key_len = 4;
    const char *order[] = {"large", "small", "large", "small", "large"};
    for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++) {
        const batch *b = order[i][0] == 'l' ? &large : &small;
        check(store_commit(s, "t:order", b->sp, b->n, "t", "{}", 2) == 0, "%s", store_errstr(s));
        store_record r;
        check(store_spill_get(s, "t:order", "same", 4, NULL, &r) == 1, "%s", store_errstr(s));
        check(strcmp(r.sha256, b->shas[0]) == 0, "after the %s commit %zu: %.8s", order[i], i,
              r.sha256);
        store_record_clear(&r);
    }
    check(store_session_delete(s, "t:order") == 0, "%s", store_errstr(s));
    batch_free(&large);
    batch_free(&small);
    store_free(s);
}

/* ---- Attempts of one name ---- */

/* A piece another attempt of the same commit staged (and published) is
 * not this attempt's: a second attempt neither merges, deletes nor re-arms
 * it, whatever its name. */
static void test_attempts_do_not_share_pieces(void)
{
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    redisContext *c = raw();
    batch large = batch_make("A", 600, 64, 22);
    const char *name = "dddddddd00000000";
    ok(c, "HSET compactd:{t:attempts}:stage:dddddddd00000000:0 mine 1");
    check(store_commit_keyed(s, "t:attempts", large.sp, large.n, "t", "{}", 2, name, 0) == 0, "%s",
          store_errstr(s));
    check(number(c, "EXISTS compactd:{t:attempts}:stage:dddddddd00000000:0") == 1,
          "another attempt's piece was removed");
    check(number(c, "TTL compactd:{t:attempts}:stage:dddddddd00000000:0") == -1,
          "another attempt's piece was given an expiry");
    check(number(c, "HLEN compactd:{t:attempts}:meta") == 600, "spills");
    check(store_session_delete(s, "t:attempts") == 0, "%s", store_errstr(s));
    batch_free(&large);
    store_free(s);
    redisFree(c);
}

/* ---- Retries ---- */

/* A commit sent again under its name right after it writes no second log
 * entry, small or staged; another name does, and so does the same name
 * after another commit. */
static void test_retry_writes_once(void)
{
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    redisContext *c = raw();
    batch small = batch_make("r", 2, 16, 20), large = batch_make("R", 600, 64, 21);
    const struct {
        const batch *b;
        const char *key;
        long long entries;
    } steps[] = {
        {&small, "aaaaaaaa00000000", 1},
        {&small, "aaaaaaaa00000000", 1},
        {&small, "bbbbbbbb00000000", 2},
        {&large, "cccccccc00000000", 3},
        {&large, "cccccccc00000000", 3},
        {&small, NULL, 4},
        {&small, NULL, 5},
        /* Not right after the first: a commit again. */
        {&small, "aaaaaaaa00000000", 6},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++) {
        check(store_commit_keyed(s, "t:retry", steps[i].b->sp, steps[i].b->n, "t", "{}", 2,
                                 steps[i].key, 0) == 0,
              "%s", store_errstr(s));
        long long got = number(c, "XLEN compactd:{t:retry}:events");
        check(got == steps[i].entries, "step %zu: %lld entries, expected %lld", i, got,
              steps[i].entries);
    }
    check(number(c, "HLEN compactd:{t:retry}:meta") == 602, "spills");
    /* The staged retry's own pieces went; only the first one's marker stays. */
    check(keys_like(c, "t:retry", "stage:") == 1, "%lld staging keys left",
          keys_like(c, "t:retry", "stage:"));
    check(store_session_delete(s, "t:retry") == 0, "%s", store_errstr(s));
    batch_free(&small);
    batch_free(&large);
    redisFree(c);
    store_free(s);
}

/* A name whose first 8 digits name an Idempotency-Key's scope is held
 * across later commits, small, staged or without spills: sent again after others it writes
 * nothing, and the scope with other content is a conflict that writes
 * nothing. Dropping the session drops what it held. */
static void test_keys_held_across_commits(void)
{
    store_config cfg = config(20000);
    store *s = store_new(&cfg);
    redisContext *c = raw();
    batch small = batch_make("k", 2, 16, 30), other = batch_make("o", 2, 16, 31),
          large = batch_make("K", 600, 64, 32), none = batch_make("n", 0, 1, 33);
    const struct {
        const batch *b;
        const char *key;
        int keyed, conflict;
        long long entries;
    } steps[] = {
        {&small, "eeeeeeee11111111", 1, 0, 1},
        {&large, "ffffffff11111111", 1, 0, 2},
        {&other, "0000000011111111", 0, 0, 3},
        /* Both keys' retries after other commits: nothing written. */
        {&small, "eeeeeeee11111111", 1, 0, 3},
        {&large, "ffffffff11111111", 1, 0, 3},
        /* A key reused for other content, small or staged: refused. */
        {&other, "eeeeeeee22222222", 1, 1, 3},
        {&large, "eeeeeeee33333333", 1, 1, 3},
        {&other, "ffffffff22222222", 1, 1, 3},
        /* Unkeyed, the same name after another commit is a commit again. */
        {&other, "0000000011111111", 0, 0, 3},
        {&small, "1111111100000000", 0, 0, 4},
        {&other, "0000000011111111", 0, 0, 5},
        /* A keyed commit that spills nothing holds its key as well. */
        {&none, "abababab11111111", 1, 0, 6},
        {&none, "abababab11111111", 1, 0, 6},
        {&other, "abababab22222222", 1, 1, 6},
        {&none, "abababab33333333", 1, 1, 6},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++) {
        long long meta = number(c, "HLEN compactd:{t:keys}:meta");
        int rc = store_commit_keyed(s, "t:keys", steps[i].b->sp, steps[i].b->n, "t", "{}", 2,
                                    steps[i].key, steps[i].keyed);
        if (steps[i].conflict) {
            check(rc != 0 && store_err(s) == STORE_ERR_CONFLICT, "step %zu: %d %s", i, rc,
                  store_errstr(s));
            check(number(c, "HLEN compactd:{t:keys}:meta") == meta, "step %zu wrote spills", i);
        } else {
            check(rc == 0, "step %zu: %s", i, store_errstr(s));
        }
        long long got = number(c, "XLEN compactd:{t:keys}:events");
        check(got == steps[i].entries, "step %zu: %lld entries, expected %lld", i, got,
              steps[i].entries);
    }
    check(number(c, "HLEN compactd:{t:keys}:meta") == 604, "spills");
    check(store_session_delete(s, "t:keys") == 0, "%s", store_errstr(s));
    check(number(c, "EXISTS compactd:{t:keys}:commits") == 0, "the commits' names outlived it");
    batch_free(&small);
    batch_free(&other);
    batch_free(&large);
    batch_free(&none);
    redisFree(c);
    store_free(s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (redis_start(&redis, 0) != 0) {
        fprintf(stderr, "redis-server did not start\n");
        redis_stop(&redis);
        return 1;
    }
    test_no_long_script();
    test_newest_across_kinds();
    test_reader_finishes_the_merge();
    test_readers_see_all_or_nothing();
    test_failed_commit_leaves_nothing();
    test_retry_writes_once();
    test_keys_held_across_commits();
    test_attempts_do_not_share_pieces();
    redis_stop(&redis);
    return check_done("staged_cases");
}
