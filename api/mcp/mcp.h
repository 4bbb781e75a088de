/* The tools compactd serves over MCP. Each decodes its arguments into the
 * request of one operation (ops.h), the one the matching REST route calls,
 * and answers the same document; mcp.c owns the JSON-RPC around them. */
#ifndef COMPACTD_MCP_H
#define COMPACTD_MCP_H

#include "chat_format.h"
#include "handlers.h"
#include "json_writer.h"

#include <jansson.h>
#include <stddef.h>

/* The tools/list array, compiled in: api/mcp/mcp_tools.json, or when bound
 * (the per-session endpoint: only reacquire and list_spills, with no
 * session argument) api/mcp/mcp_session_tools.json. Static. */
const char *mcp_tools_list_json(int bound, size_t *len);

/* The index of the tool called name, or -1 (also for a tool the bound
 * endpoint does not offer); and a tool's name. */
int mcp_tool_find(const char *name, int bound);
const char *mcp_tool_name(int tool);

/* Runs tool with args (borrowed; NULL when the call had none) for outer's
 * tenant, in session bound (NULL: the session the arguments name), and
 * writes its CallToolResult object as the next value of w.
 * raw (raw_len bytes; NULL when not found) is args as the client wrote
 * them, decoded as they are without being written out again. Bad
 * arguments, unknown spills and store failures are tool errors (isError),
 * which the model can read and act on. Adds what the operation did
 * (outcome, units) to outer's facts. Returns 1 for a tool error, else 0. */
int mcp_tool_call(const app *a, api_request *outer, int tool, const char *bound, json_t *args,
                  const char *raw, size_t raw_len, jw *w);

/* POST /mcp: one JSON-RPC message or batch, with every tool. */
void handle_mcp(const app *a, api_request *req, api_response *res);
/* POST /v1/sessions/{session}/mcp: the same, bound to the route's session,
 * with the tools the model itself calls (reacquire, list_spills). */
void handle_session_mcp(const app *a, api_request *req, api_response *res);

/* The reacquire tool without MCP (reacquire_tool.c): GET
 * /v1/sessions/{session}/tools, its definition in a provider's tool schema,
 * and POST /v1/sessions/{session}/reacquire, a call of it answered. */
void handle_session_tools(const app *a, api_request *req, api_response *res);
void handle_session_reacquire(const app *a, api_request *req, api_response *res);

/* The reacquire tool's definition in format f's tool schema, as GET
 * .../tools gives it: a new string (free()), or NULL when out of memory. */
char *reacquire_tool_json(const chat_format *f);

#endif
