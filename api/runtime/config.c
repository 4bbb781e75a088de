/* Configuration from one table of settings: each has a flag, an environment
 * variable, a default and a parser with bounds, so usage, defaults and
 * validation cannot drift apart. */
#include "config.h"

#include "tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { KIND_STRING, KIND_INT, KIND_SIZE, KIND_LOG_LEVEL, KIND_SWITCH } setting_kind;

typedef struct {
    const char *flag;
    const char *env;
    const char *def;
    setting_kind kind;
    long long min, max;
    size_t offset;
    size_t size; /* for strings: buffer size */
    const char *help;
} setting;

#define FIELD(f) offsetof(config, f), sizeof(((config *)0)->f)

static const setting settings[] = {
    {"listen", "COMPACTD_LISTEN", "127.0.0.1:8080", KIND_STRING, 0, 0, FIELD(listen),
     "host:port to listen on ([::1]:port for IPv6; port 0 picks a free one)"},
    {"redis-url", "COMPACTD_REDIS_URL", "redis://127.0.0.1:6379/0", KIND_STRING, 0, 0,
     FIELD(redis.url),
     "redis://[[user]:password@]host:port/db, unix:///path/to.sock or "
     "redis+cluster://host:port,host:port/; rediss:// and rediss+cluster:// over TLS"},
    {"threads", "COMPACTD_THREADS", "4", KIND_INT, 1, 256, FIELD(threads),
     "worker threads, each with its own Redis connection"},
    {"max-body-bytes", "COMPACTD_MAX_BODY_BYTES", "33554432", KIND_SIZE, 1, 1LL << 32,
     FIELD(max_body_bytes), "largest request body; larger is 413"},
    {"max-inflight-bytes", "COMPACTD_MAX_INFLIGHT_BYTES", "268435456", KIND_SIZE, 1, 1LL << 40,
     FIELD(max_inflight_bytes),
     "bytes all request bodies and responses in flight may hold together; past it 503"},
    {"max-client-inflight-bytes", "COMPACTD_MAX_CLIENT_INFLIGHT_BYTES", "0", KIND_SIZE, 0,
     1LL << 40, FIELD(max_client_inflight_bytes),
     "bytes one request's body and answer may hold of COMPACTD_MAX_INFLIGHT_BYTES (0: 3/8 of it, "
     "at least twice COMPACTD_MAX_BODY_BYTES, at most all of it); an answer that would pass it is "
     "413"},
    {"mcp-max-batch", "COMPACTD_MCP_MAX_BATCH", "64", KIND_INT, 1, 10000, FIELD(mcp_max_batch),
     "most messages in one JSON-RPC batch on /mcp; a larger batch is 400"},
    {"mcp-batch-ms", "COMPACTD_MCP_BATCH_MS", "5000", KIND_INT, 1, 600000, FIELD(mcp_batch_ms),
     "milliseconds after which a JSON-RPC batch starts no more of its messages (each left is "
     "answered error -32002)"},
    {"max-units", "COMPACTD_MAX_UNITS", "100000", KIND_SIZE, 1, 10000000, FIELD(limits.max_units),
     "most units in one request"},
    {"max-key-bytes", "COMPACTD_MAX_KEY_BYTES", "256", KIND_SIZE, 1, UNIT_KEY_MAX_BYTES,
     FIELD(limits.max_key_bytes), "longest unit key in bytes"},
    {"max-text-bytes", "COMPACTD_MAX_TEXT_BYTES", "16777216", KIND_SIZE, 1, 1LL << 32,
     FIELD(limits.max_text_bytes), "longest unit text, summary or hint in bytes"},
    {"max-verify-text-bytes", "COMPACTD_MAX_VERIFY_TEXT_BYTES", "8388608", KIND_SIZE, 1, 1LL << 32,
     FIELD(limits.max_verify_text_bytes),
     "most bytes of unit text in one verify, all units together"},
    {"compact-to-percent", "COMPACTD_COMPACT_TO_PERCENT", "45", KIND_INT, 1, 100,
     FIELD(limits.compact_to_percent),
     "a chat history that does not fit its budget whole is planned down to this share of the "
     "budget (or its required budget, if higher), so that the next turns append to a plan that "
     "stays; a request's compact_to overrides it"},
    {"sticky-plans-bytes", "COMPACTD_STICKY_PLANS_BYTES", "67108864", KIND_SIZE, 0, 1LL << 40,
     FIELD(sticky_plans_bytes),
     "memory for the sessions' last chat plans, which their next compactions extend (0: none "
     "kept, every plan fresh; 67108864 holds about six million messages' plans)"},
    {"spill-digest-cache-bytes", "COMPACTD_SPILL_DIGEST_CACHE_BYTES", "16777216", KIND_SIZE, 0,
     1LL << 40, FIELD(spill_digest_cache_bytes),
     "memory for the digests of texts spilled before, kept with a copy of each text so that one "
     "spilled again is not hashed again (0: none kept, every text hashed)"},
    {"max-connections", "COMPACTD_MAX_CONNECTIONS", "1024", KIND_INT, 1, 65536,
     FIELD(max_connections), "concurrent client connections"},
    {"connection-timeout", "COMPACTD_CONNECTION_TIMEOUT_S", "30", KIND_INT, 1, 3600,
     FIELD(connection_timeout_s), "seconds an idle or slow connection may stay open"},
    {"redis-connect-timeout-ms", "COMPACTD_REDIS_CONNECT_TIMEOUT_MS", "1000", KIND_INT, 1, 600000,
     FIELD(redis.connect_timeout_ms), "Redis connect timeout"},
    {"redis-timeout-ms", "COMPACTD_REDIS_TIMEOUT_MS", "2000", KIND_INT, 1, 600000,
     FIELD(redis.command_timeout_ms), "Redis command timeout"},
    {"redis-min-replicas", "COMPACTD_REDIS_MIN_REPLICAS", "0", KIND_INT, 0, 16,
     FIELD(redis.min_replicas), "replicas that must hold a commit (WAIT) before it is answered"},
    {"redis-tls-ca-file", "COMPACTD_REDIS_TLS_CA_FILE", "", KIND_STRING, 0, 0,
     FIELD(redis.tls_ca_file),
     "with rediss://: PEM file of the CAs that Redis's certificate must chain to (unset, and no "
     "CA folder: the system's CAs)"},
    {"redis-tls-ca-dir", "COMPACTD_REDIS_TLS_CA_DIR", "", KIND_STRING, 0, 0,
     FIELD(redis.tls_ca_dir), "with rediss://: folder of trusted CA certificates (openssl rehash)"},
    {"redis-tls-cert-file", "COMPACTD_REDIS_TLS_CERT_FILE", "", KIND_STRING, 0, 0,
     FIELD(redis.tls_cert_file),
     "with rediss://: compactd's client certificate (PEM) for a Redis that asks for one "
     "(tls-auth-clients)"},
    {"redis-tls-key-file", "COMPACTD_REDIS_TLS_KEY_FILE", "", KIND_STRING, 0, 0,
     FIELD(redis.tls_key_file), "with rediss://: the client certificate's key (PEM, unencrypted)"},
    {"redis-tls-server-name", "COMPACTD_REDIS_TLS_SERVER_NAME", "", KIND_STRING, 0, 0,
     FIELD(redis.tls_server_name),
     "with rediss://: the name Redis's certificate must carry, also sent as SNI (unset: each "
     "node's host or address as the URL or the cluster gives it)"},
    {"redis-stage-ttl-ms", "COMPACTD_REDIS_STAGE_TTL_MS", "600000", KIND_INT, 1000, 86400000,
     FIELD(redis.stage_ttl_ms),
     "milliseconds a large commit's staged pieces live in Redis unless it publishes them; a "
     "commit that takes longer to stage fails with nothing written"},
    {"debug-stop-at", "COMPACTD_DEBUG_STOP_AT", "", KIND_STRING, 0, 0, FIELD(redis.stop_at),
     "for fault tests only: the process stops itself (SIGSTOP) the first time a large commit "
     "reaches this stage: staged:<piece> (that piece written), published, merged:<piece>"},
    {"api-keys-file", "COMPACTD_API_KEYS_FILE", "", KIND_STRING, 0, 0, FIELD(api_keys_file),
     "file of \"<api-key> <tenant>\" lines; unset serves one open tenant"},
    {"log-level", "COMPACTD_LOG_LEVEL", "info", KIND_LOG_LEVEL, 0, 0, FIELD(log_level),
     "debug, info, warn or error"},
    {"shutdown-timeout", "COMPACTD_SHUTDOWN_TIMEOUT_S", "10", KIND_INT, 0, 3600,
     FIELD(shutdown_timeout_s), "seconds to finish requests in flight on SIGTERM"},
    {"mcp-allowed-origins", "COMPACTD_MCP_ALLOWED_ORIGINS", "", KIND_STRING, 0, 0,
     FIELD(mcp_allowed_origins),
     "older name of COMPACTD_ALLOWED_ORIGINS: origins every route accepts besides loopback"},
    {"allowed-origins", "COMPACTD_ALLOWED_ORIGINS", "", KIND_STRING, 0, 0, FIELD(allowed_origins),
     "comma-separated browser origins (scheme://host[:port]) every route accepts besides "
     "loopback; a request with any other Origin is 403"},
    {"allowed-hosts", "COMPACTD_ALLOWED_HOSTS", "", KIND_STRING, 0, 0, FIELD(allowed_hosts),
     "comma-separated names (host or host:port) a request's Host may carry besides loopback "
     "ones while no API keys are set; any other Host is 403"},
    {"tokenizer", "COMPACTD_TOKENIZER", "bytes", KIND_STRING, 0, 0, FIELD(tokenizer),
     "encoding of units and tokens requests that name none (a chat history counts with its "
     "format's), one of: "}, /* config_usage() names them */
    {"ranks-dir", "COMPACTD_RANKS_DIR", "", KIND_STRING, 0, 0, FIELD(ranks_dir),
     "folder of o200k_base.tiktoken and cl100k_base.tiktoken, read and checked at start-up; "
     "unset: ../share/compactd/ranks beside the binary when it is there (where cmake --install "
     "puts them), else the build's " COMPACTD_RANKS_DIR_DEFAULT},
    {"ui", "COMPACTD_UI", "on", KIND_SWITCH, 0, 0, FIELD(ui),
     "on serves the inspector page at /ui; off answers 404 there"},
    /* The proxy routes (docs/proxy.md). */
    {"upstream-openai", "COMPACTD_UPSTREAM_OPENAI", "https://api.openai.com/v1", KIND_STRING, 0, 0,
     FIELD(proxy.openai), "base URL /proxy/openai/v1/... forwards to (http or https)"},
    {"upstream-anthropic", "COMPACTD_UPSTREAM_ANTHROPIC", "https://api.anthropic.com/v1",
     KIND_STRING, 0, 0, FIELD(proxy.anthropic),
     "base URL /proxy/anthropic/v1/... forwards to (http or https)"},
    {"upstream-connect-timeout-ms", "COMPACTD_UPSTREAM_CONNECT_TIMEOUT_MS", "5000", KIND_INT, 1,
     600000, FIELD(proxy.connect_timeout_ms),
     "milliseconds to connect to an upstream; past it 502"},
    {"upstream-timeout", "COMPACTD_UPSTREAM_TIMEOUT_S", "300", KIND_INT, 1, 3600,
     FIELD(proxy.timeout_s), "seconds an upstream may send nothing before it is given up; 504"},
    {"upstream-max-connections", "COMPACTD_UPSTREAM_MAX_CONNECTIONS", "16", KIND_INT, 1, 1024,
     FIELD(proxy.max_connections),
     "upstream connections kept and used at once, and the threads proxied calls run on; a call "
     "waits for one"},
    {"proxy-reacquire-rounds", "COMPACTD_PROXY_REACQUIRE_ROUNDS", "3", KIND_INT, 0, 16,
     FIELD(proxy.reacquire_rounds),
     "most times a proxied call answers the model's reacquire calls and asks again"},
    {"proxy-reacquire-room", "COMPACTD_PROXY_REACQUIRE_ROOM_PERCENT", "25", KIND_INT, 0, 90,
     FIELD(proxy.reacquire_room_percent),
     "percent of the budget a proxied history leaves free for the pages the model's reacquire "
     "calls read back"},
    {"proxy-reserve-tokens", "COMPACTD_PROXY_RESERVE_TOKENS", "1024", KIND_INT, 0, 1000000,
     FIELD(proxy.reserve_tokens),
     "tokens kept free beside the answer's max tokens when the budget comes from the model's "
     "context window"},
    {"models", "COMPACTD_MODELS", "", KIND_STRING, 0, 0, FIELD(proxy.models_file),
     "JSON file of {\"model\": context window in tokens}, over the built-in table"},
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

void config_usage(FILE *out)
{
    fprintf(out, "usage: compactd [--flag value]...\n       compactd --version | --help\n\n"
                 "Each flag overrides its environment variable.\n\n");
    char names[128] = "";
    for (size_t i = 0; i < NSETTINGS; i++) {
        /* The encodings are the tokenizer table's, never a list kept here. */
        if (settings[i].offset == offsetof(config, tokenizer))
            tokenizer_names(names, sizeof(names));
        fprintf(out, "  --%-26s %-34s default %s\n      %s%s\n", settings[i].flag, settings[i].env,
                settings[i].def[0] ? settings[i].def : "(unset)", settings[i].help, names);
        names[0] = '\0';
    }
}

static int parse_number(const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    if (*s == '\0' || *s == ' ' || *s == '+')
        return -1;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int apply(config *cfg, const setting *st, const char *value, const char *source, char *err,
                 size_t errlen)
{
    char *field = (char *)cfg + st->offset;
    long long v;

    switch (st->kind) {
    case KIND_STRING:
        if (strlen(value) >= st->size) {
            snprintf(err, errlen, "%s: value too long", source);
            return -1;
        }
        strcpy(field, value);
        /* Checked once the rank files are read (main.c), it is named then
         * as it was given. */
        if (field == cfg->tokenizer)
            snprintf(cfg->tokenizer_source, sizeof(cfg->tokenizer_source), "%s", source);
        return 0;
    case KIND_INT:
    case KIND_SIZE:
        if (parse_number(value, st->min, st->max, &v) != 0) {
            snprintf(err, errlen, "%s: '%s' is not an integer from %lld to %lld", source, value,
                     st->min, st->max);
            return -1;
        }
        if (st->kind == KIND_INT)
            *(int *)field = (int)v;
        else
            *(size_t *)field = (size_t)v;
        return 0;
    case KIND_LOG_LEVEL:
        for (int i = LOG_DEBUG; i <= LOG_ERROR; i++)
            if (strcmp(value, log_level_name((log_level)i)) == 0) {
                *(log_level *)field = (log_level)i;
                return 0;
            }
        snprintf(err, errlen, "%s: '%s' is not one of debug, info, warn, error", source, value);
        return -1;
    case KIND_SWITCH:
        if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0) {
            *(int *)field = value[1] == 'n';
            return 0;
        }
        snprintf(err, errlen, "%s: '%s' is not on or off", source, value);
        return -1;
    }
    return -1;
}

static int parse_listen(config *cfg, char *err, size_t errlen)
{
    const char *s = cfg->listen, *colon;
    size_t host_len;
    long long port;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            goto bad;
        s++;
        host_len = (size_t)(close - s);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            goto bad;
        host_len = (size_t)(colon - s);
    }
    if (host_len == 0 || host_len >= sizeof(cfg->listen_host) ||
        parse_number(colon + 1, 0, 65535, &port) != 0)
        goto bad;
    memcpy(cfg->listen_host, s, host_len);
    cfg->listen_host[host_len] = '\0';
    cfg->listen_port = (int)port;
    return 0;
bad:
    snprintf(err, errlen, "listen: '%s' is not host:port (e.g. 127.0.0.1:8080 or [::1]:8080)",
             cfg->listen);
    return -1;
}

