// The package's entry point: the client with its provider tools, the errors
// and the types generated from openapi.yaml.
import { CompactdClient, type CompactdOptions } from './client.js';
import { mcpTransportArgs, type McpTransportArgs } from './mcp.js';
import { AnthropicReacquire, OpenAIReacquire, ResponsesReacquire } from './tools.js';

export * from './client.js';
export * from './errors.js';
export * from './tools.js';
export * from './mcp.js';
export type { components, paths, operations } from './generated/openapi.js';

/** The client, with a ready reacquire tool for each provider. */
export class Compactd extends CompactdClient {
    /** OpenAI Chat Completions: `tool` for `tools: [...]`, `turn()` for the reply. */
    readonly openai: OpenAIReacquire;
    /** Anthropic Messages: `tool` for `tools: [...]`, `turn()` for the reply. */
    readonly anthropic: AnthropicReacquire;
    /** OpenAI Responses API: `tool` for `tools: [...]`, `turn()` for the response's output. */
    readonly responses: ResponsesReacquire;

    constructor(options: CompactdOptions = {}) {
        super(options);
        this.openai = new OpenAIReacquire(this);
        this.anthropic = new AnthropicReacquire(this);
        this.responses = new ResponsesReacquire(this);
    }

    /**
     * `new StreamableHTTPClientTransport(m.url, m.options)` for the model's
     * MCP endpoint of `session` (reacquire and list_spills only), or without
     * a session for the orchestrator's `/mcp`.
     */
    mcp(session?: string): McpTransportArgs {
        return mcpTransportArgs(this.baseUrl, this.apiKey, session);
    }
}
