// The compactd HTTP client: one method per REST operation, request and
// response types generated from openapi.yaml, errors as typed exceptions.
// It knows no provider SDK: a history is typed by the format map its class
// is given (compactd/openai and compactd/anthropic give theirs).
import type { components } from './generated/openapi.js';
import { KEY_UNRESERVED_PUNCTUATION, POINTER, POINTER_PATTERN, type ChatFormatName } from './definitions.js';
import { CompactdError, CompactionFailure, errorFromResponse, InvalidPointer, Overloaded, StoreUnavailable, Timeout, TransportError } from './errors.js';

type S = components['schemas'];
export type CompactRequest = S['CompactRequest'];
export type CompactResult = S['CompactResult'];
export type VerifyRequest = S['VerifyRequest'];
export type VerifyResult = S['VerifyResult'];
export type MessagesCompactRequest = S['MessagesCompactRequest'];
export type MessagesCompactResult = S['MessagesCompactResult'];
export type MessagesVerifyRequest = S['MessagesVerifyRequest'];
export type MessagesVerifyResult = S['MessagesVerifyResult'];
export type TokensRequest = S['TokensRequest'];
export type TokensResult = S['TokensResult'];
export type Spill = S['Spill'];
export type SpillList = S['SpillList'];
export type SessionTools = S['SessionTools'];
export type ToolsFormat = SessionTools['format'];
export type Unit = S['Unit'];
export type Tokenizer = S['Tokenizer'];

/** What a format's history is made of: its messages, a system prompt apart (Anthropic), instructions (Responses). */
export interface FormatTypes {
    messages: unknown[];
    system: unknown;
    instructions: unknown;
}
/** A type for each format's history. */
export type FormatMap = { [F in ChatFormatName]: FormatTypes };

/** A provider message as plain JSON. */
export type JsonMessage = { [key: string]: unknown };

/**
 * Chat formats and their histories as plain JSON: Chat Completions messages,
 * Anthropic turns with a top-level system, and the Responses API's input
 * items with its `instructions`.
 */
export interface JsonFormats {
    openai: { messages: JsonMessage[]; system: never; instructions: never };
    anthropic: { messages: JsonMessage[]; system: string | JsonMessage[]; instructions: never };
    'openai-responses': { messages: JsonMessage[]; system: never; instructions: string };
}
export type ChatFormat = ChatFormatName;

/** Options of compactMessages: everything of the request body but the history and budget. */
export type CompactMessagesOptions<M extends FormatMap, F extends ChatFormat> =
    Omit<MessagesCompactRequest, 'format' | 'budget' | 'messages' | 'system' | 'instructions'> & {
        format: F;
        /** Anthropic only: the top-level system prompt, always kept as sent. */
        system?: M[F]['system'];
        /** Responses API only: its instructions, priced like a system prompt and kept as sent. */
        instructions?: M[F]['instructions'];
    };

/** A compacted history typed for its format, and the server's whole answer. */
export interface CompactedHistory<M extends FormatMap, F extends ChatFormat> {
    messages: M[F]['messages'];
    /** Anthropic: the system prompt as sent (undefined in the other formats). */
    system: M[F]['system'] | undefined;
    /** Responses API: the instructions as sent (undefined in the other formats). */
    instructions: M[F]['instructions'] | undefined;
    result: MessagesCompactResult;
}

export interface CompactdOptions {
    /** Where compactd listens, e.g. `http://127.0.0.1:8080`. */
    baseUrl?: string;
    /** Sent as `Authorization: Bearer <apiKey>` when the server has API keys. */
    apiKey?: string;
    /** A fetch implementation (default: the global fetch of Node 20+). */
    fetch?: typeof fetch;
    /** Extra headers on every request. */
    headers?: Record<string, string>;
    /** Milliseconds each attempt may take before it fails with Timeout (default 60000). */
    timeoutMs?: number;
    /** Retries after a retriable failure (default 3; 0 turns retries off). */
    maxRetries?: number;
    /** The first wait between attempts in ms, doubled per retry (default 500). */
    backoffMs?: number;
    /** The longest wait between attempts in ms (default 8000). */
    maxBackoffMs?: number;
}

