/* The MCP front in process (api/mcp/, through the real route table and
 * dispatch on the real transport, no store): JSON-RPC framing (initialize,
 * ping, tools/list, notifications answered 202, parse errors, unknown
 * methods, batches and their bound), its own Host and Origin check and key
 * check answered as JSON-RPC, the media type, the tools (a dry-run
 * compaction answered, bad arguments and an unreachable store as tool
 * errors), and the per-session endpoint's two tools. */
#include "check.h"
#include "unit/api/app_server.h"
#include "unit/api/loopback.h"

#include <string.h>

#define JSON "Content-Type: application/json\r\n"
#define KEY "key-of-alpha-0123456789"

/* POSTs body to target and returns the answer as JSON (NULL when it is
 * not JSON), its status in *status. */
static json_t *rpc(int port, const char *target, const char *headers, const char *body, int *status)
{
    loopback_reply r;
    *status = loopback_request(port, "POST", target, headers ? headers : JSON, body, &r) == 0
                  ? r.status
                  : -1;
    json_t *j = reply_json(r.body);
    loopback_reply_free(&r);
    return j;
}

static json_int_t error_code(json_t *j)
{
    return json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
}

/* The names of a tools/list answer's tools, comma-separated. */
static void tool_names(json_t *j, char *out, size_t n)
{
    out[0] = '\0';
    json_t *tools = json_object_get(json_object_get(j, "result"), "tools");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", len ? "," : "",
                 json_string_value(json_object_get(t, "name")));
    }
}

static int is_tool_error(json_t *j)
{
    return json_is_true(json_object_get(json_object_get(j, "result"), "isError"));
}

