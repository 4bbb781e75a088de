// A loopback stand-in for the OpenAI Chat Completions and Anthropic Messages
// APIs (no real model is reachable in tests). It refuses, with the
// provider's 400 error shape, any history that breaks the provider's rules
// (tool call / result pairing, Anthropic's turn alternation), records every
// request, and plays a fixed agent: read a file once, reacquire a pointer it
// sees once, then answer.
import http from 'node:http';

const POINTER = /\[externalized [^[\]]+ sha256:[0-9a-f]{16}\]/;
export const REACQUIRE = 'reacquire';

// ---- OpenAI Chat Completions rules ----

function textOfOpenAI(content) {
    if (content === null || content === undefined) return '';
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) throw new Error('content must be a string, an array of parts or null');
    return content.map((p, i) => {
        if (p.type !== 'text' || typeof p.text !== 'string') throw new Error(`content[${i}] must be a text part`);
        return p.text;
    }).join('');
}

/** Throws with a message naming the first message that breaks the rules. */
export function checkOpenAI(body) {
    const msgs = body.messages;
    if (!Array.isArray(msgs) || msgs.length === 0) throw new Error('messages must be a non-empty array');
    let pending = new Set();
    msgs.forEach((m, i) => {
        const at = `messages[${i}]`;
        if (m.role === 'tool') {
            if (!pending.has(m.tool_call_id)) throw new Error(`${at}: tool message answers no pending tool call (${m.tool_call_id})`);
            pending.delete(m.tool_call_id);
            if (typeof m.content !== 'string' && !Array.isArray(m.content)) throw new Error(`${at}: tool content missing`);
            textOfOpenAI(m.content);
            return;
        }
        if (pending.size > 0) throw new Error(`${at}: tool calls ${[...pending].join(', ')} must be answered first`);
        if (!['system', 'developer', 'user', 'assistant'].includes(m.role)) throw new Error(`${at}: unknown role ${m.role}`);
        for (const k of Object.keys(m))
            if (!['role', 'content', 'name', 'tool_calls', 'refusal'].includes(k)) throw new Error(`${at}: unknown field ${k}`);
        if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
            for (const [k, c] of m.tool_calls.entries()) {
                if (c.type !== 'function' || typeof c.id !== 'string' || typeof c.function?.name !== 'string' ||
                    typeof c.function?.arguments !== 'string') throw new Error(`${at}.tool_calls[${k}] malformed`);
                try { JSON.parse(c.function.arguments); } catch { throw new Error(`${at}.tool_calls[${k}].arguments is not JSON`); }
                pending.add(c.id);
            }
            textOfOpenAI(m.content);
        } else if (m.content === null || m.content === undefined) {
            throw new Error(`${at}: content is required`);
        } else textOfOpenAI(m.content);
    });
    if (pending.size > 0) throw new Error(`tool calls ${[...pending].join(', ')} are never answered`);
}

// ---- Anthropic Messages rules ----

function blocksOf(content, at) {
    if (typeof content === 'string') return [{ type: 'text', text: content }];
    if (!Array.isArray(content) || content.length === 0) throw new Error(`${at}.content must be a string or blocks`);
    return content;
}

export function checkAnthropic(body) {
    const msgs = body.messages;
    if (!Array.isArray(msgs) || msgs.length === 0) throw new Error('messages must be a non-empty array');
    if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
        throw new Error('system must be a string or text blocks');
    let pending = [];
    msgs.forEach((m, i) => {
        const at = `messages[${i}]`;
        const want = i % 2 === 0 ? 'user' : 'assistant';
        if (m.role !== want) throw new Error(`${at}: roles must alternate user/assistant starting with user, got ${m.role}`);
        const blocks = blocksOf(m.content, at);
        const results = blocks.filter(b => b.type === 'tool_result');
        if (pending.length > 0) {
            const ids = results.map(b => b.tool_use_id);
            for (const id of pending) if (!ids.includes(id)) throw new Error(`${at}: tool_use ${id} has no tool_result right after it`);
            if (blocks.slice(0, results.length).some(b => b.type !== 'tool_result'))
                throw new Error(`${at}: tool_result blocks must come first`);
        }
        for (const r of results) if (!pending.includes(r.tool_use_id)) throw new Error(`${at}: tool_result ${r.tool_use_id} answers no tool_use`);
        pending = [];
        for (const [k, b] of blocks.entries()) {
            if (!['text', 'tool_use', 'tool_result', 'image', 'document'].includes(b.type)) throw new Error(`${at}.content[${k}]: unknown block ${b.type}`);
            if (b.type === 'text' && typeof b.text !== 'string') throw new Error(`${at}.content[${k}]: text missing`);
            if (b.type === 'tool_use') {
                if (m.role !== 'assistant') throw new Error(`${at}: tool_use in a user turn`);
                if (typeof b.input !== 'object' || b.input === null) throw new Error(`${at}.content[${k}]: input must be an object`);
                pending.push(b.id);
            }
            if (b.type === 'tool_result' && m.role !== 'user') throw new Error(`${at}: tool_result in an assistant turn`);
        }
    });
    if (pending.length > 0) throw new Error('the last assistant turn has unanswered tool_use blocks');
    if (msgs[msgs.length - 1].role !== 'user') throw new Error('the last message must be a user turn');
}

