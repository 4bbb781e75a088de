/* The REST front in process (api/rest/, through the real route table and
 * dispatch on the real transport, no store): the checks in front of every
 * handler (404, 405 with Allow, the Host guard, the key with and without
 * API keys, the session id, the media type), handlers that need no store
 * answering their documents, those that do answering StoreUnavailable, the
 * response helpers, and the metrics counting each request under its
 * route. */
#include "check.h"
#include "unit/api/app_server.h"
#include "unit/api/loopback.h"

#include "answers.h"

#include <string.h>

#define JSON "Content-Type: application/json\r\n"
#define KEY "key-of-alpha-0123456789"

typedef struct {
    const char *method, *target, *headers, *body;
    int status;
    const char *type; /* the error's type; NULL for a success */
    const char *text; /* a part of the body; NULL: not checked */
} rest_case;

static const rest_case open_cases[] = {
    {"GET", "/healthz", NULL, NULL, 200, NULL, NULL},
    {"POST", "/v1/tokens", JSON, "{\"texts\":[\"hello world\",\"\"],\"tokenizer\":\"bytes\"}", 200,
     NULL, "{\"tokenizer\":\"bytes\",\"counts\":[11,0],\"total\":11}"},
    {"POST", "/v1/tokens", "Content-Type: text/plain\r\n", "{\"texts\":[]}", 415,
     "UnsupportedMediaType", "application/json"},
    {"POST", "/v1/tokens", JSON, "{\"texts\":[1]}", 400, "InvalidRequest", NULL},
    {"GET", "/v1/tokens", NULL, NULL, 405, "MethodNotAllowed", "allowed: POST"},
    {"GET", "/nowhere", NULL, NULL, 404, "NotFound", "no route for GET /nowhere"},
    {"POST", "/v1/sessions/bad%20id/compact", JSON, "{}", 400, "InvalidRequest",
     "session id must be 1 to 128 characters"},
    {"POST", "/v1/sessions/%2E%2E/compact", JSON, "{}", 400, "InvalidRequest", "session id"},
    {"POST", "/v1/sessions/s/compact", "Host: evil.example\r\n" JSON, "{}", 403, "Forbidden", NULL},
    {"POST", "/v1/sessions/s/compact", "Origin: http://evil.example\r\n" JSON, "{}", 403,
     "Forbidden", NULL},
    /* A dry run plans without the store. */
    {"POST", "/v1/sessions/s/compact", JSON,
     "{\"budget\":100,\"dry_run\":true,\"units\":[{\"key\":\"k\",\"class\":\"protected\","
     "\"tokens\":10,\"text\":\"Never push to main.\"}]}",
     200, NULL, "\"key\":\"k\""},
    /* A compaction that spills, a spill read, a delete: the store is needed. */
    {"POST", "/v1/sessions/s/compact", JSON,
     "{\"budget\":100,\"units\":[{\"key\":\"k\",\"class\":\"protected\",\"tokens\":900,"
     "\"text\":\"make: Error 1\"}]}",
     503, "StoreUnavailable", NULL},
    {"GET", "/v1/sessions/agent%2F42/spills/k", NULL, NULL, 503, "StoreUnavailable", NULL},
    {"DELETE", "/v1/sessions/s", NULL, NULL, 503, "StoreUnavailable", NULL},
    {"GET", "/v1/sessions/s/tools?format=openai", NULL, NULL, 200, NULL, "reacquire"},
};

static const rest_case keyed_cases[] = {
    {"POST", "/v1/tokens", JSON, "{\"texts\":[\"a\"]}", 401, "Unauthorized", "Bearer"},
    {"POST", "/v1/tokens", "Authorization: Bearer wrong-key-0123456789\r\n" JSON,
     "{\"texts\":[\"a\"]}", 401, "Unauthorized", NULL},
    {"POST", "/v1/tokens",
     "Authorization: Bearer " KEY "\r\nAuthorization: Bearer " KEY "\r\n" JSON,
     "{\"texts\":[\"a\"]}", 401, "Unauthorized", NULL},
    {"POST", "/v1/tokens", "Authorization: Bearer " KEY "\r\n" JSON, "{\"texts\":[\"a\"]}", 200,
     NULL, "\"counts\":[1]"},
    /* With keys, the key is the protection: Host is not checked. */
    {"POST", "/v1/tokens", "Host: evil.example\r\nAuthorization: Bearer " KEY "\r\n" JSON,
     "{\"texts\":[\"ab\"]}", 200, NULL, "\"counts\":[2]"},
    /* The proxy's key is X-Compactd-Key, checked before its handler. */
    {"POST", "/proxy/openai/v1/chat/completions", "Authorization: Bearer " KEY "\r\n" JSON, "{}",
     401, "Unauthorized", "X-Compactd-Key"},
    /* The operator's routes need no key. */
    {"GET", "/healthz", NULL, NULL, 200, NULL, NULL},
};

