// LangChain messages as a provider's request holds them, and back: what
// compactd must price is what the chat model sends (its system prompt, its
// tool definitions, thinking blocks and images included), so the messages
// go through the model's own converter where its package is installed
// (@langchain/anthropic, @langchain/openai), one message at a time so that
// each provider message knows the LangChain messages it came from.
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatPromptValue } from '@langchain/core/prompt_values';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import type OpenAI from 'openai';

/** The chat formats a LangChain model's requests take. */
export type LangChainFormat = 'openai' | 'anthropic';

type ProviderMessage = Record<string, unknown> & { role: string; content?: unknown };

/**
 * A history in a provider's format: its messages, for each the indices of
 * the LangChain messages it came from (none: the system prompt, sent as a
 * message in the OpenAI format), and Anthropic's top-level system.
 */
export interface ProviderHistory {
    messages: ProviderMessage[];
    owners: number[][];
    system?: string | Record<string, unknown>[];
    /** The LangChain messages at the start sent in `system` (Anthropic's leading system messages). */
    leading: number;
}

/** The format of a model's requests: Anthropic's for ChatAnthropic, else OpenAI's. */
export function formatOf(model: unknown): LangChainFormat {
    const type = (model as { _llmType?: () => string } | undefined)?._llmType?.();
    return type === 'anthropic' ? 'anthropic' : 'openai';
}

/**
 * The tool definitions the model sends for `tools`: what its bindTools()
 * binds, else each LangChain tool in OpenAI's schema (Anthropic's when
 * `format` is), a definition already in a provider's schema as it is.
 */
export function providerTools(model: unknown, tools: unknown[], format: LangChainFormat): unknown[] {
    if (tools.length === 0) return [];
    const bind = (model as { bindTools?: (t: unknown[]) => unknown } | undefined)?.bindTools;
    if (typeof bind === 'function') {
        try {
            const bound = bind.call(model, tools) as { config?: { tools?: unknown[] }; kwargs?: { tools?: unknown[] } };
            const out = bound?.config?.tools ?? bound?.kwargs?.tools;
            if (Array.isArray(out)) return out;
        } catch { /* a model that cannot bind them here: converted below */ }
    }
    return tools.map(t => {
        const isTool = typeof t === 'object' && t !== null && 'name' in t && ('schema' in t || 'invoke' in t);
        if (!isTool) return t;
        const fn = convertToOpenAITool(t as Parameters<typeof convertToOpenAITool>[0]).function;
        return format === 'anthropic' ? { name: fn.name, description: fn.description, input_schema: fn.parameters } : { type: 'function', function: fn };
    });
}

// ---- OpenAI (Chat Completions) ----

function textOf(content: BaseMessage['content']): string {
    if (typeof content === 'string') return content;
    return content.map(part => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** One LangChain message as a Chat Completions message, text only: where @langchain/openai is not installed. */
export function toChatMessage(m: BaseMessage): OpenAI.Chat.ChatCompletionMessageParam {
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

type OpenAIConverter = (m: BaseMessage[]) => ProviderMessage[];

async function openaiConverter(model: unknown): Promise<OpenAIConverter> {
    try {
        const { convertMessagesToCompletionsMessageParams: convert } = await import('@langchain/openai');
        const name = (model as { model?: string } | undefined)?.model;
        return messages => convert({ messages, model: name }) as unknown as ProviderMessage[];
    } catch {
        return messages => messages.map(toChatMessage) as ProviderMessage[];
    }
}

async function toOpenAI(messages: BaseMessage[], system: SystemMessage | undefined, model: unknown): Promise<ProviderHistory> {
    const convert = await openaiConverter(model);
    const out: ProviderHistory = { messages: [], owners: [], leading: 0 };
    if (system && textOf(system.content).length > 0)
        for (const p of convert([system])) { out.messages.push(p); out.owners.push([]); }
    messages.forEach((m, i) => {
        for (const p of convert([m])) { out.messages.push(p); out.owners.push([i]); }
    });
    return out;
}

function parseArgs(raw: string): Record<string, unknown> {
    try {
        const v: unknown = JSON.parse(raw);
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch { /* fall through */ }
    return { compactd: raw };
}

/** A Chat Completions message compactd answered, as a LangChain message. */
export function fromChatMessage(m: OpenAI.Chat.ChatCompletionMessageParam): BaseMessage {
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

// ---- Anthropic (Messages) ----

type AnthropicBody = { messages: ProviderMessage[]; system?: string | Record<string, unknown>[] };

const resultsOnly = (m: ProviderMessage | undefined) =>
    m !== undefined && m.role === 'user' && Array.isArray(m.content) &&
    (m.content as { type?: string }[]).every(b => b.type === 'tool_result');

/**
 * Through ChatAnthropic's own converter, as it sends them: leading system
 * messages (after the agent's system prompt) hoisted into `system`, each
 * message alone, then consecutive turns of tool results merged as it merges
 * them.
 */
async function toAnthropic(messages: BaseMessage[], system: SystemMessage | undefined): Promise<ProviderHistory> {
    const { convertPromptToAnthropic } = await import('@langchain/anthropic');
    const convert = (ms: BaseMessage[]) => convertPromptToAnthropic(new ChatPromptValue(ms)) as unknown as AnthropicBody;
    let lead = 0;
    while (lead < messages.length && SystemMessage.isInstance(messages[lead])) lead++;
    const systems = [...(system && textOf(system.content).length > 0 ? [system] : []), ...messages.slice(0, lead)];
    const out: ProviderHistory = { messages: [], owners: [], leading: lead };
    if (systems.length > 0) out.system = convert(systems).system;
    for (let i = lead; i < messages.length; i++) {
        const m = messages[i] as BaseMessage;
        if (SystemMessage.isInstance(m))
            throw new TypeError('compactd: Anthropic takes system messages only before the conversation; this one is message ' + i);
        for (const p of convert([m]).messages) {
            const last = out.messages.length - 1;
            if (resultsOnly(out.messages[last]) && resultsOnly(p)) {
                const prev = out.messages[last] as ProviderMessage;
                out.messages[last] = { ...prev, content: [...(prev.content as unknown[]), ...(p.content as unknown[])] };
                (out.owners[last] as number[]).push(i);
            } else {
                out.messages.push(p);
                out.owners.push([i]);
            }
        }
    }
    return out;
}

/** An Anthropic message compactd answered, as the LangChain message ChatAnthropic sends as it. */
function fromAnthropicMessage(m: ProviderMessage): BaseMessage {
    if (m.role !== 'assistant') return new HumanMessage({ content: m.content as HumanMessage['content'] });
    const blocks = Array.isArray(m.content) ? m.content as { type?: string; id?: string; name?: string; input?: unknown }[] : [];
    return new AIMessage({
        content: m.content as AIMessage['content'],
        tool_calls: blocks.filter(b => b.type === 'tool_use').map(b => ({
            id: b.id, name: b.name ?? '', args: (b.input ?? {}) as Record<string, unknown>, type: 'tool_call' as const })),
    });
}

/** The history the model would be sent, in `format`. */
export function toProvider(format: LangChainFormat, messages: BaseMessage[], system: SystemMessage | undefined,
                           model: unknown): Promise<ProviderHistory> {
    return format === 'anthropic' ? toAnthropic(messages, system) : toOpenAI(messages, system, model);
}

/** A message compactd answered (replaced, or a loss marker) as a LangChain message. */
export function fromProvider(format: LangChainFormat, m: ProviderMessage): BaseMessage {
    return format === 'anthropic' ? fromAnthropicMessage(m) : fromChatMessage(m as OpenAI.Chat.ChatCompletionMessageParam);
}
