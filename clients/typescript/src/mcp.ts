// What the official MCP client needs to reach compactd's MCP endpoint: the
// URL and the request headers (the API key), without depending on the SDK.
import { encodeKey } from './client.js';

/** Arguments for `new StreamableHTTPClientTransport(url, options)` of @modelcontextprotocol/sdk. */
export interface McpTransportArgs {
    url: URL;
    options: { requestInit: { headers: Record<string, string> } };
}

/**
 * With a session, the model's endpoint `/v1/sessions/{session}/mcp`: its
 * only tools are `reacquire` (the pointer text alone) and `list_spills`, for
 * that session. Without one, the orchestrator's `/mcp`, whose tools take
 * `session` as an argument and also compact and verify.
 */
export function mcpTransportArgs(baseUrl: string, apiKey?: string, session?: string): McpTransportArgs {
    const headers: Record<string, string> = {};
    if (apiKey !== undefined) headers.Authorization = `Bearer ${apiKey}`;
    const path = session === undefined ? 'mcp' : `v1/sessions/${encodeKey(session)}/mcp`;
    return { url: new URL(path, baseUrl.replace(/\/+$/, '') + '/'), options: { requestInit: { headers } } };
}
