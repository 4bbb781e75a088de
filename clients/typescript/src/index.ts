// The package's entry point: the client, the errors, the definitions it
// shares with the server and the types generated from openapi.yaml. It
// imports no provider SDK: compactd/openai, compactd/anthropic and
// compactd/langchain do.
import { CompactdClient, type FormatMap, type JsonFormats } from './client.js';
import { mcpTransportArgs, type McpTransportArgs } from './mcp.js';

export * from './client.js';
export * from './errors.js';
export * from './definitions.js';
export { reacquireToolFor, runReacquire, type ReacquireOutcome, type ToolHandler, type ToolHandlers } from './tools.js';
export * from './mcp.js';
export type { components, paths, operations } from './generated/openapi.js';

/** The client; M types each format's history (plain JSON here, the SDK's types from compactd/openai or compactd/anthropic). */
export class Compactd<M extends FormatMap = JsonFormats> extends CompactdClient<M> {
    /**
     * `new StreamableHTTPClientTransport(m.url, m.options)` for the model's
     * MCP endpoint of `session` (reacquire and list_spills only), or without
     * a session for the orchestrator's `/mcp`.
     */
    mcp(session?: string): McpTransportArgs {
        return mcpTransportArgs(this.baseUrl, this.apiKey, session);
    }
}
