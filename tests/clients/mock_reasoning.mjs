// A loopback reasoning model behind the Anthropic Messages, OpenAI Responses
// and OpenAI Chat Completions APIs, for agent loops that think: every
// response carries reasoning state of realistic size (Anthropic thinking
// blocks of 1-4k tokens with signatures, Responses reasoning items with
// several KB of encrypted_content, or kept by the provider under `store`),
// each request is held to the providers' rules (mock_provider.mjs: signed
// thinking of the loop in flight unchanged; reasoning with its calls in the
// current turn; calls paired with their results), and billed as the
// provider bills it: the texts by `count`, 3 tokens a message, the tool
// definitions, images by the providers' formulas, and only the reasoning of
// the turn in flight, at its true size (finished turns' reasoning is
// stripped or discarded unread).
//
// The agent: each user message "Task N: ..." gets callsOf(N) read_file calls,
// then a one-line answer; where recallOf(N) says so, it first reads back,
// page by page with the reacquire tool, the first compactd pointer its
// history holds. The same model also speaks OpenAI Chat Completions
// (format 'openai', no reasoning), and streams any answer asked for with
// `stream: true` (mock_stream.mjs). AGENT holds what a loop built on it
// plants and checks: the task texts, the files read_file returns, the
// facts stated once.
import crypto from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { anthropicInFlight, checkAnthropic, checkOpenAI, checkResponses, responsesTurnStart } from './mock_provider.mjs';
import { streamReply } from './mock_stream.mjs';
import { generator } from '../xorshift.mjs';

const SECRET = crypto.randomBytes(32);
const mac = text => crypto.createHmac('sha256', SECRET).update(text).digest();

const WORDS = ('the retry loop backs off when the socket closes so I should read the policy file before ' +
    'changing the limit then check which caller passes the timeout and whether the test covers the case ' +
    'where the server answers twice; a constant in the header may shadow the config value').split(' ');

/** Prose of about `tokens` tokens under count, from the seeded rng. */
function prose(rng, tokens, count) {
    const parts = [];
    let have = 0;
    while (have < tokens) {
        const n = 8 + Math.floor(rng() * 16);
        const s = Array.from({ length: n }, () => WORDS[Math.floor(rng() * WORDS.length)]).join(' ') + '. ';
        parts.push(s);
        have += count(s);
    }
    return parts.join('');
}

const between = (rng, [lo, hi]) => lo + Math.floor(rng() * (hi - lo + 1));

// ---- Anthropic: signed thinking ----

// A signature is the block's MAC and opaque filler, as long as a real one.
function sign(thinking, fillerBytes) {
    return Buffer.concat([mac(thinking), crypto.randomBytes(fillerBytes)]).toString('base64');
}

function verifyThinking(b) {
    if (b.type === 'redacted_thinking') return true;
    const raw = Buffer.from(b.signature ?? '', 'base64');
    return raw.length >= 32 && raw.subarray(0, 32).equals(mac(b.thinking ?? ''));
}

// ---- Responses: encrypted reasoning ----

// Fernet's layout (version 0x80, a timestamp, then ciphertext and its MAC),
// base64url: the true reasoning tokens ride inside, as the provider's do.
function seal(id, tokens, bytes) {
    const head = Buffer.alloc(13);
    head[0] = 0x80;
    head.writeUInt32BE(tokens, 9);
    const body = Buffer.concat([head, mac(`${id}:${tokens}`)]);
    return Buffer.concat([body, crypto.randomBytes(Math.max(0, bytes - body.length))]).toString('base64url');
}

function unseal(id, enc) {
    const raw = Buffer.from(enc, 'base64url');
    const tokens = raw.readUInt32BE(9);
    if (!raw.subarray(13, 45).equals(mac(`${id}:${tokens}`))) throw new Error(`The encrypted content for item ${id} could not be verified.`);
    return tokens;
}

// ---- What the provider bills ----

const MESSAGE_TOKENS = 3;

// Anthropic's tool use system prompt for current models with tool_choice auto (its pricing page).
const ANTHROPIC_TOOLS_PROMPT = 346;

