// What every compactd error shares, and the errors that are the client's
// own (no answer, not a pointer); errors.ts, written from spec/shared.json,
// adds a class per error type of the server's.
import type { components } from './generated/openapi.js';

export type ErrorDetail = components['schemas']['ErrorDetail'];
export type ChatRequiredBy = components['schemas']['ChatRequiredBy'];

/** Any error answer from compactd (or a transport failure reaching it). */
export class CompactdError extends Error {
    /** HTTP status, or 0 when no answer arrived. */
    readonly status: number;
    /** `error.type` of the body, or `Transport` when no answer arrived. */
    readonly type: string;
    /** The parsed `error` object of the body, when there was one. */
    readonly detail: ErrorDetail | undefined;

    constructor(status: number, type: string, message: string, detail?: ErrorDetail) {
        super(message);
        this.name = new.target.name;
        this.status = status;
        this.type = type;
        this.detail = detail;
    }
}

/** An error body compactd answered: its `type` and `message`, the rest in `detail`. */
export class ErrorAnswer extends CompactdError {
    declare readonly detail: ErrorDetail;
    // retryAfter: the answer's Retry-After, which a subclass may read.
    constructor(status: number, detail: ErrorDetail, retryAfter: string | null = null) {
        super(status, detail.type, detail.message, detail);
        void retryAfter;
    }
}

/** No answer reached the client (connection refused, reset, timeout) or it was not compactd's JSON. */
export class TransportError extends CompactdError {
    constructor(message: string, status = 0, options?: { cause?: unknown }) {
        super(status, 'Transport', message);
        if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
    }
}

/** No answer came within the client's `timeoutMs` (per attempt). */
export class Timeout extends TransportError {
    readonly timeoutMs: number;
    constructor(message: string, timeoutMs: number, options?: { cause?: unknown }) {
        super(message, 0, options);
        this.timeoutMs = timeoutMs;
    }
}

/** A text given as a pointer that is not `[externalized <key> sha256:<hex>]`; nothing was sent. */
export class InvalidPointer extends CompactdError {
    readonly pointer: string;
    constructor(pointer: string) {
        super(0, 'InvalidPointer', `not a compactd pointer: ${JSON.stringify(pointer.slice(0, 200))}`);
        this.pointer = pointer;
    }
}

/** Seconds a Retry-After asks for: a number of seconds >= 0, else `fallback`. */
export function retryAfterSeconds(retryAfter: string | null, fallback: number): number {
    const n = retryAfter === null ? NaN : Number(retryAfter);
    return Number.isFinite(n) && n >= 0 ? n : fallback;
}

/** An error answer as the class `classes` gives its type, else a CompactdError. */
export function answerError(classes: Readonly<Record<string, typeof ErrorAnswer>>, status: number, body: unknown,
                            retryAfter: string | null): CompactdError {
    const detail = (body as { error?: ErrorDetail } | null)?.error;
    if (!detail || typeof detail.type !== 'string' || typeof detail.message !== 'string')
        return new TransportError(`compactd answered ${status} without an error body`, status);
    const cls = Object.hasOwn(classes, detail.type) ? classes[detail.type] : undefined;
    return cls ? new cls(status, detail, retryAfter) : new CompactdError(status, detail.type, detail.message, detail);
}
