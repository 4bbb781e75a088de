/* The route table (api/app/routes.c), table-driven: what a method and
 * path match (captures, HEAD as GET, 405's allowed methods, a session id
 * holding an encoded '/'), the rules every row's flags and pool keep, and
 * the pool read off a body for the rows that decide by it. */
#include "check.h"
#include "routes.h"

#include <string.h>

/* ---- Matching ---- */

typedef struct {
    const char *method, *path;
    size_t seg_len;
    const char *row;     /* the serving row's pattern; NULL: none */
    const char *indexed; /* the pattern facts are counted under; NULL: unmatched */
    const char *allow;   /* with no row */
    const char *session, *key;
} find_case;

static const find_case finds[] = {
    {"POST", "/v1/sessions/abc/compact", 0, "/v1/sessions/{session}/compact",
     "/v1/sessions/{session}/compact", "", "abc", NULL},
    {"GET", "/v1/sessions/abc/compact", 0, NULL, "/v1/sessions/{session}/compact", "POST", NULL,
     NULL},
    {"GET", "/v1/sessions/abc", 0, NULL, "/v1/sessions/{session}", "DELETE", NULL, NULL},
    {"DELETE", "/v1/sessions/agent/42", 8, "/v1/sessions/{session}", "/v1/sessions/{session}", "",
     "agent/42", NULL},
    /* Without the raw segment's length a '/' in the id splits it. */
    {"DELETE", "/v1/sessions/agent/42", 0, NULL, NULL, "", NULL, NULL},
    {"GET", "/v1/sessions/agent/42/spills/a/b", 8, "/v1/sessions/{session}/spills/{key}",
     "/v1/sessions/{session}/spills/{key}", "", "agent/42", "a/b"},
    {"GET", "/v1/sessions/s/spills", 0, "/v1/sessions/{session}/spills",
     "/v1/sessions/{session}/spills", "", "s", NULL},
    {"GET", "/v1/sessions/s/spills/", 0, NULL, NULL, "", NULL, NULL},
    {"POST", "/v1/sessions//compact", 0, NULL, NULL, "", NULL, NULL},
    {"HEAD", "/healthz", 0, "/healthz", "/healthz", "", NULL, NULL},
    {"POST", "/healthz", 0, NULL, "/healthz", "GET", NULL, NULL},
    {"GET", "/ui/inspector.js", 0, "/ui/{key}", "/ui/{key}", "", NULL, "inspector.js"},
    {"GET", "/ui/", 0, NULL, NULL, "", NULL, NULL},
    {"POST", "/proxy/openai/v1/chat/completions", 0, "/proxy/openai/v1/chat/completions",
     "/proxy/openai/v1/chat/completions", "", NULL, NULL},
    {"GET", "/mcp", 0, NULL, "/mcp", "POST", NULL, NULL},
    {"GET", "/nowhere", 0, NULL, NULL, "", NULL, NULL},
    {"GET", "/v1/tokens/", 0, NULL, NULL, "", NULL, NULL},
};

static int same(const char *a, size_t alen, const char *b)
{
    if (!a || !b)
        return a == b;
    return strlen(b) == alen && memcmp(a, b, alen) == 0;
}

static void matching(void)
{
    for (size_t i = 0; i < sizeof(finds) / sizeof(finds[0]); i++) {
        const find_case *c = &finds[i];
        route_match m;
        route_find(c->method, c->path, c->seg_len, &m);
        const char *row = m.row ? m.row->pattern : NULL;
        const char *indexed = m.index >= 0 ? route_pattern((size_t)m.index) : NULL;
        check(same(row, row ? strlen(row) : 0, c->row), "%s %s: row %s, want %s", c->method,
              c->path, row ? row : "(none)", c->row ? c->row : "(none)");
        check(same(indexed, indexed ? strlen(indexed) : 0, c->indexed),
              "%s %s: counted under %s, want %s", c->method, c->path,
              indexed ? indexed : "unmatched", c->indexed ? c->indexed : "unmatched");
        check(strcmp(m.allow, c->allow) == 0, "%s %s: allow \"%s\", want \"%s\"", c->method,
              c->path, m.allow, c->allow);
        if (m.row) {
            check(same(m.session, m.session_len, c->session), "%s %s: session %.*s", c->method,
                  c->path, (int)m.session_len, m.session ? m.session : "(none)");
            check(same(m.key, m.key ? strlen(m.key) : 0, c->key), "%s %s: key %s", c->method,
                  c->path, m.key ? m.key : "(none)");
        }
    }
}

