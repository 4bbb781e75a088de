// What the proxy suites share: compactd started with its upstreams pointed
// at a loopback model, the official SDKs pointed at compactd, and reading
// a pointer's spill back to compare what the model was given.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import assert from 'node:assert/strict';
import { Compactd } from '../servers.mjs';
import { history } from './histories.mjs';

// A provider key as the client holds it: it must reach the upstream and
// nowhere else (credentials.test.mjs scans for it).
export const PROVIDER_KEY = 'sk-proxytest-' + 'K9x2Qm7Lp4Zr8Wt1Vb6Nc3';

/** compactd whose OpenAI and Anthropic upstreams are base (a URL ending in /v1 or not). */
export async function startProxy(redis, upstream, env = {}) {
    return Compactd.start(redis, { env: {
        COMPACTD_UPSTREAM_OPENAI: upstream + '/v1', COMPACTD_UPSTREAM_ANTHROPIC: upstream + '/v1', ...env } });
}

/** The SDK client of format ('openai', 'openai-responses', 'anthropic') pointed at compactd's proxy. */
export function clientFor(compactd, format, headers = {}) {
    if (format === 'anthropic')
        return new Anthropic({ apiKey: PROVIDER_KEY, baseURL: `${compactd.base}/proxy/anthropic`,
                               defaultHeaders: headers, maxRetries: 0 });
    return new OpenAI({ apiKey: PROVIDER_KEY, baseURL: `${compactd.base}/proxy/openai/v1`,
                        defaultHeaders: headers, maxRetries: 0 });
}

export const POINTER = /\[externalized ([^[\]]+) sha256:([0-9a-f]{16})\]/g;

/** Every string in v, deeply. */
export function strings(v, out = []) {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(x => strings(x, out));
    else if (v && typeof v === 'object') Object.values(v).forEach(x => strings(x, out));
    return out;
}

/** The spilled text a pointer ([externalized key sha256:hex]) leads to in session. */
export async function spillOf(compactd, session, pointer) {
    const m = /\[externalized ([^[\]]+) sha256:([0-9a-f]{16})\]/.exec(pointer);
    const r = await compactd.get(`/v1/sessions/${encodeURIComponent(session)}/spills/${encodeURIComponent(m[1])}?sha256=${m[2]}`);
    if (r.status !== 200) throw new Error(`spill of ${pointer}: ${r.status} ${r.text}`);
    return r.json.text;
}

/**
 * What the proxy gave the model for a reacquire call: the spilled bytes,
 * whole, or, where the budget's room holds less (the turn just sent stays
 * in full beside it), their first page exactly, then the note saying how to
 * read on.
 */
export function assertSpilledBytes(result, spill, message) {
    const note = /\n\n(\[compactd: this is bytes 0 to (\d+) of (\d+);[^\]]*\])$/.exec(result);
    if (!note) return assert.equal(result, spill, message);
    const bytes = Buffer.from(spill, 'utf8');
    assert.equal(Number(note[3]), bytes.length, message);
    assert.equal(result.slice(0, result.length - note[1].length - 2),
                 bytes.subarray(0, Number(note[2])).toString('utf8'), message);
}

/** The pointers in a request's history (its tools' descriptions show an example). */
export function pointersIn(body) {
    return strings(body.messages ?? body.input).flatMap(s => [...s.matchAll(POINTER)].map(m => m[0]));
}

/**
 * The usage of an answer that took several model calls, as compactd
 * reports it: every count summed, member by member (nested ones too).
 */
export function sumUsage(usages) {
    const add = (sum, u) => {
        for (const [k, v] of Object.entries(u ?? {})) {
            if (typeof v === 'number' && typeof sum[k] === 'number') sum[k] += v;
            else if (v && typeof v === 'object' && sum[k] && typeof sum[k] === 'object') add(sum[k], v);
            else if (v !== null || !(k in sum)) sum[k] = structuredClone(v);
        }
        return sum;
    };
    return usages.reduce(add, {});
}

/**
 * A budget under which the history does not fit whole but, planned down to
 * half of it, leaves room for one run's output to be read back: the price
 * of the whole history (with the reacquire tool the proxy adds) less a few
 * tokens, asked of compactd itself with a dry run.
 */
export async function budgetFor(compactd, format) {
    const tools = (await compactd.get(`/v1/sessions/probe/tools?format=${format}`)).json.tools;
    const h = history(format);
    const r = await compactd.post('/v1/sessions/probe/messages/compact', {
        format, budget: 1e9, dry_run: true, messages: h.messages ?? h.input, tools: [...h.tools, ...tools] });
    assert.equal(r.status, 200, r.text);
    return r.json.used_tokens - 16;
}
