// A loopback stand-in for the OpenAI Chat Completions, OpenAI Responses and
// Anthropic Messages APIs (no real model is reachable in tests). It refuses,
// with the provider's 400 error shape, any history that breaks the
// provider's rules (tool call / result pairing, Anthropic's turn
// alternation, the Responses API's reasoning items and call ids, and given
// what the mock issued, signed thinking of the loop in flight and store:false
// reasoning of the current turn), records
// every request, and plays a fixed agent: read a file once, reacquire a
// pointer it sees once, then answer (streamed when asked).
import http from 'node:http';
import { streamReply } from './mock_stream.mjs';

const POINTER = /\[externalized [^[\]]+ sha256:[0-9a-f]{16}\]/;
export const REACQUIRE = 'reacquire';

// ---- OpenAI Chat Completions rules ----

// The parts a user message may hold besides text; other roles hold text only.
const USER_PARTS = ['image_url', 'input_audio', 'file'];

function textOfOpenAI(content, role) {
    if (content === null || content === undefined) return '';
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) throw new Error('content must be a string, an array of parts or null');
    return content.map((p, i) => {
        if (role === 'user' && USER_PARTS.includes(p.type)) {
            if (typeof p[p.type] !== 'object' || p[p.type] === null) throw new Error(`content[${i}].${p.type} is required`);
            return '';
        }
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
            textOfOpenAI(m.content, m.role);
            return;
        }
        if (pending.size > 0) throw new Error(`${at}: tool calls ${[...pending].join(', ')} must be answered first`);
        if (!['system', 'developer', 'user', 'assistant'].includes(m.role)) throw new Error(`${at}: unknown role ${m.role}`);
        // An assistant message is what a reply was: the API takes
        // `completion.choices[0].message` pushed back, annotations included;
        // its audio is referred to by id.
        const fields = m.role === 'assistant' ? ['role', 'content', 'name', 'tool_calls', 'refusal', 'annotations', 'audio', 'function_call']
            : ['role', 'content', 'name'];
        for (const k of Object.keys(m)) if (!fields.includes(k)) throw new Error(`${at}: unknown field ${k}`);
        if (m.audio !== undefined && m.audio !== null && (typeof m.audio.id !== 'string' || Object.keys(m.audio).length !== 1))
            throw new Error(`${at}.audio must be {"id": ...}, the id of an earlier audio response`);
        if (m.annotations !== undefined && !Array.isArray(m.annotations)) throw new Error(`${at}.annotations must be an array`);
        if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
            for (const [k, c] of m.tool_calls.entries()) {
                if (typeof c.id !== 'string') throw new Error(`${at}.tool_calls[${k}] malformed`);
                if (c.type === 'custom') {
                    if (typeof c.custom?.name !== 'string' || typeof c.custom?.input !== 'string' || c.function !== undefined)
                        throw new Error(`${at}.tool_calls[${k}] malformed`);
                } else if (c.type !== 'function' || typeof c.function?.name !== 'string' || typeof c.function?.arguments !== 'string') {
                    throw new Error(`${at}.tool_calls[${k}] malformed`);
                } else {
                    try { JSON.parse(c.function.arguments); } catch { throw new Error(`${at}.tool_calls[${k}].arguments is not JSON`); }
                }
                pending.add(c.id);
            }
            textOfOpenAI(m.content, m.role);
        } else if ((m.content === null || m.content === undefined) && !(m.role === 'assistant' && (m.audio || m.refusal || m.function_call))) {
            throw new Error(`${at}: content is required`);
        } else textOfOpenAI(m.content, m.role);
    });
    if (pending.size > 0) throw new Error(`tool calls ${[...pending].join(', ')} are never answered`);
}

// ---- Anthropic Messages rules ----

// The result blocks of the server tools, each after its server_tool_use in the same assistant turn.
const SERVER_RESULTS = ['web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result',
    'bash_code_execution_tool_result', 'text_editor_code_execution_tool_result', 'tool_search_tool_result'];

function blocksOf(content, at) {
    if (typeof content === 'string') return [{ type: 'text', text: content }];
    if (!Array.isArray(content) || content.length === 0) throw new Error(`${at}.content must be a string or blocks`);
    return content;
}

/**
 * The index of the first message of the tool-use loop in flight: the one
 * after the last user turn that is not tool results alone.
 */