static void session_lengths(void)
{
    static const struct {
        const char *target;
        size_t want;
    } cases[] = {
        {"/v1/sessions/agent%2F42/compact", 8},
        {"/v1/sessions/abc", 3},
        {"/v1/sessions/a?x=1", 1},
        {"/v1/sessions/%41b/compact", 2},
        {"/v1/tokens", 0},
        {"/v1/%73essions/abc", 0}, /* only the literal prefix */
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t got = route_session_length(cases[i].target);
        check(got == cases[i].want, "route_session_length(%s) = %zu, want %zu",
              cases[i].target ? cases[i].target : "NULL", got, cases[i].want);
    }
}

/* ---- Every row's flags ---- */

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void flags(void)
{
    static const char *const json_bodies[] = {"/v1/sessions/{session}/compact",
                                              "/v1/sessions/{session}/verify",
                                              "/v1/sessions/{session}/messages/compact",
                                              "/v1/sessions/{session}/messages/verify",
                                              "/v1/tokens",
                                              "/v1/sessions/{session}/reacquire",
                                              "/proxy/openai/v1/chat/completions",
                                              "/proxy/openai/v1/responses",
                                              "/proxy/anthropic/v1/messages"};
    size_t n = route_count(), inline_rows = 0;
    check(n >= 20, "the table has %zu rows", n);
    for (size_t i = 0; i < n; i++) {
        const route *r = route_at(i);
        const char *p = r->pattern;
        int v1 = starts(p, "/v1/"), proxy = starts(p, "/proxy/");
        check(!!(r->flags & ROUTE_KEY_BEARER) == v1, "%s: a bearer key exactly on /v1", p);
        check(!!(r->flags & ROUTE_KEY_HEADER) == proxy, "%s: X-Compactd-Key exactly on /proxy", p);
        check((r->runs == ROUTE_RUNS_UPSTREAM) == proxy, "%s: the upstream pool exactly for /proxy",
              p);
        check(!!(r->flags & ROUTE_OWN_GUARD) == (strcmp(p, "/mcp") == 0),
              "%s: only /mcp checks Host and Origin itself", p);
        int json = 0;
        for (size_t k = 0; k < sizeof(json_bodies) / sizeof(json_bodies[0]); k++)
            json |= strcmp(p, json_bodies[k]) == 0;
        check(!!(r->flags & ROUTE_JSON_BODY) == json, "%s: JSON body flag", p);
        if (r->runs == ROUTE_RUNS_INLINE) {
            inline_rows++;
            check(strcmp(r->method, "GET") == 0 && !v1 && !proxy,
                  "%s: only the operator's GETs run inline", p);
        }
        check(r->metrics == (strstr(p, "compact") || proxy ? ROUTE_METRICS_COMPACTION
                             : strstr(p, "verify")         ? ROUTE_METRICS_AUDIT
                                                           : ROUTE_METRICS_PLAIN),
              "%s: metrics kind %d", p, (int)r->metrics);
        check(r->runs != ROUTE_RUNS_BY_RPC_METHOD || strstr(p, "mcp"),
              "%s: the JSON-RPC rule only on MCP rows", p);
        check(r->runs != ROUTE_RUNS_BY_DRY_RUN || strstr(p, "verify"),
              "%s: the dry-run rule only on verify rows", p);
        check(route_pattern(i) == p && route_metrics(i) == r->metrics, "%s: accessors", p);
    }
    check(inline_rows == 6, "%zu inline rows (healthz, readyz, metrics, spec, two ui)",
          inline_rows);
}

/* ---- Pools ---- */

