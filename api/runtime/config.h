/* compactd's configuration: environment variables, each overridden by the
 * matching command-line flag. */
#ifndef COMPACTD_CONFIG_H
#define COMPACTD_CONFIG_H

#include "http_server.h"
#include "json_decode.h"
#include "log_line.h"
#include "session.h"

#include <stddef.h>
#include <stdio.h>

/* The upstreams the proxy routes call (api/proxy/), and how. */
typedef struct {
    char openai[1024];    /* base URL of the OpenAI API, ".../v1" */
    char anthropic[1024]; /* base URL of the Anthropic API, ".../v1" */
    char models_file[4096];
    int connect_timeout_ms;
    int timeout_s; /* most seconds without a byte from the upstream */
    int max_connections;
    int reacquire_rounds;
    int reserve_tokens;
    int reacquire_room_percent; /* of the budget, left free for reacquire pages */
} proxy_settings;

typedef struct {
    char listen[300];
    char listen_host[256];
    int listen_port;
    session_store_settings redis;
    int threads;
    size_t max_body_bytes;
    size_t max_inflight_bytes;
    size_t max_client_inflight_bytes; /* of those, what one request's body and answer may hold */
    int mcp_max_batch;                /* most messages in one JSON-RPC batch */
    int mcp_batch_ms;                 /* time after which a batch starts no more messages */
    decode_limits limits;
    size_t sticky_plans_bytes;       /* plan_memory.h's bound */
    size_t spill_digest_cache_bytes; /* digest_cache.h's bound */
    int max_connections;
    int connection_timeout_s;
    char api_keys_file[4096];
    log_level log_level;
    int shutdown_timeout_s;
    char mcp_allowed_origins[1024]; /* comma-separated; loopback origins always pass */
    char allowed_origins[1024];     /* the same, under the name every route goes by */
    char allowed_hosts[1024];       /* Host values accepted without API keys, besides loopback */
    char tokenizer[64];
    char tokenizer_source[32]; /* where it was set: its flag, its variable or the default */
    char ranks_dir[4096];
    int ui; /* 1: GET /ui serves the inspector page; 0: it answers 404 */
    proxy_settings proxy;
} config;

/* Fills cfg from the defaults, then the environment, then argv. Returns 0;
 * 1 when --help was asked (usage already printed); or -1 with a message in
 * err for bad configuration. */
int config_load(config *cfg, int argc, char **argv, char *err, size_t errlen);

/* What the HTTP server is started with, from cfg (whose strings it borrows). */
http_settings config_http_settings(const config *cfg);

/* Prints every setting with its flag, variable and default. */
void config_usage(FILE *out);

#endif