export function anthropicInFlight(msgs) {
    let i = msgs.length;
    const resultsOnly = m => Array.isArray(m.content) && m.content.every(b => b.type === 'tool_result');
    while (i > 0 && !(msgs[i - 1].role === 'user' && !resultsOnly(msgs[i - 1]))) i--;
    return i;
}

/**
 * Anthropic's rules for thinking the API signed (`signed`: {verify(block),
 * issued: Map of a response's first tool_use id to the thinking blocks it
 * opened with}): every thinking block must carry its own signature; the
 * turns of the loop in flight must open with their thinking exactly as it
 * was returned, while the thinking of finished turns may be left out (the
 * API strips it).
 */
function checkThinking(msgs, signed) {
    const flight = anthropicInFlight(msgs);
    msgs.forEach((m, i) => {
        if (m.role !== 'assistant' || !Array.isArray(m.content)) return;
        m.content.forEach((b, k) => {
            if ((b.type === 'thinking' || b.type === 'redacted_thinking') && !signed.verify(b))
                throw new Error(`messages.${i}.content.${k}: Invalid \`signature\` in \`thinking\` block`);
        });
        const use = m.content.find(b => b.type === 'tool_use');
        const issued = use && signed.issued.get(use.id);
        if (i < flight || !issued) return;
        const lead = m.content.slice(0, issued.length);
        if (JSON.stringify(lead) !== JSON.stringify(issued))
            throw new Error(`messages.${i}.content.0: the thinking blocks of the assistant turn in flight ` +
                'must be passed back as they were returned (when `thinking` is enabled, the turn must start ' +
                'with its unmodified thinking block)');
    });
}

export function checkAnthropic(body, signed = null) {
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
        const served = new Set(); // server tool calls of this turn, answered in it by their results
        for (const [k, b] of blocks.entries()) {
            if (!['text', 'tool_use', 'tool_result', 'image', 'document', 'thinking', 'redacted_thinking', 'server_tool_use']
                .includes(b.type) && !SERVER_RESULTS.includes(b.type))
                throw new Error(`${at}.content[${k}]: unknown block ${b.type}`);
            if ((b.type === 'server_tool_use' || SERVER_RESULTS.includes(b.type)) && m.role !== 'assistant')
                throw new Error(`${at}.content[${k}]: ${b.type} in a user turn`);
            if (b.type === 'server_tool_use') served.add(b.id);
            if (SERVER_RESULTS.includes(b.type) && !served.delete(b.tool_use_id))
                throw new Error(`${at}.content[${k}]: ${b.type} answers no server_tool_use before it (${b.tool_use_id})`);
            if (b.type === 'text' && typeof b.text !== 'string') throw new Error(`${at}.content[${k}]: text missing`);
            // Thinking comes back in the assistant turn it was returned in, signed.
            if ((b.type === 'thinking' || b.type === 'redacted_thinking') && m.role !== 'assistant')
                throw new Error(`${at}: ${b.type} in a user turn`);
            if (b.type === 'thinking' && (typeof b.thinking !== 'string' || typeof b.signature !== 'string'))
                throw new Error(`${at}.content[${k}]: thinking needs its text and signature`);
            if (b.type === 'redacted_thinking' && typeof b.data !== 'string') throw new Error(`${at}.content[${k}]: data missing`);
            if (b.type === 'tool_use') {
                if (m.role !== 'assistant') throw new Error(`${at}: tool_use in a user turn`);
                if (typeof b.input !== 'object' || b.input === null) throw new Error(`${at}.content[${k}]: input must be an object`);
                pending.push(b.id);
            }
            if (b.type === 'tool_result' && m.role !== 'user') throw new Error(`${at}: tool_result in an assistant turn`);
        }
        if (served.size > 0) throw new Error(`${at}: server_tool_use ${[...served].join(', ')} without its result`);
    });
    if (pending.length > 0) throw new Error('the last assistant turn has unanswered tool_use blocks');
    if (msgs[msgs.length - 1].role !== 'user') throw new Error('the last message must be a user turn');
    if (signed) checkThinking(msgs, signed);
}

// ---- OpenAI Responses API rules ----

const MESSAGE_KEYS = ['type', 'id', 'role', 'content', 'status'];
const PARTS = { assistant: ['output_text', 'refusal'], other: ['input_text', 'input_image', 'input_file', 'input_audio'] };
const CALLS = { function_call_output: 'function_call', custom_tool_call_output: 'custom_tool_call' };

function itemType(item) {
    return item.type ?? (item.role !== undefined ? 'message' : undefined);
}