/** A PNG's width and height, from its IHDR. */
function pngSize(b64) {
    const raw = Buffer.from(b64, 'base64');
    if (raw.length < 24 || raw.toString('latin1', 12, 16) !== 'IHDR') throw new Error('not a PNG the mock can size');
    return [raw.readUInt32BE(16), raw.readUInt32BE(20)];
}

/** Anthropic (vision docs): width * height / 750 after the long edge is scaled to at most 1568 px. */
function anthropicImage(b64) {
    let [w, h] = pngSize(b64);
    const edge = Math.max(w, h);
    if (edge > 1568) [w, h] = [w * 1568 / edge, h * 1568 / edge];
    return Math.ceil(w * h / 750);
}

/** OpenAI (images and vision, high detail): fit 2048 x 2048, short side to 768, 85 + 170 per 512 px tile. */
function openaiImage(url) {
    const m = /^data:image\/png;base64,(.*)$/.exec(url);
    if (!m) throw new Error('the mock sizes PNG data URLs only');
    let [w, h] = pngSize(m[1]);
    const fit = Math.min(1, 2048 / Math.max(w, h));
    [w, h] = [w * fit, h * fit];
    const short = Math.min(1, 768 / Math.min(w, h));
    [w, h] = [w * short, h * short];
    return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

const toolsOf = (body, count, framing) => Array.isArray(body.tools) && body.tools.length > 0
    ? count(JSON.stringify(body.tools)) + framing : 0;

function billAnthropic(body, count) {
    const flight = anthropicInFlight(body.messages);
    const system = typeof body.system === 'string' ? body.system : (body.system ?? []).map(b => b.text ?? '').join('');
    let t = (body.system !== undefined ? count(system) + MESSAGE_TOKENS : 0) + toolsOf(body, count, ANTHROPIC_TOOLS_PROMPT);
    body.messages.forEach((m, i) => {
        t += MESSAGE_TOKENS;
        const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
        for (const b of blocks) {
            if (b.type === 'text') t += count(b.text);
            if (b.type === 'image') t += anthropicImage(b.source.data);
            if (b.type === 'tool_use') t += count(b.name) + count(JSON.stringify(b.input));
            if (b.type === 'tool_result')
                t += count(typeof b.content === 'string' ? b.content : (b.content ?? []).map(x => x.text ?? '').join(''));
            // Earlier turns' thinking is stripped from the context window.
            if (b.type === 'thinking' && i >= flight) t += count(b.thinking);
        }
    });
    return t;
}

function billOpenAI(body, count) {
    let t = toolsOf(body, count, 0);
    for (const m of body.messages) {
        t += MESSAGE_TOKENS;
        const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content ?? [];
        for (const p of parts) {
            if (p.type === 'text') t += count(p.text);
            if (p.type === 'image_url') t += openaiImage(p.image_url.url);
        }
        for (const c of m.tool_calls ?? []) t += count(c.function.name) + count(c.function.arguments);
    }
    return t;
}

function billResponses(body, count, stored) {
    const start = responsesTurnStart(body.input);
    let t = (typeof body.instructions === 'string' ? count(body.instructions) + MESSAGE_TOKENS : 0) + toolsOf(body, count, 0);
    body.input.forEach((item, i) => {
        t += MESSAGE_TOKENS;
        const type = item.type ?? 'message';
        if (type === 'message')
            t += count(typeof item.content === 'string' ? item.content : item.content.map(p => p.text ?? '').join(''));
        if (type === 'function_call') t += count(item.name) + count(item.arguments);
        if (type === 'function_call_output') t += count(typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
        // Reasoning is discarded after its turn; the current turn's is billed in full.
        if (type === 'reasoning' && i > start)
            t += (stored ? stored.get(item.id) : unseal(item.id, item.encrypted_content)) +
                item.summary.reduce((n, p) => n + count(p.text), 0);
    });
    return t;
}

// ---- The agent ----

/** The texts a message shows the model: its text, a tool result's, a function output. */
const blockText = b => b.text ?? (typeof b.content === 'string' ? b.content
    : Array.isArray(b.content) ? b.content.map(x => x.text ?? '').join('') : '');
const textsOf = m => typeof m.content === 'string' ? [m.content]
    : typeof m.output === 'string' ? [m.output]
    : Array.isArray(m.content) ? m.content.map(blockText) : [];

/** The history of a request, whatever the format calls it. */
const historyOf = (format, body) => format === 'openai-responses' ? body.input : body.messages;

/** The index of the message that starts the current user turn. */
function turnStart(format, msgs) {
    if (format === 'anthropic') return anthropicInFlight(msgs) - 1;
    if (format === 'openai-responses') return responsesTurnStart(msgs);
    for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i].role === 'user') return i;
    return -1;
}

