// What the official MCP client needs to reach compactd's MCP endpoint: the
// URL and the request headers (the API key), without depending on the SDK.

/** Arguments for `new StreamableHTTPClientTransport(url, options)` of @modelcontextprotocol/sdk. */
export interface McpTransportArgs {
    url: URL;
    options: { requestInit: { headers: Record<string, string> } };
}

/**
 * The server-wide endpoint `/mcp`; its tools take `session` as an argument
 * (a per-session endpoint is not served yet).
 */
export function mcpTransportArgs(baseUrl: string, apiKey?: string): McpTransportArgs {
    const headers: Record<string, string> = {};
    if (apiKey !== undefined) headers.Authorization = `Bearer ${apiKey}`;
    return { url: new URL('/mcp', baseUrl.replace(/\/+$/, '') + '/'), options: { requestInit: { headers } } };
}
