/* A spill this process saw acknowledged is committed again without its
 * text, and never at the cost of the text: when the text is not in Redis
 * (removed behind compactd's back, its session deleted, a hint that is
 * wrong), the commit sends it whole and it is there to read. Against a real
 * redis-server of its own. */
#include "check.h"
#include "known_spills.h"
#include "layout.h"
#include "redis_proc.h"
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redis_proc redis;

enum { BIG = 200 << 10 };
static char big[BIG + 1];

static store *open_store(void)
{
    store_config cfg = {.connect_timeout_ms = 500, .command_timeout_ms = 2000};
    char url[64], err[128];
    redis_store_url(redis.port, url, sizeof(url), cfg.tls.ca_file, sizeof(cfg.tls.ca_file));
    if (store_config_parse_url(url, &cfg, err, sizeof(err)) != 0)
        fail("%s", err);
    return store_new(&cfg);
}

/* What Redis has read from its clients so far, from INFO stats. */
static long long input_bytes(void)
{
    const char *args[] = {"INFO", "stats", NULL};
    char *out = redis_cli(&redis, args);
    const char *at = out ? strstr(out, "total_net_input_bytes:") : NULL;
    long long v = at ? strtoll(at + strlen("total_net_input_bytes:"), NULL, 10) : -1;
    free(out);
    return v;
}

static store_spill spill_of(const char *key, const char *sha, const char *text)
{
    return (store_spill){key, strlen(key), "protected", 7, sha, text, strlen(text), NULL, 0};
}

/* Commits sp with a log entry, under a commit name of its own. */
static int commit(store *s, const char *ns, const store_spill *sp, const char *name)
{
    return store_commit_keyed(s, ns, sp, 1, "2026-01-01T00:00:00.000Z", "{}", 2, name, 0);
}

static int reads_whole(store *s, const char *ns, const store_spill *sp)
{
    store_record r;
    int got = store_spill_get(s, ns, sp->key, sp->key_len, sp->sha256, &r);
    int same = got == 1 && r.text_len == sp->text_len && memcmp(r.text, sp->text, r.text_len) == 0;
    if (got == 1)
        store_record_clear(&r);
    return same;
}

static void test_known_text_is_not_sent_again(store *s)
{
    char sha[65];
    memset(sha, 'a', 64);
    sha[64] = '\0';
    store_spill sp = spill_of("big", sha, big);
    check(commit(s, "t:known", &sp, "first000000000000") == 0, "first: %s", store_errstr(s));
    long long before = input_bytes();
    check(commit(s, "t:known", &sp, "second00000000000") == 0, "second: %s", store_errstr(s));
    long long sent = input_bytes() - before;
    /* The INFO command itself and the script's other arguments: far less
     * than the text's 200 KiB. */
    check(before >= 0 && sent > 0 && sent < 8 * 1024,
          "the second commit sent %lld bytes for a %d-byte text already stored", sent, BIG);
    check(reads_whole(s, "t:known", &sp), "the text reads back whole");
}

static void test_text_removed_behind_our_back(store *s)
{
    char sha[65];
    memset(sha, 'b', 64);
    sha[64] = '\0';
    store_spill sp = spill_of("gone", sha, "the text that was removed");
    check(commit(s, "t:gone", &sp, "first000000000000") == 0, "first: %s", store_errstr(s));
    size_t flen;
    char *field = layout_field(sha, "gone", 4, &flen);
    char *printable = field ? strndup(field, flen) : NULL;
    const char *hdel[] = {"HDEL", "compactd:{t:gone}:text", printable, NULL};
    check(printable && redis_cli_is(&redis, hdel, "1"), "the text removed in Redis");
    check(commit(s, "t:gone", &sp, "second00000000000") == 0, "again: %s", store_errstr(s));
    check(reads_whole(s, "t:gone", &sp), "the text sent again is there");
    free(field);
    free(printable);
}

static void test_session_deleted(store *s)
{
    char sha[65];
    memset(sha, 'c', 64);
    sha[64] = '\0';
    store_spill sp = spill_of("del", sha, "a text of a deleted session");
    check(commit(s, "t:del", &sp, "first000000000000") == 0, "first: %s", store_errstr(s));
    check(store_session_delete(s, "t:del") == 0, "delete: %s", store_errstr(s));
    check(commit(s, "t:del", &sp, "first000000000000") == 0, "after delete: %s", store_errstr(s));
    check(reads_whole(s, "t:del", &sp), "the text is back after the session was deleted");
}

static void test_wrong_hint(store *s)
{
    char sha[65];
    memset(sha, 'd', 64);
    sha[64] = '\0';
    store_spill sp = spill_of("hint", sha, "never stored before");
    size_t flen;
    char *field = layout_field(sha, "hint", 4, &flen);
    check(field != NULL, "field");
    known_spills_add("t:hint", field, flen);
    check(commit(s, "t:hint", &sp, "first000000000000") == 0, "commit: %s", store_errstr(s));
    check(reads_whole(s, "t:hint", &sp), "a spill the hint wrongly knew is stored whole");
    free(field);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    memset(big, 'x', BIG);
    if (redis_start(&redis, 0) != 0) {
        fprintf(stderr, "redis-server did not start\n");
        redis_stop(&redis);
        return 1;
    }
    store *s = open_store();
    check(s != NULL, "store");
    if (s) {
        test_known_text_is_not_sent_again(s);
        test_text_removed_behind_our_back(s);
        test_session_deleted(s);
        test_wrong_hint(s);
        store_free(s);
    }
    redis_stop(&redis);
    return check_done("known_spills_cases");
}