/** Per-call options of the compactions. */
export interface CallOptions {
    /** Sent as Idempotency-Key on every attempt of this call (default: a new UUID per call). */
    idempotencyKey?: string;
}

/** Percent-encodes every UTF-8 byte outside A-Z a-z 0-9 and KEY_UNRESERVED_PUNCTUATION, as compactd's hrefs do. */
export function encodeKey(key: string): string {
    let out = '';
    for (const byte of new TextEncoder().encode(key)) {
        const c = String.fromCharCode(byte);
        const kept = /^[A-Za-z0-9]$/.test(c) || KEY_UNRESERVED_PUNCTUATION.includes(c);
        out += kept ? c : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
    }
    return out;
}

/** Strips the characters compactd ignores around a pointer (POINTER.trimmed), and nothing else. */
function trimPointer(text: string): string {
    let start = 0, end = text.length;
    while (start < end && POINTER.trimmed.includes(text[start]!)) start++;
    while (end > start && POINTER.trimmed.includes(text[end - 1]!)) end--;
    return text.slice(start, end);
}

/**
 * The key and sha256 prefix of a pointer `[externalized <key> sha256:<hex>]`
 * as compactd reads it (POINTER_PATTERN), or null.
 */
export function parsePointer(pointer: string): { key: string; sha256: string } | null {
    const m = POINTER_PATTERN.exec(trimPointer(pointer));
    if (!m || m[1] === undefined || m[2] === undefined) return null;
    // Each escaped byte is written %XX; nothing else is.
    const key = m[1].replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (new TextEncoder().encode(key).length > POINTER.keyMaxBytes) return null;
    return { key, sha256: m[2] };
}

/**
 * Anthropic's system prompt is top-level: `role: "system"` messages (as
 * OpenAI-style histories hold them) join `system` after the one given, in
 * order. Answers the other messages, the index of each in the input, and the
 * system to send: a string when every part is one, else text blocks.
 */
function liftSystem(messages: { role: string; content: unknown }[], system: unknown):
        { messages: unknown[]; kept: number[]; system: unknown } {
    const parts: unknown[] = system === undefined ? [] : [system];
    const kept: number[] = [];
    messages.forEach((m, i) => (m.role === 'system' ? parts.push(m.content) : kept.push(i)));
    const lifted = parts.every(p => typeof p === 'string')
        ? parts.join('\n\n')
        : parts.flatMap(p => (typeof p === 'string' ? [{ type: 'text', text: p }] : p as unknown[]));
    return { messages: kept.map(i => messages[i]), kept, system: lifted };
}

/**
 * The REST operations; M types each format's history (plain JSON unless a
 * provider entry point gives its SDK's types).
 */
export class CompactdClient<M extends FormatMap = JsonFormats> {
    readonly baseUrl: string;
    readonly apiKey: string | undefined;
    private readonly fetchImpl: typeof fetch;
    private readonly headers: Record<string, string>;
    readonly timeoutMs: number;
    readonly maxRetries: number;
    readonly backoffMs: number;
    readonly maxBackoffMs: number;