static const setting *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strlen(settings[i].flag) == len && strncmp(settings[i].flag, name, len) == 0)
            return &settings[i];
    return NULL;
}

/* An installed compactd (cmake --install, the container image) finds its
 * rank files at <prefix>/share/compactd/ranks beside <prefix>/bin; one
 * run from its build folder, where the build fetched them. */
static void default_ranks_dir(char *out, size_t size)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char dir[4096 + 32];
            struct stat st;
            snprintf(dir, sizeof(dir), "%s/../share/compactd/ranks", exe);
            if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && strlen(dir) < size) {
                snprintf(out, size, "%s", dir);
                return;
            }
        }
    }
    snprintf(out, size, "%s", COMPACTD_RANKS_DIR_DEFAULT);
}

int config_load(config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    char source[128];
    memset(cfg, 0, sizeof(*cfg));

    for (size_t i = 0; i < NSETTINGS; i++) {
        const setting *st = &settings[i];
        const char *env = getenv(st->env);
        snprintf(source, sizeof(source), "default of %s", st->env);
        if (apply(cfg, st, st->def, source, err, errlen) != 0)
            return -1;
        if (env && apply(cfg, st, env, st->env, err, errlen) != 0)
            return -1;
    }

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            config_usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("compactd %s\n", COMPACTD_VERSION);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (see --help)", arg);
            return -1;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const setting *st = find_flag(name, name_len);
        if (!st) {
            snprintf(err, errlen, "unknown flag '%.*s' (see --help)", (int)name_len + 2, arg);
            return -1;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            snprintf(err, errlen, "flag --%s needs a value", st->flag);
            return -1;
        }
        snprintf(source, sizeof(source), "--%s", st->flag);
        if (apply(cfg, st, value, source, err, errlen) != 0)
            return -1;
    }

    if (!cfg->ranks_dir[0])
        default_ranks_dir(cfg->ranks_dir, sizeof(cfg->ranks_dir));
    if (parse_listen(cfg, err, errlen) != 0)
        return -1;
    if (cfg->max_inflight_bytes < cfg->max_body_bytes) {
        snprintf(err, errlen,
                 "COMPACTD_MAX_INFLIGHT_BYTES (%zu) is smaller than COMPACTD_MAX_BODY_BYTES (%zu): "
                 "a body at the limit could never be held",
                 cfg->max_inflight_bytes, cfg->max_body_bytes);
        return -1;
    }
    if (cfg->max_client_inflight_bytes == 0) {
        /* Room for a body at the limit and an answer as large. */
        cfg->max_client_inflight_bytes = cfg->max_inflight_bytes / 8 * 3;
        if (cfg->max_client_inflight_bytes < 2 * cfg->max_body_bytes)
            cfg->max_client_inflight_bytes = 2 * cfg->max_body_bytes;
        if (cfg->max_client_inflight_bytes > cfg->max_inflight_bytes)
            cfg->max_client_inflight_bytes = cfg->max_inflight_bytes;
    }
    if (cfg->max_client_inflight_bytes < cfg->max_body_bytes ||
        cfg->max_client_inflight_bytes > cfg->max_inflight_bytes) {
        snprintf(err, errlen,
                 "COMPACTD_MAX_CLIENT_INFLIGHT_BYTES (%zu) must be from COMPACTD_MAX_BODY_BYTES "
                 "(%zu) to COMPACTD_MAX_INFLIGHT_BYTES (%zu)",
                 cfg->max_client_inflight_bytes, cfg->max_body_bytes, cfg->max_inflight_bytes);
        return -1;
    }
    if (session_store_check(&cfg->redis, err, errlen) != 0)
        return -1;
    if (cfg->api_keys_file[0] && access(cfg->api_keys_file, R_OK) != 0) {
        snprintf(err, errlen, "api keys file '%s' cannot be read", cfg->api_keys_file);
        return -1;
    }
    return 0;
}

http_settings config_http_settings(const config *cfg)
{
    http_settings hs = {
        .listen = cfg->listen,
        .host = cfg->listen_host,
        .port = cfg->listen_port,
        .threads = cfg->threads,
        /* A proxied call holds one thread and one upstream connection
         * until the upstream's answer is through. */
        .upstream_threads = cfg->proxy.max_connections,
        .max_body_bytes = cfg->max_body_bytes,
        .max_inflight_bytes = cfg->max_inflight_bytes,
        .max_client_inflight_bytes = cfg->max_client_inflight_bytes,
        .max_connections = cfg->max_connections,
        .connection_timeout_s = cfg->connection_timeout_s,
    };
    return hs;
}
