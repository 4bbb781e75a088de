// compactd with the @anthropic-ai/sdk SDK (the `compactd/anthropic` entry
// point): Anthropic histories typed by the SDK, and the reacquire tool with
// the turn that answers its calls.
import type Anthropic from '@anthropic-ai/sdk';
import { type CompactdOptions, type JsonFormats } from './client.js';
import { REACQUIRE_TOOL_NAME } from './definitions.js';
import { Compactd as CoreCompactd } from './index.js';
import { reacquireToolFor, runHandler, runReacquire, type ToolHandlers } from './tools.js';
import type { CompactdClient, FormatMap } from './client.js';

/** Anthropic histories typed by the SDK; the OpenAI formats' as plain JSON. */
export type AnthropicFormats = Omit<JsonFormats, 'anthropic'> & {
    anthropic: { messages: Anthropic.MessageParam[]; system: string | Anthropic.TextBlockParam[]; instructions: never };
};

/** Anthropic Messages: the tool definition and a reply's turn. */
export class AnthropicReacquire {
    readonly tool: Anthropic.Tool = reacquireToolFor('anthropic');

    constructor(private readonly client: CompactdClient<FormatMap>) {}

    /**
     * The history entries for a model reply: the assistant turn, its
     * content blocks as the API returned them, every block and member
     * kept, in their order (thinking, which tool use with extended thinking
     * wants back unchanged; text with its citations; server tool calls and
     * their results; tool_use), then, when it calls tools, one user turn
     * holding a tool_result per tool_use, so turns keep alternating.
     */
    async turn(session: string, reply: Anthropic.Message, handlers: ToolHandlers = {}): Promise<Anthropic.MessageParam[]> {
        // A response block is a request block with the same members: the
        // API takes `response.content` back as it is.
        const blocks = reply.content.map(b => ({ ...b })) as Anthropic.ContentBlockParam[];
        const out: Anthropic.MessageParam[] = [{ role: 'assistant', content: blocks.length > 0 ? blocks : '' }];
        const uses = reply.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
        if (uses.length === 0) return out;
        const results: Anthropic.ToolResultBlockParam[] = [];
        for (const u of uses) {
            const r = u.name === REACQUIRE_TOOL_NAME
                ? await runReacquire(this.client, session, u.input)
                : await runHandler(handlers, u.name, u.input);
            const block: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: u.id, content: r.text };
            if (r.isError) block.is_error = true;
            results.push(block);
        }
        out.push({ role: 'user', content: results });
        return out;
    }
}

/** The client, its Anthropic histories typed by the SDK, with a ready reacquire tool. */
export class Compactd extends CoreCompactd<AnthropicFormats> {
    /** Anthropic Messages: `tool` for `tools: [...]`, `turn()` for the reply. */
    readonly anthropic: AnthropicReacquire;

    constructor(options: CompactdOptions = {}) {
        super(options);
        this.anthropic = new AnthropicReacquire(this);
    }
}
