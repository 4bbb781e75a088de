// The reacquire tool without a provider SDK: its definitions in each
// format's schema (definitions.ts, written from spec/shared.json, which the
// server's are too) and running one call; compactd/openai and
// compactd/anthropic turn a reply of their SDK into history entries.
import type { CompactdClient, FormatMap } from './client.js';
import { REACQUIRE_TOOLS } from './definitions.js';
import { Ambiguous, InvalidPointer, InvalidRequest, NotFound } from './errors.js';

/** The reacquire tool in format's tool schema, a fresh copy (a caller may edit the tool it was given). */
export function reacquireToolFor<F extends keyof typeof REACQUIRE_TOOLS>(format: F): (typeof REACQUIRE_TOOLS)[F] {
    return structuredClone(REACQUIRE_TOOLS[format]);
}

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
export async function runReacquire(client: CompactdClient<FormatMap>, session: string, args: unknown): Promise<ReacquireOutcome> {
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

/** A call of one of the caller's own tools, answered by its handler (an error result without one). */
export async function runHandler(handlers: ToolHandlers, name: string, args: unknown): Promise<ReacquireOutcome> {
    const h = handlers[name];
    if (!h) return { text: `no handler for tool ${name}`, isError: true };
    return { text: await h(args), isError: false };
}

/** A function call's arguments parsed, or undefined when they are not JSON. */
export function parseArgs(raw: string): unknown {
    try {
        return JSON.parse(raw);
    } catch {
        return undefined;
    }
}
