// Typed exceptions for every error body compactd answers: one class per
// `error.type`, each carrying that type's fields.
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

/** 400: the request is malformed; `path` is the JSON path of the first offending field. */
export class InvalidRequest extends CompactdError {
    readonly path: string | undefined;
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
        this.path = detail.path;
    }
}

/**
 * 422: even the cheapest form of the protected units (or messages) exceeds
 * the budget. `requiredBudget` is the least budget that succeeds; `key`
 * (units) or `index` (messages) names what forced it.
 */
export class CompactionFailure extends CompactdError {
    readonly budget: number;
    readonly requiredBudget: number;
    readonly key: string | undefined;
    readonly index: number | undefined;
    readonly tokens: number | undefined;
    readonly pointerTokens: number | undefined;
    /** messages/compact only: the least plan (system, tools, reserve, markers, each message kept), adding up to requiredBudget, and `kinds`: the same by kind, largest first, each with what would lower it. */
    readonly requiredBy: ChatRequiredBy | undefined;
    /** The messages that forced the failure (messages routes only, when `index` is given). */
    forcing: unknown[] = [];
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
        this.budget = detail.budget ?? 0;
        this.requiredBudget = detail.required_budget ?? 0;
        this.key = detail.key;
        this.index = detail.index;
        this.tokens = detail.tokens;
        this.pointerTokens = detail.pointer_tokens;
        this.requiredBy = detail.required_by;
    }
}

/** 401: API keys are configured and the request's key is missing or unknown. */
export class Unauthorized extends CompactdError {
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
    }
}

/** 403: the request's Origin (or, without API keys, its Host) is not allowed; nothing was read or written. */
export class Forbidden extends CompactdError {
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
    }
}

/** 413: the body is over the server's limit (COMPACTD_MAX_BODY_BYTES); nothing was run. */
export class PayloadTooLarge extends CompactdError {
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
    }
}

/** 404: no such spill (version) or route. */
export class NotFound extends CompactdError {
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
    }
}

/** 409: a sha256 prefix matches several versions; `candidates` are their digests. */
export class Ambiguous extends CompactdError {
    readonly candidates: string[];
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
        this.candidates = detail.candidates ?? [];
    }
}

/** 503 StoreUnavailable: Redis did not answer; nothing was acknowledged. */
export class StoreUnavailable extends CompactdError {
    constructor(status: number, detail: ErrorDetail) {
        super(status, detail.type, detail.message, detail);
    }
}

/** 503 Overloaded: nothing was run; retry after `retryAfterSeconds`. */
export class Overloaded extends CompactdError {
    readonly retryAfterSeconds: number;
    constructor(status: number, detail: ErrorDetail, retryAfter: string | null) {
        super(status, detail.type, detail.message, detail);
        const n = retryAfter === null ? NaN : Number(retryAfter);
        this.retryAfterSeconds = Number.isFinite(n) && n >= 0 ? n : 1;
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

/** Maps an error answer to its typed exception. */
export function errorFromResponse(status: number, body: unknown, retryAfter: string | null): CompactdError {
    const detail = (body as { error?: ErrorDetail } | null)?.error;
    if (!detail || typeof detail.type !== 'string' || typeof detail.message !== 'string')
        return new TransportError(`compactd answered ${status} without an error body`, status);
    switch (detail.type) {
        case 'InvalidRequest': return new InvalidRequest(status, detail);
        case 'CompactionFailure': return new CompactionFailure(status, detail);
        case 'Unauthorized': return new Unauthorized(status, detail);
        case 'Forbidden': return new Forbidden(status, detail);
        case 'PayloadTooLarge': return new PayloadTooLarge(status, detail);
        case 'NotFound': return new NotFound(status, detail);
        case 'Ambiguous': return new Ambiguous(status, detail);
        case 'StoreUnavailable': return new StoreUnavailable(status, detail);
        case 'Overloaded': return new Overloaded(status, detail, retryAfter);
        default: return new CompactdError(status, detail.type, detail.message, detail);
    }
}