/** The calls of the history's items from `from` on: [{name, args, id}]. */
function callsIn(format, msgs, from) {
    const out = [];
    for (const m of msgs.slice(from)) {
        if (format === 'anthropic' && Array.isArray(m.content))
            for (const b of m.content) if (b.type === 'tool_use') out.push({ name: b.name, args: b.input, id: b.id });
        if (format === 'openai')
            for (const c of m.tool_calls ?? []) out.push({ name: c.function.name, args: JSON.parse(c.function.arguments), id: c.id });
        if (format === 'openai-responses' && m.type === 'function_call')
            out.push({ name: m.name, args: JSON.parse(m.arguments), id: m.call_id });
    }
    return out;
}

/** The result text given for call id, or undefined. */
function resultOf(format, msgs, id) {
    for (const m of msgs) {
        if (format === 'openai' && m.role === 'tool' && m.tool_call_id === id) return m.content;
        if (format === 'openai-responses' && m.type === 'function_call_output' && m.call_id === id) return m.output;
        if (format === 'anthropic' && Array.isArray(m.content))
            for (const b of m.content) if (b.type === 'tool_result' && b.tool_use_id === id) return b.content;
    }
    return undefined;
}

/**
 * The task of the last user message, and how many of its reads the turn has
 * made: the calls it holds, and those a loss marker names as dropped (a
 * model reads what it did in either).
 */
function progress(format, body, planted) {
    const msgs = historyOf(format, body);
    const start = turnStart(format, msgs);
    const task = Number(/Task (\d+):/.exec(textsOf(msgs[start]).join(''))?.[1] ?? 0);
    const read = new Set();
    for (const m of msgs.slice(start))
        for (const t of textsOf(m))
            for (const hit of t.matchAll(/read_file \{"path":"([^"]+)"\}/g)) read.add(hit[1]);
    for (const c of callsIn(format, msgs, start)) if (c.name === 'read_file') read.add(c.args.path);
    let made = 0;
    while (read.has(pathOf(task, made, planted))) made++;
    return { task, made, start };
}

const POINTER = /\[externalized [^[\]]+ sha256:[0-9a-f]{16}\]/;
const NOTE = /\n\n\[compactd: [^\]]*offset (\d+) to read on\.\]$/;

/**
 * The next reacquire call of a recall, or null once it is done: the first
 * pointer of the history, read from its start, then from each note's offset.
 */
function nextRecall(format, msgs, start) {
    const texts = msgs.flatMap(textsOf);
    const pointer = texts.map(t => POINTER.exec(t)?.[0]).find(Boolean);
    const calls = callsIn(format, msgs, start).filter(c => c.name === 'reacquire');
    if (calls.length === 0) return pointer ? { pointer } : null;
    const last = resultOf(format, msgs, calls[calls.length - 1].id);
    const more = typeof last === 'string' ? NOTE.exec(last) : null;
    return more ? { pointer: calls[0].args.pointer, offset: Number(more[1]) } : null;
}

/** What the recall of the current turn read: {pointer, text} (pages put together), or null. */
export function recalled(format, body) {
    const msgs = historyOf(format, body);
    const calls = callsIn(format, msgs, turnStart(format, msgs)).filter(c => c.name === 'reacquire');
    if (calls.length === 0) return null;
    const text = calls.map(c => resultOf(format, msgs, c.id) ?? '').map(t => t.replace(NOTE, '')).join('');
    return { pointer: calls[0].args.pointer, text };
}

/** A file's text as read_file returns it: about 500 tokens, the value fact (NAME=VALUE) in the planted file. */
export function fileText(path, planted, fact) {
    const lines = [];
    for (let i = 0; i < 40; i++) lines.push(`/* ${path}:${i + 1} */ static int step_${i}(int n) { return n + ${i}; }`);
    if (path === planted) lines.splice(7, 0, `#define ${fact.replace('=', ' ')} /* ${fact} */`);
    return lines.join('\n');
}

