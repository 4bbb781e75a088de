// LangChain.js v1 glue: a createAgent middleware that compacts the messages
// with compactd before each model call and registers the reacquire tool, and
// a trimMessages-shaped function for LCEL pipelines.
import { createMiddleware } from 'langchain';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { RunnableLambda, type Runnable } from '@langchain/core/runnables';
import { tool } from '@langchain/core/tools';
import type OpenAI from 'openai';
import type { CompactdClient, CompactMessagesOptions, MessagesCompactResult } from './client.js';
import { REACQUIRE_DESCRIPTION, REACQUIRE_PARAMETERS, REACQUIRE_TOOL_NAME, runReacquire } from './tools.js';

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;

export interface CompactdLangChainOptions {
    client: CompactdClient;
    session: string;
    /** Token budget for the messages (the agent's system prompt is sent as it is, outside it). */
    budget: number;
    /** Other fields of the compact request (policy, tokenizer, annotations, ...). */
    request?: Omit<CompactMessagesOptions<'openai'>, 'format' | 'system'>;
}

// ---- LangChain messages <-> Chat Completions messages ----

function textOf(content: BaseMessage['content']): string {
    if (typeof content === 'string') return content;
    return content.map(part => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** One LangChain message as a Chat Completions message (text content; tool calls with JSON arguments). */
export function toChatMessage(m: BaseMessage): ChatMessage {
    if (AIMessage.isInstance(m)) {
        const calls = m.tool_calls ?? [];
        const text = textOf(m.content);
        if (calls.length === 0) return { role: 'assistant', content: text };
        return {
            role: 'assistant',
            content: text.length > 0 ? text : null,
            tool_calls: calls.map(c => ({ id: c.id ?? '', type: 'function' as const,
                                         function: { name: c.name, arguments: JSON.stringify(c.args) } })),
        };
    }
    if (ToolMessage.isInstance(m)) return { role: 'tool', tool_call_id: m.tool_call_id, content: textOf(m.content) };
    if (SystemMessage.isInstance(m)) return { role: 'system', content: textOf(m.content) };
    if (HumanMessage.isInstance(m)) return { role: 'user', content: textOf(m.content) };
    throw new TypeError(`compactd: cannot send a LangChain message of type ${m.type}`);
}

function parseArgs(raw: string): Record<string, unknown> {
    try {
        const v: unknown = JSON.parse(raw);
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch { /* fall through */ }
    return { compactd: raw };
}

/** A Chat Completions message compactd answered, as a LangChain message. */
export function fromChatMessage(m: ChatMessage): BaseMessage {
    const text = (c: unknown): string => typeof c === 'string' ? c
        : Array.isArray(c) ? c.map(p => (p as { text?: string }).text ?? '').join('') : '';
    switch (m.role) {
        case 'assistant':
            return new AIMessage({
                content: text(m.content),
                tool_calls: (m.tool_calls ?? []).filter(c => c.type === 'function').map(c => ({
                    id: c.id, name: c.function.name, args: parseArgs(c.function.arguments), type: 'tool_call' as const })),
            });
        case 'tool': return new ToolMessage({ content: text(m.content), tool_call_id: m.tool_call_id });
        case 'user': return new HumanMessage(text(m.content));
        default: return new SystemMessage(text(m.content));
    }
}

function isMarker(m: ChatMessage | undefined): boolean {
    return m !== undefined && m.role === 'system' && typeof m.content === 'string' && m.content.startsWith('[compactd: ');
}

/**
 * Rebuilds LangChain messages from compactd's answer: a preserved message is
 * the caller's own object (ids and metadata kept), the others are built from
 * the rendered JSON, loss markers become system messages.
 */
function rebuild(input: BaseMessage[], sent: ChatMessage[], result: MessagesCompactResult): BaseMessage[] {
    const out: BaseMessage[] = [];
    const rendered = result.messages as unknown as ChatMessage[];
    let j = 0;
    for (const d of result.decisions) {
        if (d.decision === 'dropped') continue;
        const original = sent[d.index];
        // Markers stand where dropped runs were; a kept system message that reads like one is the message itself.
        while (j < rendered.length && isMarker(rendered[j]) &&
               JSON.stringify(rendered[j]) !== JSON.stringify(original)) {
            out.push(fromChatMessage(rendered[j] as ChatMessage));
            j++;
        }
        const r = rendered[j++];
        if (r === undefined) break;
        const own = input[d.index];
        out.push(d.decision === 'preserved' && own !== undefined ? own : fromChatMessage(r));
    }
    for (; j < rendered.length; j++) out.push(fromChatMessage(rendered[j] as ChatMessage));
    return out;
}

/** Compacts LangChain messages with compactd and answers the messages to send to the model. */
export async function compactLangChainMessages(messages: BaseMessage[], options: CompactdLangChainOptions): Promise<BaseMessage[]> {
    const sent = messages.map(toChatMessage);
    const { result } = await options.client.compactMessages(options.session, sent, options.budget,
                                                            { ...(options.request ?? {}), format: 'openai' });
    return rebuild(messages, sent, result);
}

/** The reacquire tool as a LangChain tool, bound to one session. */
export function reacquireTool(client: CompactdClient, session: string) {
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
            handler({ ...request, messages: await compactLangChainMessages(request.messages, options) }),
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
