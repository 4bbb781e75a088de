/* A request: what a handler reads of it (query arguments, headers,
 * whether the body is sent as JSON), its body's release, and its own once
 * the last of the connection and a pool's worker lets go of it. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *api_query(const api_request *req, const char *name)
{
    const char *value = NULL;
    size_t len;
    /* A bare "?name" is present with an empty value, never absent. */
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &value,
                                      &len) != MHD_YES)
        return NULL;
    return value ? value : "";
}

const char *api_header(const api_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

typedef struct {
    const char *name;
    size_t n;
} header_count;

static MHD_Result_t count_named(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    header_count *c = cls;
    (void)kind;
    (void)value;
    if (strcasecmp(key, c->name) == 0)
        c->n++;
    return MHD_YES;
}

size_t api_header_count(const api_request *req, const char *name)
{
    header_count c = {name, 0};
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, count_named, &c);
    return c.n;
}

int api_content_is_json(const api_request *req)
{
    static const char json[] = "application/json";
    const char *ct = api_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, json, sizeof(json) - 1) != 0)
        return 0;
    char next = ct[sizeof(json) - 1];
    return next == '\0' || next == ';' || next == ' ';
}

/* ---- Release ---- */

void http_body_free(request_state *st)
{
    free(st->body);
    http_budget_release(st->server, st->cap);
    st->body = NULL;
    st->len = st->cap = 0;
    st->req.body = NULL;
    st->req.body_len = 0;
}

void api_release_body(api_request *req)
{
    http_body_free((request_state *)req);
}

void http_request_release(request_state *st)
{
    if (atomic_fetch_sub(&st->holders, 1) != 1)
        return;
    http_server *s = st->server;
    if (st->req.app)
        s->h.end(&st->req, s->h.cls);
    http_body_free(st);
    http_answer_settle(st);
    free(st->res.body); /* an answer never sent */
    free(st->res.header_block);
    if (st->res.stream)
        http_stream_abandon(st->res.stream);
    free(st);
    atomic_fetch_sub(&s->in_flight, 1);
}