/** The user's task n: the first names the planted file and states the constraint once. */
export function userTask(n, planted, constraint) {
    if (n === 1) return `Task 1: the retry policy in ${planted} gives up too early; find why. ${constraint}`;
    return `Task ${n}: review src/pkg${n}/ for the same retry bug and report what you find.`;
}

/** The path the agent reads for call k of task n: task 1 starts at the planted file. */
export function pathOf(n, k, planted) {
    return n === 1 && k === 0 ? planted : `src/pkg${n}/part${k}.c`;
}

// ---- The agent a loop runs ----

/** What a loop plants in its first task and checks on every call, and the texts it is given. */
export const AGENT = {
    CONSTRAINT: 'Never run git push --force, on any branch.',
    PLANTED: 'src/net/retry_policy.c',
    FACT: 'RETRY_LIMIT=17',
    SYSTEM: 'You are a coding agent working in a C repository. Use read_file to read files.',
    // Reads per task: 1 or 2, so that a turn's own reasoning, which must go
    // back whole, fits the budget the loop runs at.
    callsOf: n => [2, 1, 2, 2, 1][n % 5],
    /** A file's text as read_file returns it (fileText()) for this agent. */
    fileText: path => fileText(path, AGENT.PLANTED, AGENT.FACT),
    userTask: n => userTask(n, AGENT.PLANTED, AGENT.CONSTRAINT),
};

/** A w x h PNG of one colour, base64: a real image whose size its header states. */
export function pngBase64(w, h) {
    const crc = buf => {
        let c = ~0;
        for (const byte of buf) {
            c ^= byte;
            for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
        }
        return ~c >>> 0;
    };
    const chunk = (type, data) => {
        const len = Buffer.alloc(4);
        len.writeUInt32BE(data.length);
        const sum = Buffer.alloc(4);
        sum.writeUInt32BE(crc(Buffer.concat([Buffer.from(type, 'latin1'), data])));
        return Buffer.concat([len, Buffer.from(type, 'latin1'), data, sum]);
    };
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(w, 0);
    ihdr.writeUInt32BE(h, 4);
    ihdr[8] = 8; // 8 bits, grey
    const rows = Buffer.alloc((w + 1) * h, 0x80);
    for (let y = 0; y < h; y++) rows[y * (w + 1)] = 0;
    return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
                          chunk('IDAT', zlib.deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]).toString('base64');
}

/**
 * Starts the model. opts: {format: 'anthropic' | 'openai-responses' |
 * 'openai' (Chat Completions),
 * style: 'once' | 'interleaved' (Anthropic: thinking at the start of each
 * user turn, or before every call and answer), store (Responses:
 * reasoning kept by the provider, sent back by id, its tokens in the usage
 * as `reasoning_tokens`), count, seed, callsOf(n),
 * planted (task 1's first path), thinkingTokens [lo, hi], signatureBytes
 * [lo, hi], sealedBytes [lo, hi], recallOf(n): whether task n ends with a
 * recall}. Each request is
 * recorded as {body, error, billed, reply, headers, url}.
 */
