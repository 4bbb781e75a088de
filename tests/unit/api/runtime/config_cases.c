/* The settings table (api/runtime/config.c) on good and bad values: flags
 * in both spellings, environment variables under flags, every kind of
 * setting (integer, size, string, log level, switch) at and past its
 * bounds, the settings checked together, and the HTTP settings the
 * transport is started with (the proxy's pool sized by
 * COMPACTD_UPSTREAM_MAX_CONNECTIONS). */
#include "check.h"
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* No COMPACTD_* variable of the caller's may reach a case. */
static void clear_environment(void)
{
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++) {
            if (strncmp(*e, "COMPACTD_", 9) == 0) {
                char name[256];
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

/* Loads argv (NULL-ended, without the program name) under env ("NAME=value"
 * strings, NULL-ended; cleared after). */
static int load(config *cfg, const char *const *env, const char *const *args, char *err,
                size_t errlen)
{
    static char program[] = "compactd";
    char *argv[32] = {program};
    int argc = 1;
    for (; args && args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    for (const char *const *e = env; e && *e; e++) {
        char name[128];
        size_t n = strcspn(*e, "=");
        snprintf(name, sizeof(name), "%.*s", (int)n, *e);
        setenv(name, *e + n + 1, 1);
    }
    err[0] = '\0';
    int rc = config_load(cfg, argc, argv, err, errlen);
    clear_environment();
    return rc;
}

typedef struct {
    const char *name;
    const char *env[4];
    const char *args[8];
    const char *error; /* NULL: loads; else a part of its message */
} bad_case;

static const bad_case refused[] = {
    {"threads 0",
     {NULL},
     {"--threads", "0", NULL},
     "--threads: '0' is not an integer from 1 to 256"},
    {"threads past 256", {NULL}, {"--threads=257", NULL}, "from 1 to 256"},
    {"threads not a number", {"COMPACTD_THREADS=four", NULL}, {NULL}, "COMPACTD_THREADS: 'four'"},
    {"threads with a plus", {NULL}, {"--threads=+4", NULL}, "'+4' is not an integer"},
    {"threads with trailing text", {NULL}, {"--threads=4x", NULL}, "'4x' is not an integer"},
    {"empty number", {NULL}, {"--max-units=", NULL}, "'' is not an integer"},
    {"upstream pool of 0",
     {NULL},
     {"--upstream-max-connections", "0", NULL},
     "--upstream-max-connections: '0' is not an integer from 1 to 1024"},
    {"a size past its bound",
     {NULL},
     {"--max-body-bytes=4294967297", NULL},
     "from 1 to 4294967296"},
    {"log level", {NULL}, {"--log-level=verbose", NULL}, "'verbose' is not one of debug, info"},
    {"switch", {"COMPACTD_UI=yes", NULL}, {NULL}, "COMPACTD_UI: 'yes' is not on or off"},
    {"unknown flag", {NULL}, {"--thread=4", NULL}, "unknown flag '--thread'"},
    {"a flag without its value", {NULL}, {"--threads", NULL}, "flag --threads needs a value"},
    {"a bare argument", {NULL}, {"threads", NULL}, "unexpected argument 'threads'"},
    {"listen without a port", {NULL}, {"--listen=localhost", NULL}, "is not host:port"},
    {"listen port past 65535", {NULL}, {"--listen=127.0.0.1:65536", NULL}, "is not host:port"},
    {"listen IPv6 without brackets' end", {NULL}, {"--listen=[::1:80", NULL}, "is not host:port"},
    {"in flight below the body",
     {NULL},
     {"--max-body-bytes=2048", "--max-inflight-bytes=1024", NULL},
     "COMPACTD_MAX_INFLIGHT_BYTES (1024) is smaller than COMPACTD_MAX_BODY_BYTES (2048)"},
    {"a client share past in flight",
     {NULL},
     {"--max-body-bytes=1024", "--max-inflight-bytes=4096", "--max-client-inflight-bytes=8192",
      NULL},
     "must be from COMPACTD_MAX_BODY_BYTES (1024) to COMPACTD_MAX_INFLIGHT_BYTES (4096)"},
    {"keys file missing",
     {NULL},
     {"--api-keys-file=/nonexistent/compactd-keys", NULL},
     "api keys file '/nonexistent/compactd-keys' cannot be read"},
};

static void refusals(void)
{
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        static config cfg;
        char err[512];
        int rc = load(&cfg, refused[i].env, refused[i].args, err, sizeof(err));
        check(rc == -1, "%s: loaded (rc %d)", refused[i].name, rc);
        check(strstr(err, refused[i].error) != NULL, "%s: error \"%s\", want \"%s\"",
              refused[i].name, err, refused[i].error);
    }
}

static void good_values(void)
{
    static config cfg;
    char err[512];
    /* Defaults. */
    check(load(&cfg, NULL, NULL, err, sizeof(err)) == 0, "defaults: %s", err);
    check(cfg.threads == 4 && cfg.proxy.max_connections == 16 && cfg.listen_port == 8080 &&
              strcmp(cfg.listen_host, "127.0.0.1") == 0 && cfg.log_level == LOG_INFO && cfg.ui,
          "defaults: threads %d upstream %d port %d", cfg.threads, cfg.proxy.max_connections,
          cfg.listen_port);
    /* The client share's default: 3/8 of in flight, at least twice the body. */
    check(cfg.max_client_inflight_bytes == 268435456u / 8 * 3, "client share %zu",
          cfg.max_client_inflight_bytes);

    /* A flag beats its variable, in both spellings, at the bounds. */
    static const char *const env[] = {"COMPACTD_THREADS=7", "COMPACTD_LOG_LEVEL=debug",
                                      "COMPACTD_UI=off", NULL};
    static const char *const args[] = {"--threads",
                                       "256",
                                       "--upstream-max-connections=1",
                                       "--listen=[::1]:0",
                                       "--max-body-bytes=1024",
                                       "--max-inflight-bytes=1024",
                                       NULL};
    check(load(&cfg, env, args, err, sizeof(err)) == 0, "good values: %s", err);
    check(cfg.threads == 256, "the flag over the variable: %d", cfg.threads);
    check(cfg.log_level == LOG_DEBUG && cfg.ui == 0, "variables applied");
    check(strcmp(cfg.listen_host, "::1") == 0 && cfg.listen_port == 0, "IPv6 listen %s:%d",
          cfg.listen_host, cfg.listen_port);
    check(cfg.max_client_inflight_bytes == 1024, "the share is at most all in flight: %zu",
          cfg.max_client_inflight_bytes);

    http_settings hs = config_http_settings(&cfg);
    check(hs.threads == 256 && hs.upstream_threads == 1 && hs.max_body_bytes == 1024 &&
              hs.max_inflight_bytes == 1024 && hs.max_client_inflight_bytes == 1024 &&
              hs.port == 0 && strcmp(hs.host, "::1") == 0,
          "http settings: threads %d upstream %d", hs.threads, hs.upstream_threads);

    /* The tokenizer is named by where it was set. */
    static const char *const tok[] = {"--tokenizer=o200k_base", NULL};
    check(load(&cfg, NULL, tok, err, sizeof(err)) == 0 &&
              strcmp(cfg.tokenizer, "o200k_base") == 0 &&
              strcmp(cfg.tokenizer_source, "--tokenizer") == 0,
          "tokenizer %s from %s", cfg.tokenizer, cfg.tokenizer_source);
}

int main(void)
{
    clear_environment();
    refusals();
    good_values();
    return check_done("config_cases");
}
