// compactd with the openai SDK (the `compactd/openai` entry point): Chat
// Completions and Responses histories typed by the SDK, and the reacquire
// tool for each with the turn that answers its calls.
import type OpenAI from 'openai';
import { type CompactdOptions, type JsonFormats } from './client.js';
import { REACQUIRE_TOOL_NAME } from './definitions.js';
import { Compactd as CoreCompactd } from './index.js';
import { parseArgs, reacquireToolFor, runHandler, runReacquire, type ToolHandlers } from './tools.js';
import type { CompactdClient, FormatMap } from './client.js';

/** The OpenAI formats' histories typed by the SDK; Anthropic's as plain JSON. */
export type OpenAIFormats = Omit<JsonFormats, 'openai' | 'openai-responses'> & {
    openai: { messages: OpenAI.Chat.ChatCompletionMessageParam[]; system: never; instructions: never };
    'openai-responses': { messages: OpenAI.Responses.ResponseInputItem[]; system: never; instructions: string };
};

/** The OpenAI Responses API's function tool for reacquire (`tools: [...]` of responses.create). */
export const RESPONSES_REACQUIRE_TOOL: OpenAI.Responses.FunctionTool = reacquireToolFor('openai-responses');

/** OpenAI Chat Completions: the tool definition and a reply's turn. */
export class OpenAIReacquire {
    readonly tool: OpenAI.Chat.ChatCompletionFunctionTool = reacquireToolFor('openai');

    constructor(private readonly client: CompactdClient<FormatMap>) {}

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

    constructor(private readonly client: CompactdClient<FormatMap>) {}

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

/** The client, its OpenAI histories typed by the SDK, with a ready reacquire tool for each OpenAI API. */
export class Compactd extends CoreCompactd<OpenAIFormats> {
    /** OpenAI Chat Completions: `tool` for `tools: [...]`, `turn()` for the reply. */
    readonly openai: OpenAIReacquire;
    /** OpenAI Responses API: `tool` for `tools: [...]`, `turn()` for the response's output. */
    readonly responses: ResponsesReacquire;

    constructor(options: CompactdOptions = {}) {
        super(options);
        this.openai = new OpenAIReacquire(this);
        this.responses = new ResponsesReacquire(this);
    }
}
