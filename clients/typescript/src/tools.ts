// The reacquire tool for each provider: its definition in the provider's tool
// schema, and the glue that turns a model reply into history entries with the
// tool calls answered (reacquire by compactd, others by the caller's handlers).
import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import type { CompactdClient } from './client.js';
import { Ambiguous, InvalidPointer, InvalidRequest, NotFound } from './errors.js';

// The definitions GET /v1/sessions/{session}/tools answers (the per-session
// MCP endpoint's reacquire), written out here so that a tool list is built
// without a request; the client tests hold them equal to the server's.
export const REACQUIRE_TOOL_NAME = 'reacquire';
export const REACQUIRE_DESCRIPTION =
    'Returns, byte for byte, a text that was taken out of your context to keep it under its token budget ' +
    'and replaced by a pointer. A pointer looks like [externalized build.log sha256:5d1e0a3b9c7f2e41]: ' +
    '"[externalized ", the text\'s key, " sha256:", then 16 hex digits, then "]"; a loss marker may name ' +
    'such pointers too. What a pointer stands for (a constraint, a log, a tool result, a decision) is NOT ' +
    'in your context any more: call reacquire before you act on, quote, or decide anything about it, and ' +
    'never guess its content. Pass the pointer text alone, exactly as it appears (with its brackets). The ' +
    'result is the original text exactly (a message of this conversation comes back as it was sent: its ' +
    'JSON, with its role, its texts and any calls or parts). A long text comes in pages: pass max_tokens ' +
    '(the most tokens of ' +
    'it you can take in at once) and the result is the text from offset (0 unless given) up to that many ' +
    'tokens, cut between characters; while more is left, a note after the page says how many tokens ' +
    'remain and the offset to call reacquire again with (the same pointer), and the pages put together ' +
    'are the original text exactly. offset is a byte offset: 0, or the next offset a note gave. An error ' +
    'result means this conversation holds no such text (check that the pointer is copied exactly); until ' +
    'it is re-acquired, do not act on what the pointer stood for.';
export const REACQUIRE_PARAMETERS = {
    type: 'object',
    additionalProperties: false,
    required: ['pointer', 'offset', 'max_tokens'],
    properties: {
        pointer: {
            type: 'string',
            description: 'The pointer exactly as it appears in your context, e.g. "[externalized build.log sha256:5d1e0a3b9c7f2e41]".',
        },
        offset: {
            type: ['integer', 'null'],
            description: 'Where the page starts, in bytes of the text\'s UTF-8: 0 (the default, also when null) or the offset the note after the previous page gave.',
        },
        max_tokens: {
            type: ['integer', 'null'],
            description: 'The most tokens the page may hold; the whole rest of the text when null or left out.',
        },
    },
} as const;

// A fresh copy each time: a caller may edit the tool it was given.
function parameters() {
    const p = REACQUIRE_PARAMETERS.properties;
    return { ...REACQUIRE_PARAMETERS, required: [...REACQUIRE_PARAMETERS.required],
             properties: { pointer: { ...p.pointer }, offset: { ...p.offset, type: [...p.offset.type] },
                           max_tokens: { ...p.max_tokens, type: [...p.max_tokens.type] } } };
}

/** The OpenAI Responses API's function tool for reacquire (`tools: [...]` of responses.create). */
export const RESPONSES_REACQUIRE_TOOL: OpenAI.Responses.FunctionTool = {
    type: 'function', name: REACQUIRE_TOOL_NAME, description: REACQUIRE_DESCRIPTION, parameters: parameters(), strict: true,
};

/** A handler for one of the caller's own tools: parsed arguments in, the result text out. */
export type ToolHandler = (args: unknown) => string | Promise<string>;
export type ToolHandlers = Record<string, ToolHandler>;

/** The outcome of one reacquire call as a tool result. */
export interface ReacquireOutcome {
    text: string;
    isError: boolean;
}

/**
 * Runs one reacquire call through POST /v1/sessions/{session}/reacquire with
 * the model's arguments (OpenAI's JSON string as it came, or a parsed
 * object). Arguments the server refuses and an unknown or ambiguous pointer
 * become an error result the model can act on; store and auth failures are
 * thrown (the model cannot fix those).
 */
export async function runReacquire(client: CompactdClient, session: string, args: unknown): Promise<ReacquireOutcome> {
    try {
        const spill = await client.reacquireCall(session, args);
        // A page that is not the last: the note tells the model where to read on.
        return { text: spill.note ? `${spill.text}\n\n${spill.note}` : spill.text, isError: false };
    } catch (e) {
        if (e instanceof InvalidRequest || e instanceof InvalidPointer || e instanceof NotFound || e instanceof Ambiguous)
            return { text: `compactd: ${e.message}`, isError: true };
        throw e;
    }
}