    constructor(options: CompactdOptions = {}) {
        this.baseUrl = (options.baseUrl ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
        this.apiKey = options.apiKey;
        const f = options.fetch ?? globalThis.fetch;
        if (typeof f !== 'function') throw new TypeError('no fetch: pass options.fetch');
        this.fetchImpl = f;
        this.headers = { ...(options.headers ?? {}) };
        this.timeoutMs = options.timeoutMs ?? 60000;
        this.maxRetries = options.maxRetries ?? 3;
        this.backoffMs = options.backoffMs ?? 500;
        this.maxBackoffMs = options.maxBackoffMs ?? 8000;
        for (const [name, v] of Object.entries({ timeoutMs: this.timeoutMs, maxRetries: this.maxRetries, backoffMs: this.backoffMs, maxBackoffMs: this.maxBackoffMs }))
            if (!Number.isFinite(v) || v < 0 || (name === 'timeoutMs' && v === 0)) throw new RangeError(`${name} must be a number >= 0 (timeoutMs > 0)`);
    }

    /**
     * Sends a request with retries: a 503 Overloaded (nothing was run) after
     * its Retry-After; a 503 StoreUnavailable, a failed connection or a
     * Timeout only where a resend is safe (GET, HEAD, DELETE, or a request
     * carrying an Idempotency-Key). Never a 4xx. Waits double from backoffMs
     * up to maxBackoffMs, each cut by a random factor in [0.5, 1].
     */
    async request<T>(method: string, path: string, body?: unknown, rawBody?: string,
                     extraHeaders: Record<string, string> = {}): Promise<T> {
        const hasKey = (h: Record<string, string>) => Object.keys(h).some(k => k.toLowerCase() === 'idempotency-key');
        const safe = ['GET', 'HEAD', 'DELETE'].includes(method) || hasKey(extraHeaders) || hasKey(this.headers);
        for (let attempt = 0; ; attempt++) {
            try {
                return await this.send<T>(method, path, body, rawBody, extraHeaders);
            } catch (e) {
                const retriable = e instanceof Overloaded || (safe && (e instanceof StoreUnavailable
                    || (e instanceof TransportError && e.status === 0)));
                if (!retriable || attempt >= this.maxRetries || !(e instanceof CompactdError)) throw e;
                let delay = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt) * (0.5 + Math.random() / 2);
                if (e instanceof Overloaded) delay = Math.max(delay, e.retryAfterSeconds * 1000);
                await new Promise(resolve => setTimeout(resolve, delay));
            }
        }
    }

    /**
     * One attempt; answers the parsed body, or throws the typed error.
     * `rawBody`, when given, is sent as it is instead of `body` written as JSON.
     */
    private async send<T>(method: string, path: string, body: unknown, rawBody: string | undefined,
                          extraHeaders: Record<string, string>): Promise<T> {
        const headers: Record<string, string> = { Accept: 'application/json', ...this.headers, ...extraHeaders };
        if (this.apiKey !== undefined) headers.Authorization = `Bearer ${this.apiKey}`;
        let payload: string | undefined;
        if (body !== undefined || rawBody !== undefined) {
            headers['Content-Type'] = 'application/json';
            payload = rawBody ?? JSON.stringify(body);
        }
        const signal = AbortSignal.timeout(this.timeoutMs);
        let res: Response;
        let text: string;
        try {
            res = await this.fetchImpl(this.baseUrl + path, { method, headers, body: payload, signal });
            text = await res.text();
        } catch (e) {
            if (signal.aborted)
                throw new Timeout(`${method} ${path}: no answer within ${this.timeoutMs} ms`, this.timeoutMs, { cause: e });
            throw new TransportError(`${method} ${path}: ${(e as Error).message ?? e}`, 0, { cause: e });
        }
        let parsed: unknown = undefined;
        if (text.length > 0) {
            try {
                parsed = JSON.parse(text);
            } catch (e) {
                throw new TransportError(`${method} ${path}: ${res.status} with a body that is not JSON`, res.status, { cause: e });
            }
        }
        if (!res.ok) throw errorFromResponse(res.status, parsed, res.headers.get('Retry-After'));
        return parsed as T;
    }

    private sessionPath(session: string): string {
        return `/v1/sessions/${encodeKey(session)}`;
    }

    /** POST /v1/sessions/{session}/compact: plan a context of units under `budget`. */
    compactUnits(session: string, units: Unit[], budget: number,
                 options: Omit<CompactRequest, 'units' | 'budget'> = {}, call: CallOptions = {}): Promise<CompactResult> {
        return this.request('POST', `${this.sessionPath(session)}/compact`, { ...options, budget, units }, undefined,
                            { 'Idempotency-Key': call.idempotencyKey ?? crypto.randomUUID() });
    }

