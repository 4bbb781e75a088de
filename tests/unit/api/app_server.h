/* compactd's application in process for the fronts' tests: the settings
 * table loaded from flags, the real route table and dispatch
 * (app_http_handlers()) on the real transport, on port 0, without a store
 * (every store call is StoreUnavailable), optionally with API keys. */
#ifndef COMPACTD_TEST_APP_SERVER_H
#define COMPACTD_TEST_APP_SERVER_H

#include "dispatch.h"
#include "metrics.h"
#include "routes.h"
#include "tenants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

typedef struct {
    config cfg;
    app a;
    http_server *server;
    int port;
    char keys_path[64];
} app_server;

/* Starts s with flags (NULL-ended, as after compactd on a command line)
 * and, when keys is not NULL, a keys file of those lines. 0, or -1 with a
 * message on stderr. */
static int app_server_start(app_server *s, const char *const *flags, const char *keys)
{
    static int metrics_ready;
    char *argv[32] = {(char *)"compactd", (char *)"--listen", (char *)"127.0.0.1:0",
                      (char *)"--log-level", (char *)"error"};
    int argc = 5;
    for (; flags && flags[argc - 5] && argc < 30; argc++)
        argv[argc] = (char *)flags[argc - 5];
    char err[512];
    memset(s, 0, sizeof(*s));
    if (keys) {
        snprintf(s->keys_path, sizeof(s->keys_path), "/tmp/compactd-keys-XXXXXX");
        int fd = mkstemp(s->keys_path);
        if (fd < 0 || write(fd, keys, strlen(keys)) != (ssize_t)strlen(keys)) {
            fprintf(stderr, "cannot write the keys file\n");
            return -1;
        }
        close(fd);
    }
    if (config_load(&s->cfg, argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "config: %s\n", err);
        return -1;
    }
    if (!metrics_ready) {
        if (metrics_init(&(metrics_routes){route_count(), route_pattern, route_metrics}) != 0)
            return -1;
        json_object_seed(1);
        metrics_ready = 1;
    }
    s->a.cfg = &s->cfg;
    s->a.hosts =
        (host_rules){s->cfg.allowed_hosts, s->cfg.allowed_origins, s->cfg.mcp_allowed_origins};
    if (keys && !(s->a.keys = tenants_load(s->keys_path, err, sizeof(err)))) {
        fprintf(stderr, "keys: %s\n", err);
        return -1;
    }
    http_handlers h = app_http_handlers(&s->a);
    http_settings hs = config_http_settings(&s->cfg);
    s->server = http_server_start(&hs, &h, err, sizeof(err));
    if (!s->server) {
        fprintf(stderr, "http_server_start: %s\n", err);
        return -1;
    }
    s->port = http_server_port(s->server);
    return 0;
}

static void app_server_stop(app_server *s)
{
    if (s->server)
        http_server_stop(s->server, 1000);
    tenants_free((tenants *)s->a.keys);
    if (s->keys_path[0])
        unlink(s->keys_path);
    s->server = NULL;
}

/* The answer's body as JSON (NULL when it is not), to be freed. */
static json_t *reply_json(const char *body)
{
    json_error_t e;
    return body ? json_loads(body, JSON_DECODE_ANY, &e) : NULL;
}

/* A string at a path of object keys ("error.type"), or NULL. */
static const char *json_at(json_t *j, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save = NULL, *part = strtok_r(buf, ".", &save); j && part;
         part = strtok_r(NULL, ".", &save))
        j = json_object_get(j, part);
    return json_string_value(j);
}

#endif