export async function startReasoningModel(opts) {
    const rng = generator(opts.seed).rnd;
    const requests = [];
    const signed = { verify: verifyThinking, issued: new Map() };
    const reasoningOf = new Map(), sealed = new Map(), stored = new Map();
    let n = 0;

    function thinkingBlock() {
        const thinking = prose(rng, between(rng, opts.thinkingTokens), opts.count);
        return { type: 'thinking', thinking, signature: sign(thinking, between(rng, opts.signatureBytes)) };
    }

    /** The turn's next step: {tool, args} or null for the answer. */
    function step(format, body) {
        const { task, made, start } = progress(format, body, opts.planted);
        if (made < opts.callsOf(task)) return { task, made, tool: 'read_file', args: { path: pathOf(task, made, opts.planted) } };
        const declared = (body.tools ?? []).some(t => (t.name ?? t.function?.name) === 'reacquire');
        const recall = opts.recallOf?.(task) && declared ? nextRecall(format, historyOf(format, body), start) : null;
        return recall ? { task, made, tool: 'reacquire', args: recall } : { task, made, tool: null };
    }

    function anthropicReply(body) {
        const { task, made, tool, args } = step('anthropic', body);
        const call = tool !== null;
        const think = opts.style === 'interleaved' || made === 0;
        const content = think ? [thinkingBlock()] : [];
        if (call) {
            const use = { type: 'tool_use', id: `toolu_${n}`, name: tool, input: args };
            if (think) signed.issued.set(use.id, content.slice());
            content.push(use);
        } else {
            content.push({ type: 'text', text: `Task ${task} done: read ${made} files.` });
        }
        return { id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model, content,
                 stop_reason: call ? 'tool_use' : 'end_turn', stop_sequence: null,
                 usage: { input_tokens: billAnthropic(body, opts.count), output_tokens: 1 } };
    }

    function openaiReply(body) {
        const { task, made, tool, args } = step('openai', body);
        const message = tool
            ? { role: 'assistant', content: null, refusal: null, annotations: [],
                tool_calls: [{ id: `call_${n}`, type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }] }
            : { role: 'assistant', content: `Task ${task} done: read ${made} files.`, refusal: null, annotations: [] };
        const billed = billOpenAI(body, opts.count);
        return { id: `chatcmpl-${n}`, object: 'chat.completion', created: 1700000000, model: body.model,
                 choices: [{ index: 0, message, logprobs: null, finish_reason: tool ? 'tool_calls' : 'stop' }],
                 usage: { prompt_tokens: billed, completion_tokens: 1, total_tokens: billed + 1, input_tokens: billed } };
    }

    function responsesReply(body) {
        const { task, made, tool, args } = step('openai-responses', body);
        const bytes = between(rng, opts.sealedBytes);
        const rs = { id: `rs_${n}`, type: 'reasoning',
                     summary: [{ type: 'summary_text', text: prose(rng, 40, opts.count) }] };
        const reasoningTokens = Math.floor(bytes / 4);
        if (opts.store) {
            stored.set(rs.id, reasoningTokens);
        } else {
            rs.encrypted_content = seal(`rs_${n}`, reasoningTokens, bytes);
            sealed.set(rs.id, rs.encrypted_content);
        }
        const output = [rs];
        if (tool) {
            reasoningOf.set(`fc_${n}`, rs.id);
            output.push({ id: `fc_${n}`, type: 'function_call', status: 'completed', call_id: `call_${n}`,
                          name: tool, arguments: JSON.stringify(args) });
        } else {
            reasoningOf.set(`msg_${n}`, rs.id);
            output.push({ id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant',
                          content: [{ type: 'output_text', text: `Task ${task} done: read ${made} files.`, annotations: [] }] });
        }
        return { id: `resp_${n}`, object: 'response', status: 'completed', model: body.model, output,
                 usage: { input_tokens: billResponses(body, opts.count, opts.store ? stored : null), output_tokens: 1,
                          output_tokens_details: { reasoning_tokens: reasoningTokens } } };
    }

    const server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', c => chunks.push(c));
        req.on('end', () => {
            const send = (status, obj) => {
                res.writeHead(status, { 'Content-Type': 'application/json' });
                res.end(JSON.stringify(obj));
            };
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            const entry = { body, error: null, billed: null, reply: null, headers: req.headers, url: req.url };
            requests.push(entry);
            n++;
            try {
                let reply;
                if (opts.format === 'anthropic') {
                    checkAnthropic(body, signed);
                    reply = anthropicReply(body);
                } else if (opts.format === 'openai') {
                    checkOpenAI(body);
                    reply = openaiReply(body);
                } else {
                    checkResponses(body, reasoningOf, sealed);
                    reply = responsesReply(body);
                }
                entry.billed = reply.usage.input_tokens ?? reply.usage.prompt_tokens;
                entry.reply = reply;
                if (body.stream === true) return streamReply(res, opts.format, reply);
                return send(200, reply);
            } catch (e) {
                entry.error = e.message;
                if (opts.format === 'anthropic')
                    return send(400, { type: 'error', error: { type: 'invalid_request_error', message: e.message } });
                return send(400, { error: { message: e.message, type: 'invalid_request_error', param: null, code: null } });
            }
        });
    });
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
    return {
        requests,
        url: `http://127.0.0.1:${server.address().port}`,
        close: () => new Promise(resolve => { server.closeAllConnections?.(); server.close(resolve); }),
    };
}
