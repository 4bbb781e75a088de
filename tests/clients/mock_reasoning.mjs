// A loopback reasoning model behind the Anthropic Messages and OpenAI
// Responses APIs, for agent loops that think: every response carries
// reasoning state of realistic size (Anthropic thinking blocks of 1-4k
// tokens with signatures, Responses reasoning items with several KB of
// encrypted_content), each request is held to the providers' rules
// (mock_provider.mjs: signed thinking of the loop in flight unchanged;
// store: false reasoning with its calls in the current turn), and billed as
// the provider bills it: the texts by `count`, 3 tokens a message, and only
// the reasoning of the turn in flight, at its true size (finished turns'
// reasoning is stripped or discarded unread).
//
// The agent: each user message "Task N: ..." gets callsOf(N) read_file calls,
// then a one-line answer.
import crypto from 'node:crypto';
import http from 'node:http';
import { anthropicInFlight, checkAnthropic, checkResponses, responsesTurnStart } from './mock_provider.mjs';
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

function billAnthropic(body, count) {
    const flight = anthropicInFlight(body.messages);
    let t = typeof body.system === 'string' ? count(body.system) + MESSAGE_TOKENS : 0;
    body.messages.forEach((m, i) => {
        t += MESSAGE_TOKENS;
        const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
        for (const b of blocks) {
            if (b.type === 'text') t += count(b.text);
            if (b.type === 'tool_use') t += count(b.name) + count(JSON.stringify(b.input));
            if (b.type === 'tool_result')
                t += count(typeof b.content === 'string' ? b.content : (b.content ?? []).map(x => x.text ?? '').join(''));
            // Earlier turns' thinking is stripped from the context window.
            if (b.type === 'thinking' && i >= flight) t += count(b.thinking);
        }
    });
    return t;
}

function billResponses(body, count) {
    const start = responsesTurnStart(body.input);
    let t = typeof body.instructions === 'string' ? count(body.instructions) + MESSAGE_TOKENS : 0;
    body.input.forEach((item, i) => {
        t += MESSAGE_TOKENS;
        const type = item.type ?? 'message';
        if (type === 'message')
            t += count(typeof item.content === 'string' ? item.content : item.content.map(p => p.text ?? '').join(''));
        if (type === 'function_call') t += count(item.name) + count(item.arguments);
        if (type === 'function_call_output') t += count(typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
        // Reasoning is discarded after its turn; the current turn's is billed in full.
        if (type === 'reasoning' && i > start)
            t += unseal(item.id, item.encrypted_content) + item.summary.reduce((n, p) => n + count(p.text), 0);
    });
    return t;
}

// ---- The agent ----

const textsOf = m => typeof m.content === 'string' ? [m.content]
    : Array.isArray(m.content) ? m.content.map(b => b.text ?? '') : [];

/**
 * The task of the last user message, and how many of its reads the turn has
 * made: the calls it holds, and those a loss marker names as dropped (a
 * model reads what it did in either).
 */
function progress(format, body, planted) {
    const msgs = format === 'anthropic' ? body.messages : body.input;
    const start = format === 'anthropic' ? anthropicInFlight(msgs) - 1 : responsesTurnStart(msgs);
    const task = Number(/Task (\d+):/.exec(textsOf(msgs[start]).join(''))?.[1] ?? 0);
    const read = new Set();
    for (const m of msgs.slice(start)) {
        for (const t of textsOf(m))
            for (const hit of t.matchAll(/read_file \{"path":"([^"]+)"\}/g)) read.add(hit[1]);
        if (format === 'anthropic' && Array.isArray(m.content))
            for (const b of m.content) if (b.type === 'tool_use') read.add(b.input.path);
        if (format !== 'anthropic' && m.type === 'function_call') read.add(JSON.parse(m.arguments).path);
    }
    let made = 0;
    while (read.has(pathOf(task, made, planted))) made++;
    return { task, made };
}

/** The path the agent reads for call k of task n: task 1 starts at the planted file. */
export function pathOf(n, k, planted) {
    return n === 1 && k === 0 ? planted : `src/pkg${n}/part${k}.c`;
}

/**
 * Starts the model. opts: {format: 'anthropic' | 'openai-responses',
 * style: 'once' | 'interleaved' (Anthropic: thinking at the start of each
 * user turn, or before every call and answer), count, seed, callsOf(n),
 * planted (task 1's first path), thinkingTokens [lo, hi], signatureBytes
 * [lo, hi], sealedBytes [lo, hi]}. Each request is recorded as {body,
 * error, billed}.
 */
export async function startReasoningModel(opts) {
    const rng = generator(opts.seed).rnd;
    const requests = [];
    const signed = { verify: verifyThinking, issued: new Map() };
    const reasoningOf = new Map(), sealed = new Map();
    let n = 0;

    function thinkingBlock() {
        const thinking = prose(rng, between(rng, opts.thinkingTokens), opts.count);
        return { type: 'thinking', thinking, signature: sign(thinking, between(rng, opts.signatureBytes)) };
    }

    function anthropicReply(body) {
        const { task, made } = progress('anthropic', body, opts.planted);
        const call = made < opts.callsOf(task);
        const think = opts.style === 'interleaved' || made === 0;
        const content = think ? [thinkingBlock()] : [];
        if (call) {
            const use = { type: 'tool_use', id: `toolu_${n}`, name: 'read_file', input: { path: pathOf(task, made, opts.planted) } };
            if (think) signed.issued.set(use.id, content.slice());
            content.push(use);
        } else {
            content.push({ type: 'text', text: `Task ${task} done: read ${made} files.` });
        }
        return { id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model, content,
                 stop_reason: call ? 'tool_use' : 'end_turn', stop_sequence: null,
                 usage: { input_tokens: billAnthropic(body, opts.count), output_tokens: 1 } };
    }

    function responsesReply(body) {
        const { task, made } = progress('openai-responses', body, opts.planted);
        const bytes = between(rng, opts.sealedBytes);
        const rs = { id: `rs_${n}`, type: 'reasoning',
                     summary: [{ type: 'summary_text', text: prose(rng, 40, opts.count) }],
                     encrypted_content: seal(`rs_${n}`, Math.floor(bytes / 4), bytes) };
        sealed.set(rs.id, rs.encrypted_content);
        const output = [rs];
        if (made < opts.callsOf(task)) {
            reasoningOf.set(`fc_${n}`, rs.id);
            output.push({ id: `fc_${n}`, type: 'function_call', status: 'completed', call_id: `call_${n}`,
                          name: 'read_file', arguments: JSON.stringify({ path: pathOf(task, made, opts.planted) }) });
        } else {
            output.push({ id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant',
                          content: [{ type: 'output_text', text: `Task ${task} done: read ${made} files.`, annotations: [] }] });
        }
        return { id: `resp_${n}`, object: 'response', status: 'completed', model: body.model, output,
                 usage: { input_tokens: billResponses(body, opts.count), output_tokens: 1 } };
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
            const entry = { body, error: null, billed: null };
            requests.push(entry);
            n++;
            try {
                let reply;
                if (opts.format === 'anthropic') {
                    checkAnthropic(body, signed);
                    reply = anthropicReply(body);
                } else {
                    checkResponses(body, reasoningOf, sealed);
                    reply = responsesReply(body);
                }
                entry.billed = reply.usage.input_tokens;
                return send(200, reply);
            } catch (e) {
                entry.error = e.message;
                return send(400, { type: 'error', error: { type: 'invalid_request_error', message: e.message } });
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
