// LangChain.js v1 glue: a createAgent middleware that compacts the messages
// with compactd before each model call and registers the reacquire tool, and
// a trimMessages-shaped function for LCEL pipelines.
import { createMiddleware } from 'langchain';
import type { BaseMessage, SystemMessage } from '@langchain/core/messages';
import { RunnableLambda, type Runnable } from '@langchain/core/runnables';
import { tool } from '@langchain/core/tools';
import type { CompactdClient, CompactMessagesOptions, FormatMap, JsonFormats, MessagesCompactResult } from './client.js';
import { REACQUIRE_DESCRIPTION, REACQUIRE_PARAMETERS, REACQUIRE_TOOL_NAME } from './definitions.js';
import { fromProvider, providerTools, toProvider, formatOf, type LangChainFormat, type ProviderHistory } from './langchain_formats.js';
import { runReacquire } from './tools.js';

export { fromChatMessage, toChatMessage, type LangChainFormat } from './langchain_formats.js';

export interface CompactdLangChainOptions {
    client: CompactdClient<FormatMap>;
    session: string;
    /** Token budget for the whole request the model is sent: its system prompt, its tool definitions and the messages. */
    budget: number;
    /**
     * The format of the model's requests, which compactd compacts and prices:
     * by default the model's (`anthropic` for ChatAnthropic, else `openai`);
     * `openai` where there is no model (compactdTrimMessages).
     */
    format?: LangChainFormat;
    /** Other fields of the compact request (policy, tokenizer, reserve_tokens, annotations, ...). */
    request?: Omit<CompactMessagesOptions<JsonFormats, 'openai'>, 'format' | 'system' | 'tools' | 'instructions'>;
}

/** What a model call sends beside its messages, which the budget holds too. */
export interface LangChainRequestParts {
    /** The agent's system prompt. */
    system?: SystemMessage;
    /** The tools bound to the model (LangChain tools, or definitions in a provider's schema). */
    tools?: unknown[];
    /** The chat model: its format, its converter and its tool definitions. */
    model?: unknown;
}

type Rendered = Record<string, unknown> & { role: string; content?: unknown };

function isMarker(m: Rendered | undefined): boolean {
    return m !== undefined && typeof m.content === 'string' && m.content.startsWith('[compactd: ');
}

/**
 * Rebuilds LangChain messages from compactd's answer: a message rendered as
 * it was sent is the caller's own objects (ids and metadata kept), the
 * others (replaced, thinking taken from a finished turn, a marker appended)
 * are built from what compactd rendered, and so are loss markers.
 */
function rebuild(format: LangChainFormat, input: BaseMessage[], history: ProviderHistory, result: MessagesCompactResult): BaseMessage[] {
    const out: BaseMessage[] = input.slice(0, history.leading);
    const rendered = result.messages as unknown as Rendered[];
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    const pushed = new Set<number>();
    let j = 0;
    for (const d of result.decisions) {
        if (d.decision === 'dropped') continue;
        const sent = history.messages[d.index];
        while (j < rendered.length && isMarker(rendered[j]) && !same(rendered[j], sent))
            out.push(fromProvider(format, rendered[j++] as Rendered));
        const r = rendered[j++];
        if (r === undefined) break;
        const owners = history.owners[d.index] ?? [];
        if (owners.length === 0) continue; // the system prompt, sent apart as it is
        if (!same(r, sent)) {
            out.push(fromProvider(format, r));
            continue;
        }
        for (const k of owners) {
            if (!pushed.has(k)) out.push(input[k] as BaseMessage);
            pushed.add(k);
        }
    }
    for (; j < rendered.length; j++) out.push(fromProvider(format, rendered[j] as Rendered));
    return out;
}

/**
 * Compacts LangChain messages with compactd and answers the messages to
 * send to the model: the history as the model's converter writes it, with
 * the system prompt and tool definitions in `parts` (priced in the budget
 * and sent as they are).
 */
export async function compactLangChainMessages(messages: BaseMessage[], options: CompactdLangChainOptions,
                                               parts: LangChainRequestParts = {}): Promise<BaseMessage[]> {
    const format = options.format ?? (parts.model === undefined ? 'openai' : formatOf(parts.model));
    const history = await toProvider(format, messages, parts.system, parts.model);
    const tools = providerTools(parts.model, parts.tools ?? [], format);
    const body = { ...(options.request ?? {}), format, ...(tools.length > 0 ? { tools } : {}),
                   ...(history.system !== undefined ? { system: history.system } : {}) } as CompactMessagesOptions<JsonFormats, 'openai'>;
    const { result } = await options.client.compactMessages(options.session, history.messages as never, options.budget, body);
    return rebuild(format, messages, history, result);
}

/** The reacquire tool as a LangChain tool, bound to one session. */
export function reacquireTool(client: CompactdClient<FormatMap>, session: string) {
    return tool(async (args: unknown) => (await runReacquire(client, session, args)).text, {
        name: REACQUIRE_TOOL_NAME,
        description: REACQUIRE_DESCRIPTION,
        // Only the pointer is required here: LangChain checks a call's arguments against the
        // schema, and a model that is not in strict mode leaves the page's out.
        schema: { ...REACQUIRE_PARAMETERS, properties: { ...REACQUIRE_PARAMETERS.properties }, required: ['pointer'] },
    });
}

/**
 * createAgent middleware: before each model call the agent's messages are
 * compacted by compactd (the agent's state keeps the full history; only
 * what the model sees is compacted), and the reacquire tool is registered.
 */
export function compactdMiddleware(options: CompactdLangChainOptions) {
    return createMiddleware({
        name: 'CompactdMiddleware',
        tools: [reacquireTool(options.client, options.session)],
        wrapModelCall: async (request, handler) =>
            handler({ ...request, messages: await compactLangChainMessages(request.messages, options,
                { system: request.systemMessage, tools: request.tools, model: request.model }) }),
    });
}

/**
 * Shaped like @langchain/core's trimMessages: with messages, the compacted
 * messages; without, a Runnable that compacts its input (for LCEL pipes).
 */
export function compactdTrimMessages(options: CompactdLangChainOptions): Runnable<BaseMessage[], BaseMessage[]>;
export function compactdTrimMessages(messages: BaseMessage[], options: CompactdLangChainOptions): Promise<BaseMessage[]>;
export function compactdTrimMessages(a: BaseMessage[] | CompactdLangChainOptions, b?: CompactdLangChainOptions):
    Runnable<BaseMessage[], BaseMessage[]> | Promise<BaseMessage[]> {
    if (Array.isArray(a)) {
        if (b === undefined) throw new TypeError('compactdTrimMessages(messages, options): options missing');
        return compactLangChainMessages(a, b);
    }
    const options = a;
    return RunnableLambda.from((messages: BaseMessage[]) => compactLangChainMessages(messages, options));
}