async function runHandler(handlers: ToolHandlers, name: string, args: unknown): Promise<ReacquireOutcome> {
    const h = handlers[name];
    if (!h) return { text: `no handler for tool ${name}`, isError: true };
    return { text: await h(args), isError: false };
}

function parseArgs(raw: string): unknown {
    try {
        return JSON.parse(raw);
    } catch {
        return undefined;
    }
}

/** OpenAI Chat Completions: the tool definition and a reply's turn. */
export class OpenAIReacquire {
    readonly tool: OpenAI.Chat.ChatCompletionFunctionTool = {
        type: 'function',
        function: { name: REACQUIRE_TOOL_NAME, description: REACQUIRE_DESCRIPTION, parameters: parameters(), strict: true },
    };

    constructor(private readonly client: CompactdClient) {}

    /**
     * The history entries for a model reply: the reply as the API returned
     * it, every member kept (annotations, refusal, tool calls of any type),
     * its audio referred to by id as a request does, then one tool message
     * per call, in call order: reacquire calls answered by compactd, other
     * function calls by `handlers` (parsed arguments), custom tool calls by
     * `handlers` (the raw input text).
     */
    async turn(session: string, reply: OpenAI.Chat.ChatCompletionMessage,
               handlers: ToolHandlers = {}): Promise<OpenAI.Chat.ChatCompletionMessageParam[]> {
        const { audio, ...members } = reply;
        // The request types know no annotations; the API takes the reply
        // pushed back as it came, which is what keeps them.
        const assistant: OpenAI.Chat.ChatCompletionAssistantMessageParam = { ...members };
        if (audio) assistant.audio = { id: audio.id };
        else if (audio === null) assistant.audio = null;
        const calls = reply.tool_calls ?? [];
        if (calls.length === 0 && assistant.content === null && !audio && !reply.refusal && !reply.function_call)
            assistant.content = '';
        const out: OpenAI.Chat.ChatCompletionMessageParam[] = [assistant];
        for (const c of calls) {
            // reacquire's arguments go to compactd as the model wrote them.
            const r = c.type === 'custom' ? await runHandler(handlers, c.custom.name, c.custom.input)
                : c.function.name === REACQUIRE_TOOL_NAME ? await runReacquire(this.client, session, c.function.arguments)
                    : await runHandler(handlers, c.function.name, parseArgs(c.function.arguments));
            out.push({ role: 'tool', tool_call_id: c.id, content: r.text });
        }
        return out;
    }
}

/**
 * OpenAI Responses API: the function tool definition and a response's turn.
 * The Responses API takes a response's `output` items back as `input` (its
 * reasoning must come back with the calls that followed it), then one
 * output item per call, matched by `call_id`.
 */
export class ResponsesReacquire {
    readonly tool: OpenAI.Responses.FunctionTool = RESPONSES_REACQUIRE_TOOL;

    constructor(private readonly client: CompactdClient) {}

    /**
     * The input items for a response: its `output` items as the API returned
     * them, in their order, then a `function_call_output` for each function
     * call (reacquire answered by compactd, others by `handlers`) and a
     * `custom_tool_call_output` for each custom tool call (its handler gets
     * the raw input text), in call order.
     */
    async turn(session: string, response: Pick<OpenAI.Responses.Response, 'output'>,
               handlers: ToolHandlers = {}): Promise<OpenAI.Responses.ResponseInputItem[]> {
        // The API's loop pushes `response.output` back as it is; the SDK's
        // output item types are wider than its input ones in a few members
        // (a computer call output's status "failed"), hence the one cast.
        const out = [...response.output] as OpenAI.Responses.ResponseInputItem[];
        for (const item of response.output) {
            if (item.type === 'function_call') {
                const r = item.name === REACQUIRE_TOOL_NAME
                    ? await runReacquire(this.client, session, item.arguments)
                    : await runHandler(handlers, item.name, parseArgs(item.arguments));
                out.push({ type: 'function_call_output', call_id: item.call_id, output: r.text });
            } else if (item.type === 'custom_tool_call') {
                const r = await runHandler(handlers, item.name, item.input);
                out.push({ type: 'custom_tool_call_output', call_id: item.call_id, output: r.text });
            }
        }
        return out;
    }
}

/** Anthropic Messages: the tool definition and a reply's turn. */
export class AnthropicReacquire {
    readonly tool: Anthropic.Tool = {
        name: REACQUIRE_TOOL_NAME,
        description: REACQUIRE_DESCRIPTION,
        input_schema: parameters(),
    };

    constructor(private readonly client: CompactdClient) {}

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