// ---- The fixed agent ----

/** What the model does next, from the history it was sent: {tool, args} or {text}. */
function nextStep(texts, calledTools, toolNames, readFile) {
    // A call compactd dropped is named in its loss marker: it still ran.
    for (const t of texts)
        if (t.startsWith('[compactd: '))
            for (const name of toolNames) if (t.includes(` ${name} {`)) calledTools.push(name);
    if (readFile && toolNames.includes('read_file') && !calledTools.includes('read_file'))
        return { tool: 'read_file', args: { path: 'build.log' } };
    const pointer = texts.map(t => POINTER.exec(t)?.[0]).find(Boolean);
    if (pointer && toolNames.includes(REACQUIRE) && !calledTools.includes(REACQUIRE))
        return { tool: REACQUIRE, args: { pointer } };
    return { text: `done; called ${[...new Set(calledTools)].sort().join(', ') || 'no tool'}` };
}

function openaiReply(body, n) {
    const texts = [], called = [];
    for (const m of body.messages) {
        texts.push(textOfOpenAI(m.content));
        for (const c of m.tool_calls ?? []) called.push(c.function.name);
    }
    const names = (body.tools ?? []).map(t => t.function?.name);
    const step = nextStep(texts, called, names, true);
    const message = step.tool
        ? { role: 'assistant', content: null, refusal: null, annotations: [],
            tool_calls: [{ id: `call_${n}`, type: 'function', function: { name: step.tool, arguments: JSON.stringify(step.args) } }] }
        : { role: 'assistant', content: step.text, refusal: null, annotations: [] };
    return { id: `chatcmpl-${n}`, object: 'chat.completion', created: 1700000000, model: body.model,
             choices: [{ index: 0, message, logprobs: null, finish_reason: step.tool ? 'tool_calls' : 'stop' }],
             usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
}

function anthropicReply(body, n) {
    const texts = [], called = [];
    for (const m of body.messages)
        for (const b of blocksOf(m.content, '')) {
            if (b.type === 'text') texts.push(b.text);
            if (b.type === 'tool_result') texts.push(typeof b.content === 'string' ? b.content : JSON.stringify(b.content));
            if (b.type === 'tool_use') called.push(b.name);
        }
    const names = (body.tools ?? []).map(t => t.name);
    const step = nextStep(texts, called, names, true);
    const content = step.tool
        ? [{ type: 'text', text: 'Reading it back.', citations: null },
           { type: 'tool_use', id: `toolu_${n}`, name: step.tool, input: step.args }]
        : [{ type: 'text', text: step.text, citations: null }];
    return { id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model, content,
             stop_reason: step.tool ? 'tool_use' : 'end_turn', stop_sequence: null,
             usage: { input_tokens: 1, output_tokens: 1 } };
}

/** Starts the mock on a free loopback port; `requests` (also GET /_requests) holds every {api, body, error}. */
export async function startMockProvider() {
    const requests = [];
    let n = 0;
    const server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', c => chunks.push(c));
        req.on('end', () => {
            const send = (status, obj) => {
                res.writeHead(status, { 'Content-Type': 'application/json' });
                res.end(JSON.stringify(obj));
            };
            if (req.method === 'GET' && req.url === '/_requests') return send(200, requests);
            let body;
            try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { return send(400, { error: { message: 'not JSON' } }); }
            const api = req.url.endsWith('/chat/completions') ? 'openai' : req.url.endsWith('/messages') ? 'anthropic' : null;
            const entry = { api, body, error: null };
            requests.push(entry);
            try {
                if (api === 'openai') { checkOpenAI(body); return send(200, openaiReply(body, ++n)); }
                if (api === 'anthropic') { checkAnthropic(body); return send(200, anthropicReply(body, ++n)); }
                return send(404, { error: { message: `no route ${req.url}` } });
            } catch (e) {
                entry.error = e.message;
                if (api === 'anthropic') return send(400, { type: 'error', error: { type: 'invalid_request_error', message: e.message } });
                return send(400, { error: { message: e.message, type: 'invalid_request_error', param: null, code: null } });
            }
        });
    });
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address();
    return {
        requests,
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise(resolve => { server.closeAllConnections?.(); server.close(resolve); }),
    };
}