    /**
     * POST /v1/sessions/{session}/messages/compact: compacts a provider's chat
     * history and answers the history to send to the model, typed for that
     * provider. A CompactionFailure carries the forcing message in `forcing`.
     */
    async compactMessages<F extends ChatFormat>(session: string, messages: M[F]['messages'], budget: number,
                                                options: CompactMessagesOptions<M, F>, call: CallOptions = {}): Promise<CompactedHistory<M, F>> {
        // Anthropic has no system role; a history written with one is refused.
        let sent: unknown[] = messages, kept = messages.map((_, i) => i), sendOptions: object = options;
        if (options.format === 'anthropic' && messages.some(m => (m as { role?: string }).role === 'system')) {
            const lifted = liftSystem(messages as unknown as { role: string; content: unknown }[], options.system);
            sent = lifted.messages;
            kept = lifted.kept;
            sendOptions = { ...options, system: lifted.system };
        }
        // Provider messages are plain JSON objects; the spec types them as objects.
        const body = { ...sendOptions, budget, messages: sent } as unknown as MessagesCompactRequest;
        try {
            const result = await this.request<MessagesCompactResult>('POST', `${this.sessionPath(session)}/messages/compact`, body,
                                                                     undefined, { 'Idempotency-Key': call.idempotencyKey ?? crypto.randomUUID() });
            return {
                messages: result.messages as unknown as M[F]['messages'],
                system: result.system as M[F]['system'] | undefined,
                instructions: result.instructions as M[F]['instructions'] | undefined,
                result,
            };
        } catch (e) {
            const at = e instanceof CompactionFailure && e.index !== undefined ? kept[e.index] : undefined;
            if (e instanceof CompactionFailure && at !== undefined) {
                (e as { index: number | undefined }).index = at;
                e.forcing = [messages[at]];
            }
            throw e;
        }
    }

    /** POST /v1/sessions/{session}/verify: audit a context string for silent truncation. */
    verify(session: string, request: VerifyRequest): Promise<VerifyResult> {
        return this.request('POST', `${this.sessionPath(session)}/verify`, request);
    }

    /** POST /v1/sessions/{session}/messages/verify: the audit over a chat history. */
    verifyMessages(session: string, request: MessagesVerifyRequest): Promise<MessagesVerifyResult> {
        return this.request('POST', `${this.sessionPath(session)}/messages/verify`, request);
    }

    /** POST /v1/tokens: token counts of texts under a tokenizer (the server's default when omitted). */
    countTokens(texts: string[], tokenizer?: Tokenizer): Promise<TokensResult> {
        return this.request('POST', '/v1/tokens', tokenizer === undefined ? { texts } : { texts, tokenizer });
    }

    /** GET a spill by key (and sha256 prefix, 16-64 hex digits; without it, the version spilled last). */
    getSpill(session: string, key: string, sha256?: string): Promise<Spill> {
        const q = sha256 === undefined ? '' : `?sha256=${encodeURIComponent(sha256)}`;
        return this.request('GET', `${this.sessionPath(session)}/spills/${encodeKey(key)}${q}`);
    }

    /**
     * The spill a pointer text names, read through POST .../reacquire (logged
     * as a re-acquisition); InvalidPointer for a text that is no pointer.
     */
    async reacquire(session: string, pointer: string): Promise<Spill> {
        if (!parsePointer(pointer)) throw new InvalidPointer(pointer);
        return this.reacquireCall(session, { pointer });
    }

    /**
     * POST /v1/sessions/{session}/reacquire: runs a reacquire tool call with
     * the arguments the model produced, a JSON string sent as it is or an
     * object. Answers the spill; its `text` is the tool result.
     */
    reacquireCall(session: string, args: unknown): Promise<Spill> {
        const path = `${this.sessionPath(session)}/reacquire`;
        return typeof args === 'string' ? this.request('POST', path, undefined, args) : this.request('POST', path, args ?? {});
    }

    /** GET /v1/sessions/{session}/tools: the reacquire tool in a provider's tool schema. */
    tools(session: string, format: ToolsFormat): Promise<SessionTools> {
        return this.request('GET', `${this.sessionPath(session)}/tools?format=${encodeURIComponent(format)}`);
    }

    /** GET /v1/sessions/{session}/spills: every stored version of every spill. */
    listSpills(session: string): Promise<SpillList> {
        return this.request('GET', `${this.sessionPath(session)}/spills`);
    }

    /** DELETE /v1/sessions/{session}: every spill and the decision log go. */
    async deleteSession(session: string): Promise<void> {
        await this.request<undefined>('DELETE', this.sessionPath(session));
    }
}