function textOfResponses(item, at) {
    if (typeof item.content === 'string') return item.content;
    if (!Array.isArray(item.content)) throw new Error(`${at}.content must be a string or content parts`);
    const allowed = item.role === 'assistant' ? PARTS.assistant : PARTS.other;
    return item.content.map((p, k) => {
        if (!allowed.includes(p.type)) throw new Error(`${at}.content[${k}]: ${p.type} is not allowed in a ${item.role} message`);
        return p.text ?? p.refusal ?? '';
    }).join('');
}

/** Items a model response holds after its reasoning: a call or the assistant's message. */
function followsReasoning(item) {
    const t = item === undefined ? undefined : itemType(item);
    return t === 'function_call' || t === 'custom_tool_call' || (t === 'message' && item.role === 'assistant');
}

function checkResponsesTools(tools) {
    for (const [k, t] of (tools ?? []).entries()) {
        if (t.type !== 'function') continue;
        // The Chat Completions shape nests the function; the Responses API does not.
        if (typeof t.name !== 'string') throw new Error(`Missing required parameter: 'tools[${k}].name'.`);
        if (t.function !== undefined) throw new Error(`Unknown parameter: 'tools[${k}].function'.`);
    }
}

/**
 * Throws naming the first input item the Responses API refuses.
 * `reasoningOf` maps the id of a call or message this mock answered to the
 * id of the reasoning item that came before it in the same response.
 */
/** The index of the last user message of a Responses input (-1: none): the current turn follows it. */
export function responsesTurnStart(input) {
    for (let i = input.length - 1; i >= 0; i--)
        if (itemType(input[i]) === 'message' && input[i].role === 'user') return i;
    return -1;
}

/**
 * With `store: false` nothing is kept server-side: a reasoning item comes
 * back whole, with the encrypted_content it was returned with (`sealed`
 * maps its id to that), and every call answered in the current turn must
 * have its reasoning item in that turn. A finished turn's reasoning may be
 * left out: the API discards it after the turn.
 */
function checkStateless(input, reasoningOf, sealed) {
    const start = responsesTurnStart(input);
    const current = new Set(input.slice(start + 1).map(item => item.id).filter(id => typeof id === 'string'));
    const callOf = new Map(input.map(item => [item.call_id, item]).filter(([id, item]) => id && itemType(item) === 'function_call'));
    input.forEach((item, i) => {
        const type = itemType(item);
        if (type === 'reasoning') {
            if (typeof item.encrypted_content !== 'string')
                throw new Error(`Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false.`);
            if (sealed.has(item.id) && sealed.get(item.id) !== item.encrypted_content)
                throw new Error(`The encrypted content for item ${item.id} could not be verified.`);
        }
        if (type !== 'function_call_output' || i <= start) return;
        const call = callOf.get(item.call_id), reasoning = call && reasoningOf.get(call.id);
        if (reasoning !== undefined && !current.has(reasoning))
            throw new Error(`Item '${call.id}' of type 'function_call' was provided without its required 'reasoning' item: '${reasoning}'.`);
    });
}

