/* compactd: start-up, signal handling and orderly shutdown. */
#include "config.h"
#include "digest_cache.h"
#include "dispatch.h"
#include "http_server.h"
#include "log_line.h"
#include "metrics.h"
#include "plan_memory.h"
#include "proxy.h"
#include "readiness.h"
#include "routes.h"
#include "session.h"
#include "tenants.h"
#include "tokenizer.h"

#include <jansson.h>

#include <malloc.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_BAD_CONFIG 2

/* Loads the rank files and sets the default encoding. Returns 0, or -1
 * when start-up must stop (said on stderr). */
static int load_tokenizers(const config *cfg)
{
    char err[512];
    /* A damaged rank file stops start-up: counting with it would be
     * silently wrong. A missing one leaves its encoding out: requests that
     * need it are refused with a 400 naming the file, "bytes" works. */
    if (tokenizer_load(cfg->ranks_dir, err, sizeof(err)) != 0) {
        log_line(LOG_ERROR, "%s (COMPACTD_RANKS_DIR: %s; scripts/run fetches them)", err,
                 cfg->ranks_dir);
        return -1;
    }
    char missing[1024];
    if (tokenizer_missing_list(missing, sizeof(missing)) > 0)
        log_line(LOG_WARN,
                 "rank files not found: %s; requests that count with these encodings (the "
                 "openai formats' own included) are refused until compactd starts with them "
                 "(COMPACTD_RANKS_DIR; scripts/run fetches them)",
                 missing);
    const char *default_missing = tokenizer_missing_file(cfg->tokenizer, strlen(cfg->tokenizer));
    if (default_missing) {
        log_line(LOG_ERROR, "%s: %s needs its rank file %s, which was not found",
                 cfg->tokenizer_source, cfg->tokenizer, default_missing);
        return -1;
    }
    const tokenizer *default_tokenizer = tokenizer_find(cfg->tokenizer, strlen(cfg->tokenizer));
    if (!default_tokenizer) {
        char names[128];
        tokenizer_names(names, sizeof(names));
        log_line(LOG_ERROR, "%s: '%s' is not a known encoding (%s)", cfg->tokenizer_source,
                 cfg->tokenizer, names);
        return -1;
    }
    tokenizer_set_default(default_tokenizer);
    return 0;
}

int main(int argc, char **argv)
{
    static config cfg;
    char err[512];
    int rc = config_load(&cfg, argc, argv, err, sizeof(err));
    if (rc == 1)
        return 0;
    if (rc != 0) {
        log_line(LOG_ERROR, "%s", err);
        return EXIT_BAD_CONFIG;
    }

    if (load_tokenizers(&cfg) != 0)
        return EXIT_BAD_CONFIG;

    app a = {&cfg, NULL, {cfg.allowed_hosts, cfg.allowed_origins, cfg.mcp_allowed_origins}};
    tenants *keys = NULL;
    if (cfg.api_keys_file[0]) {
        keys = tenants_load(cfg.api_keys_file, err, sizeof(err));
        if (!keys) {
            log_line(LOG_ERROR, "%s", err);
            return EXIT_BAD_CONFIG;
        }
        a.keys = keys;
    } else {
        log_line(LOG_WARN, "COMPACTD_API_KEYS_FILE is not set: serving one open tenant, no "
                           "authentication; only requests whose Host is a loopback name or "
                           "listed in COMPACTD_ALLOWED_HOSTS are answered");
    }
    if (cfg.redis.stop_at[0])
        log_line(LOG_WARN,
                 "COMPACTD_DEBUG_STOP_AT is set: this process stops itself (SIGSTOP) "
                 "when a large commit first reaches %s; for fault tests only",
                 cfg.redis.stop_at);

    /* A large request allocates and frees the same big blocks each time;
     * glibc would return them to the kernel (mmap above 128 KiB, trimming
     * the heap) and fault every page in again, which made time per unit grow
     * with the request. Keep them in the heap, up to 64 MiB free per arena. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);

    if (proxy_init(&cfg, err, sizeof(err)) != 0) {
        log_line(LOG_ERROR, "%s", err);
        tenants_free(keys);
        return EXIT_BAD_CONFIG;
    }
    plan_memory_configure(cfg.sticky_plans_bytes);
    digest_cache_configure(cfg.spill_digest_cache_bytes);
    if (metrics_init(&(metrics_routes){route_count(), route_pattern, route_metrics}) != 0) {
        log_line(LOG_ERROR, "out of memory");
        return 1;
    }
    /* Seed jansson's hash before any worker thread parses. */
    json_object_seed(0);
    if (session_store_init(&cfg.redis, err, sizeof(err)) != 0) {
        log_line(LOG_ERROR, "%s", err);
        return 1;
    }

    /* Workers inherit this mask: signals reach only the sigwait below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (readiness_start() != 0) {
        log_line(LOG_ERROR, "cannot start the readiness probe");
        tenants_free(keys);
        return 1;
    }
    http_handlers h = app_http_handlers(&a);
    http_settings hs = config_http_settings(&cfg);
    http_server *srv = http_server_start(&hs, &h, err, sizeof(err));
    if (!srv) {
        log_line(LOG_ERROR, "%s", err);
        readiness_stop();
        tenants_free(keys);
        return EXIT_BAD_CONFIG;
    }
    metrics_set_inflight_source(http_server_buffered_bytes, srv);
    char redis_shown[sizeof(cfg.redis.url) + 8];
    session_store_url_shown(&cfg.redis, redis_shown, sizeof(redis_shown));
    log_line(LOG_INFO, "listening on %s%s%s:%d (threads %d, redis %s, %s, rank files in %s)",
             strchr(cfg.listen_host, ':') ? "[" : "", cfg.listen_host,
             strchr(cfg.listen_host, ':') ? "]" : "", http_server_port(srv), cfg.threads,
             redis_shown, keys ? "api keys required" : "open tenant", cfg.ranks_dir);
    /* Started either way (Redis may come up later, /readyz says when), but
     * a store that does not answer now is said once, with why. */
    compactd_error store_err = {0};
    if (session_store_probe(&cfg.redis, &store_err) != 0)
        log_line(LOG_WARN, "%s; /readyz answers 503 until it does", store_err.message);

    int sig = 0;
    sigwait(&stop, &sig);
    log_line(LOG_INFO, "%s received, finishing requests in flight",
             sig == SIGTERM ? "SIGTERM" : "SIGINT");
    /* The whole stop fits in the shutdown timeout: a handler still waiting
     * on Redis when the drain ends holds the stop up to its timeouts. */
    long drain_ms = cfg.shutdown_timeout_s * 1000L - cfg.redis.connect_timeout_ms -
                    cfg.redis.command_timeout_ms;
    http_server_stop(srv, drain_ms > 0 ? (int)drain_ms : 0);
    readiness_stop();
    proxy_cleanup();
    tenants_free(keys);
    log_line(LOG_INFO, "stopped");
    return 0;
}