static void framing(int port)
{
    int status;
    json_t *j = rpc(port, "/mcp", NULL,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                    "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                    "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                    &status);
    check(status == 200 && json_at(j, "result.protocolVersion") &&
              strcmp(json_at(j, "result.serverInfo.name"), "compactd") == 0,
          "initialize: %d", status);
    json_decref(j);

    j = rpc(port, "/mcp", NULL, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}", &status);
    check(status == 200 && json_is_object(json_object_get(j, "result")) &&
              strcmp(json_at(j, "id"), "p") == 0,
          "ping: %d", status);
    json_decref(j);

    loopback_reply r;
    int rc = loopback_request(port, "POST", "/mcp", JSON,
                              "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r);
    check(rc == 0 && r.status == 202 && r.body_len == 0, "a notification: %d", r.status);
    loopback_reply_free(&r);

    j = rpc(port, "/mcp", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1", &status);
    check(status == 400 && error_code(j) == -32700, "parse error: %d %lld", status,
          (long long)error_code(j));
    json_decref(j);

    j = rpc(port, "/mcp", NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"made/up\"}", &status);
    check(status == 200 && error_code(j) == -32601, "unknown method: %d %lld", status,
          (long long)error_code(j));
    json_decref(j);

    /* COMPACTD_MCP_MAX_BATCH is 2 here. */
    j = rpc(port, "/mcp", NULL,
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]",
            &status);
    check(status == 200 && json_array_size(j) == 2, "a batch of two: %d", status);
    json_decref(j);
    j = rpc(port, "/mcp", NULL,
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]",
            &status);
    check(status == 400 && error_code(j) == -32600, "a batch past the bound: %d", status);
    json_decref(j);

    j = rpc(port, "/mcp", "Content-Type: text/plain\r\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 415, "MCP's media type: %d", status);
    json_decref(j);

    j = rpc(port, "/mcp", "MCP-Protocol-Version: 1999-01-01\r\n" JSON,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 400 && error_code(j) == -32000, "an unknown protocol version: %d", status);
    json_decref(j);
}

/* /mcp answers the Host and Origin refusal as JSON-RPC, itself. */
static void guard(int port)
{
    int status;
    json_t *j = rpc(port, "/mcp", "Origin: http://evil.example\r\n" JSON,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 403 && error_code(j) == -32000 &&
              strstr(json_at(j, "error.message"), "Forbidden"),
          "a foreign Origin on /mcp: %d", status);
    json_decref(j);
    j = rpc(port, "/mcp", "Host: evil.example\r\n" JSON,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 403 && error_code(j) == -32000, "a foreign Host on /mcp: %d", status);
    json_decref(j);
    /* The per-session endpoint is guarded by the dispatch, as REST is. */
    j = rpc(port, "/v1/sessions/s/mcp", "Host: evil.example\r\n" JSON,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 403 && json_at(j, "error.type") &&
              strcmp(json_at(j, "error.type"), "Forbidden") == 0,
          "a foreign Host on the session endpoint: %d", status);
    json_decref(j);
}

static void tools(int port)
{
    int status;
    char names[256];
    json_t *j = rpc(port, "/mcp", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
                    &status);
    tool_names(j, names, sizeof(names));
    check(status == 200 &&
              strcmp(names, "reacquire,list_spills,compact,compact_messages,verify") == 0,
          "tools/list: %s", names);
    json_decref(j);

    j = rpc(port, "/v1/sessions/s/mcp", NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &status);
    tool_names(j, names, sizeof(names));
    check(status == 200 && strcmp(names, "reacquire,list_spills") == 0,
          "the session endpoint's tools: %s", names);
    json_decref(j);

    /* A dry run needs no store. */
    j = rpc(port, "/mcp", NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"compact\",\"arguments\":{\"session\":\"s\",\"budget\":100,\"dry_run\":true,"
            "\"units\":[{\"key\":\"k\",\"class\":\"protected\",\"tokens\":10,\"text\":\"x\"}]}}}",
            &status);
    check(status == 200 && json_object_get(j, "result") && !is_tool_error(j),
          "compact as a dry run: %d", status);
    json_decref(j);

    static const char *const tool_errors[] = {
        /* A bad session id. */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"list_spills\",\"arguments\":{\"session\":\"..\"}}}",
        /* Arguments that are no request. */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"compact\",\"arguments\":{\"session\":\"s\",\"budget\":-1,\"units\":[]}}}",
        /* The store is needed and unreachable. */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"list_spills\",\"arguments\":{\"session\":\"s\"}}}",
    };
    for (size_t i = 0; i < sizeof(tool_errors) / sizeof(tool_errors[0]); i++) {
        j = rpc(port, "/mcp", NULL, tool_errors[i], &status);
        check(status == 200 && is_tool_error(j), "tool error %zu: %d", i, status);
        json_decref(j);
    }
    j = rpc(port, "/mcp", NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"no_such_tool\",\"arguments\":{}}}",
            &status);
    check(status == 200 && error_code(j) == -32602, "an unknown tool: %lld",
          (long long)error_code(j));
    json_decref(j);
}

static void keyed(int port)
{
    int status;
    json_t *j =
        rpc(port, "/mcp", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 401, "/mcp without a key: %d", status);
    json_decref(j);
    j = rpc(port, "/mcp", "Authorization: Bearer " KEY "\r\n" JSON,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status);
    check(status == 200 && json_object_get(j, "result"), "/mcp with its key: %d", status);
    json_decref(j);
    j = rpc(port, "/v1/sessions/s/mcp", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            &status);
    check(status == 401, "the session endpoint without a key: %d", status);
    json_decref(j);
}

int main(void)
{
    static const char *const flags[] = {"--mcp-max-batch", "2", NULL};
    app_server open;
    if (app_server_start(&open, flags, NULL) != 0)
        return 1;
    framing(open.port);
    guard(open.port);
    tools(open.port);
    app_server_stop(&open);

    app_server with_keys;
    if (app_server_start(&with_keys, flags, KEY " alpha\n") != 0)
        return 1;
    keyed(with_keys.port);
    app_server_stop(&with_keys);
    return check_done("mcp_cases");
}