static void run_cases(int port, const rest_case *cases, size_t n, const char *server)
{
    for (size_t i = 0; i < n; i++) {
        const rest_case *c = &cases[i];
        loopback_reply r;
        int rc = loopback_request(port, c->method, c->target, c->headers, c->body, &r);
        check(rc == 0 && r.status == c->status, "%s: %s %s: status %d, want %d: %s", server,
              c->method, c->target, r.status, c->status, r.body);
        json_t *j = reply_json(r.body);
        const char *type = json_at(j, "error.type");
        if (c->type)
            check(type && strcmp(type, c->type) == 0, "%s: %s %s: error %s, want %s", server,
                  c->method, c->target, type ? type : "(none)", c->type);
        else
            check(!type, "%s: %s %s: an error %s", server, c->method, c->target, type);
        if (c->text)
            check(r.body && strstr(r.body, c->text), "%s: %s %s: no \"%s\" in %s", server,
                  c->method, c->target, c->text, r.body);
        char v[128];
        if (c->status == 405)
            check(loopback_header(&r, "Allow", v, sizeof(v)) && strcmp(v, "POST") == 0,
                  "405 with Allow: POST");
        if (c->status == 401 && c->text && strcmp(c->text, "Bearer") == 0)
            check(loopback_header(&r, "WWW-Authenticate", v, sizeof(v)) &&
                      strcmp(v, "Bearer realm=\"compactd\"") == 0,
                  "401 with WWW-Authenticate");
        json_decref(j);
        loopback_reply_free(&r);
    }
}

static void response_helpers(void)
{
    api_response res = {0};
    respond_fail(&res, ERR_INVALID_REQUEST, "budget %d is below %s", -1, "zero");
    check(res.status == 400 && res.body && strstr(res.body, "\"type\":\"InvalidRequest\"") &&
              strstr(res.body, "budget -1 is below zero") &&
              strcmp(res.content_type, "application/json") == 0,
          "respond_fail: %d %s", res.status, res.body);
    free(res.body);
    res = (api_response){0};
    respond_json(&res, 200, NULL, 0);
    check(res.status == 500 && res.body && strstr(res.body, "out of memory"),
          "respond_json without a body is a 500: %d", res.status);
    free(res.body);
    res = (api_response){0};
    char *body = strdup("{\"ok\":true}");
    respond_json(&res, 201, body, strlen(body));
    check(res.status == 201 && res.body == body && res.len == 11, "respond_json takes the body");
    free(res.body);
    res = (api_response){0};
    compactd_error err = {ERR_STORE_UNAVAILABLE, "redis is away", ""};
    respond_error(&res, &err);
    check(res.status == 503 && strstr(res.body, "StoreUnavailable"), "respond_error: %d",
          res.status);
    free(res.body);
}

/* Each request above is counted under its route, unmatched apart. */
static void metrics_by_route(int port)
{
    loopback_reply r;
    int rc = loopback_request(port, "GET", "/metrics", NULL, NULL, &r);
    check(rc == 0 && r.status == 200, "metrics: %d", r.status);
    static const char *const lines[] = {
        "compactd_http_requests_total{route=\"/v1/tokens\",status=\"200\"}",
        "compactd_http_requests_total{route=\"/v1/tokens\",status=\"415\"}",
        "compactd_http_requests_total{route=\"/v1/tokens\",status=\"405\"}",
        "compactd_http_requests_total{route=\"unmatched\",status=\"404\"}",
        "compactd_http_requests_total{route=\"/v1/sessions/{session}/spills/"
        "{key}\",status=\"503\"}",
        "compactd_compactions_total{outcome=\"store_unavailable\"} 1",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        check(r.body && strstr(r.body, lines[i]), "no %s in /metrics", lines[i]);
    loopback_reply_free(&r);
}

int main(void)
{
    response_helpers();

    app_server open;
    if (app_server_start(&open, NULL, NULL) != 0)
        return 1;
    run_cases(open.port, open_cases, sizeof(open_cases) / sizeof(open_cases[0]), "open");
    metrics_by_route(open.port);
    app_server_stop(&open);

    app_server keyed;
    if (app_server_start(&keyed, NULL, KEY " alpha\n") != 0)
        return 1;
    run_cases(keyed.port, keyed_cases, sizeof(keyed_cases) / sizeof(keyed_cases[0]), "keyed");
    app_server_stop(&keyed);
    return check_done("rest_cases");
}