static const route *row_of(const char *method, const char *path)
{
    route_match m;
    route_find(method, path, 0, &m);
    return m.row;
}

static void pools(void)
{
    static const struct {
        const char *method, *path, *body;
        http_pool_kind want;
    } cases[] = {
        {"POST", "/v1/sessions/s/verify", "{\"dry_run\": true, \"units\": []}", HTTP_POOL_LOCAL},
        {"POST", "/v1/sessions/s/verify", "{\"units\": [], \"dry_run\":true}", HTTP_POOL_LOCAL},
        {"POST", "/v1/sessions/s/verify", "{\"dry_run\": false}", HTTP_POOL_STORE},
        {"POST", "/v1/sessions/s/verify", "{\"dry_run\": \"true\"}", HTTP_POOL_STORE},
        {"POST", "/v1/sessions/s/verify", "{\"x\": {\"dry_run\": true}}", HTTP_POOL_STORE},
        {"POST", "/v1/sessions/s/verify", NULL, HTTP_POOL_STORE},
        {"POST", "/v1/sessions/s/messages/verify", "{\"dry_run\":true}", HTTP_POOL_LOCAL},
        {"POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", HTTP_POOL_LOCAL},
        {"POST", "/mcp", " {\"method\":\"tools/list\"}", HTTP_POOL_LOCAL},
        {"POST", "/mcp", "{\"method\":\"tools/call\",\"params\":{}}", HTTP_POOL_STORE},
        {"POST", "/mcp", "{\"method\":\"tools\\/call\"}", HTTP_POOL_STORE},
        {"POST", "/mcp", "[{\"method\":\"ping\"}]", HTTP_POOL_STORE},
        {"POST", "/mcp", "{\"id\":1}", HTTP_POOL_STORE},
        {"POST", "/mcp", "not json", HTTP_POOL_STORE},
        {"POST", "/mcp", NULL, HTTP_POOL_STORE},
        {"POST", "/v1/sessions/s/mcp", "{\"method\":\"ping\"}", HTTP_POOL_LOCAL},
        {"POST", "/v1/sessions/s/compact", "{}", HTTP_POOL_LOCAL},
        {"POST", "/v1/sessions/s/messages/compact", "{}", HTTP_POOL_LOCAL},
        {"POST", "/v1/tokens", "{}", HTTP_POOL_LOCAL},
        {"GET", "/v1/sessions/s/tools", NULL, HTTP_POOL_LOCAL},
        {"GET", "/v1/sessions/s/spills", NULL, HTTP_POOL_STORE},
        {"GET", "/v1/sessions/s/spills/k", NULL, HTTP_POOL_STORE},
        {"GET", "/v1/sessions/s/events", NULL, HTTP_POOL_STORE},
        {"POST", "/v1/sessions/s/reacquire", "{}", HTTP_POOL_STORE},
        {"DELETE", "/v1/sessions/s", NULL, HTTP_POOL_STORE},
        {"POST", "/proxy/openai/v1/responses", "{}", HTTP_POOL_UPSTREAM},
        {"POST", "/proxy/anthropic/v1/messages", "{}", HTTP_POOL_UPSTREAM},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const route *row = row_of(cases[i].method, cases[i].path);
        const char *b = cases[i].body;
        http_pool_kind got = route_pool(row, b, b ? strlen(b) : 0);
        check(row && got == cases[i].want, "%s %s with %s: pool %d, want %d", cases[i].method,
              cases[i].path, b ? b : "no body", (int)got, (int)cases[i].want);
        check(route_runs_inline(row) == HTTP_RUNS_IN_POOL, "%s runs in a pool", cases[i].path);
    }
    check(route_runs_inline(NULL) == HTTP_RUNS_INLINE, "no route: answered at once");
    check(route_runs_inline(row_of("HEAD", "/readyz")) == HTTP_RUNS_INLINE, "readyz inline");
    check(route_pool(NULL, NULL, 0) == HTTP_POOL_STORE, "no row: the store pool");
}

int main(void)
{
    matching();
    session_lengths();
    flags();
    pools();
    return check_done("routes_cases");
}