export function checkResponses(body, reasoningOf = new Map(), sealed = new Map()) {
    const input = body.input;
    if (!Array.isArray(input) || input.length === 0) throw new Error('input must be a non-empty array of items');
    if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string')
        throw new Error('instructions must be a string');
    checkResponsesTools(body.tools);
    const calls = new Map(), ids = new Set();
    input.forEach((item, i) => {
        const at = `input[${i}]`, type = itemType(item);
        if (type === 'message') {
            if (!['user', 'assistant', 'system', 'developer'].includes(item.role)) throw new Error(`${at}: unknown role ${item.role}`);
            for (const k of Object.keys(item)) if (!MESSAGE_KEYS.includes(k)) throw new Error(`Unknown parameter: '${at}.${k}'.`);
            textOfResponses(item, at);
            // A message the API returned is linked to its response's
            // reasoning by its id, with or without store (the API's words).
            const reasoning = typeof item.id === 'string' ? reasoningOf.get(item.id) : undefined;
            if (reasoning !== undefined && !input.some(x => itemType(x) === 'reasoning' && x.id === reasoning))
                throw new Error(`Item '${item.id}' of type 'message' was provided without its required 'reasoning' item: '${reasoning}'.`);
        } else if (type === 'reasoning') {
            if (!Array.isArray(item.summary)) throw new Error(`Missing required parameter: '${at}.summary'.`);
            if (!followsReasoning(input[i + 1]))
                throw new Error(`Item '${item.id}' of type 'reasoning' was provided without its required following item.`);
        } else if (type === 'function_call' || type === 'custom_tool_call') {
            if (typeof item.call_id !== 'string' || typeof item.name !== 'string') throw new Error(`${at}: call_id and name are required`);
            if (type === 'function_call') {
                if (typeof item.arguments !== 'string') throw new Error(`${at}.arguments must be a string`);
                try { JSON.parse(item.arguments); } catch { throw new Error(`${at}.arguments is not JSON`); }
            } else if (typeof item.input !== 'string') throw new Error(`${at}.input must be a string`);
            if (calls.has(item.call_id)) throw new Error(`${at}: duplicate call_id ${item.call_id}`);
            // Stored state pairs a call with its reasoning anywhere; without
            // it (store: false), checkStateless() holds the current turn to it.
            const reasoning = reasoningOf.get(item.id);
            if (body.store !== false && reasoning !== undefined && !ids.has(reasoning))
                throw new Error(`Item '${item.id}' of type '${type}' was provided without its required 'reasoning' item: '${reasoning}'.`);
            calls.set(item.call_id, { type, answered: false });
        } else if (type in CALLS) {
            const call = calls.get(item.call_id);
            if (!call || call.type !== CALLS[type] || call.answered)
                throw new Error(`No tool call found for ${type} with call_id ${item.call_id}.`);
            if (typeof item.output !== 'string' && !Array.isArray(item.output)) throw new Error(`${at}.output is required`);
            call.answered = true;
        } else {
            throw new Error(`${at}: unknown item type ${type}`);
        }
        if (typeof item.id === 'string') ids.add(item.id);
    });
    for (const [id, call] of calls) if (!call.answered) throw new Error(`No tool output found for ${call.type} ${id}.`);
    if (body.store === false) checkStateless(input, reasoningOf, sealed);
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
        texts.push(textOfOpenAI(m.content, m.role));
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

function responsesReply(body, n, reasoningOf) {
    const texts = [], called = [];
    for (const item of body.input) {
        const type = itemType(item);
        if (type === 'message') texts.push(textOfResponses(item, ''));
        if (type in CALLS) texts.push(typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
        if (type === 'function_call') called.push(item.name);
    }
    const names = (body.tools ?? []).map(t => t.name);
    const step = nextStep(texts, called, names, true);
    let output;
    if (step.tool) {
        // A reasoning model's call comes after its reasoning, which must come back with it.
        reasoningOf.set(`fc_${n}`, `rs_${n}`);
        output = [{ id: `rs_${n}`, type: 'reasoning', summary: [] },
                  { id: `fc_${n}`, type: 'function_call', status: 'completed', call_id: `call_${n}`, name: step.tool,
                    arguments: JSON.stringify(step.args) }];
    } else {
        output = [{ id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant',
                    content: [{ type: 'output_text', text: step.text, annotations: [] }] }];
    }
    return { id: `resp_${n}`, object: 'response', created_at: 1700000000, status: 'completed', model: body.model,
             output, error: null, incomplete_details: null, instructions: body.instructions ?? null, metadata: {},
             parallel_tool_calls: true, temperature: 1, top_p: 1, tool_choice: 'auto', tools: body.tools ?? [],
             usage: { input_tokens: 1, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1,
                      output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 } };
}

/** Starts the mock on a free loopback port; `requests` (also GET /_requests) holds every {api, body, error}. */
export async function startMockProvider() {
    const requests = [];
    const reasoningOf = new Map();
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
            const api = req.url.endsWith('/chat/completions') ? 'openai' : req.url.endsWith('/messages') ? 'anthropic'
                : req.url.endsWith('/responses') ? 'openai-responses' : null;
            const entry = { api, body, error: null };
            requests.push(entry);
            // An answer asked for with stream: true is streamed (mock_stream.mjs).
            const reply = r => (body.stream === true ? streamReply(res, api, r) : send(200, r));
            try {
                if (api === 'openai') { checkOpenAI(body); return reply(openaiReply(body, ++n)); }
                if (api === 'anthropic') { checkAnthropic(body); return reply(anthropicReply(body, ++n)); }
                if (api === 'openai-responses') { checkResponses(body, reasoningOf); return reply(responsesReply(body, ++n, reasoningOf)); }
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
