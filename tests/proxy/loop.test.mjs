// Agent loops through compactd's proxy routes with the official SDKs: 40
// model calls per API (Chat Completions, Responses with store: false and
// encrypted reasoning, Anthropic Messages with signed thinking), streamed
// and not, each call's history compacted on the way to a loopback model
// that holds the providers' rules (tests/clients/mock_reasoning.mjs) and
// bills what it is sent. Every upstream request must be taken by the model
// and billed within the budget; the facts of the first task (a constraint,
// an exact path, a value a read returned) are in every request or behind a
// pointer that leads back to them; every few tasks the model reads a
// pointer back with the reacquire tool, which the proxy answers itself:
// the client never sees that call, the model got the spilled bytes exactly,
// and what the client gets is what the model sent last, byte for byte but
// for its usage, which counts every round.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Redis } from '../servers.mjs';
import { fileText as readFileText, recalled, startReasoningModel, userTask as taskText } from '../clients/mock_reasoning.mjs';
import { clientFor, pointersIn, spillOf, startProxy, strings, sumUsage } from './harness.mjs';

const CALLS = 40;
const CONSTRAINT = 'Never run git push --force, on any branch.';
const PLANTED = 'src/net/retry_policy.c';
const FACT = 'RETRY_LIMIT=17';
const SYSTEM = 'You are a coding agent working in a C repository. Use read_file to read files.';
const callsOf = n => [2, 1, 2, 2, 1][n % 5];
const recallOf = n => n % 3 === 0;
const bytes = s => Buffer.byteLength(s);

// Per API: the budget (o200k_base tokens for OpenAI's, bytes for
// Anthropic's, as compactd counts each) and reasoning of a size whose turn
// in flight fits it.
const SETUPS = {
    openai: { budget: 9000, count: countTokens },
    'openai-responses': { budget: 14000, count: countTokens, sealedBytes: [600, 900] },
    anthropic: { budget: 36000, count: bytes, style: 'once', thinkingTokens: [300, 700], signatureBytes: [200, 400] },
};

const fileText = path => readFileText(path, PLANTED, FACT);
const userTask = n => taskText(n, PLANTED, CONSTRAINT);

const readFile = {
    openai: { type: 'function', function: { name: 'read_file', description: 'Reads a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } },
    'openai-responses': { type: 'function', name: 'read_file', description: 'Reads a file', strict: false,
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
    anthropic: { name: 'read_file', description: 'Reads a file',
        input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
};

/** A whole answer through the SDK: {out, text}, the body as it came. */
async function whole(request) {
    const text = await (await request.asResponse()).text();
    return { out: JSON.parse(text), text };
}

/**
 * One call through the SDK: {out, text} when whole, the answer put back
 * together from its events when streamed.
 */
async function callModel(client, format, history, stream) {
    if (format === 'openai') {
        const params = { model: 'gpt-4o', messages: [{ role: 'system', content: SYSTEM }, ...history],
                         tools: [readFile.openai] };
        if (!stream) return whole(client.chat.completions.create(params));
        const s = await client.chat.completions.create({ ...params, stream: true });
        const message = { role: 'assistant', content: null, refusal: null };
        let finish = null;
        for await (const chunk of s) {
            const d = chunk.choices[0].delta;
            if (d.content) message.content = (message.content ?? '') + d.content;
            for (const c of d.tool_calls ?? []) {
                message.tool_calls ??= [];
                const have = message.tool_calls[c.index] ??= { id: c.id, type: 'function', function: { name: '', arguments: '' } };
                have.function.name += c.function?.name ?? '';
                have.function.arguments += c.function?.arguments ?? '';
            }
            finish = chunk.choices[0].finish_reason ?? finish;
        }
        return { out: { choices: [{ index: 0, message, finish_reason: finish }] } };
    }
    if (format === 'openai-responses') {
        const params = { model: 'gpt-5', store: false, include: ['reasoning.encrypted_content'],
                         reasoning: { effort: 'medium' }, instructions: SYSTEM, input: history,
                         tools: [readFile['openai-responses']] };
        if (!stream) return whole(client.responses.create(params));
        let done = null;
        for await (const e of await client.responses.create({ ...params, stream: true }))
            if (e.type === 'response.completed') done = e.response;
        return { out: done };
    }
    const params = { model: 'claude-sonnet-4-6', max_tokens: 16000, thinking: { type: 'enabled', budget_tokens: 8000 },
                     system: SYSTEM, messages: history, tools: [readFile.anthropic] };
    if (!stream) return whole(client.messages.create(params));
    return { out: await client.messages.stream(params).finalMessage() };
}

/** The calls an answer makes: [{name, args, id}]. */
function callsOf_(format, out) {
    if (format === 'openai')
        return (out.choices[0].message.tool_calls ?? []).map(c => ({ name: c.function.name, args: JSON.parse(c.function.arguments), id: c.id }));
    if (format === 'anthropic')
        return out.content.filter(b => b.type === 'tool_use').map(b => ({ name: b.name, args: b.input, id: b.id }));
    return out.output.filter(i => i.type === 'function_call').map(i => ({ name: i.name, args: JSON.parse(i.arguments), id: i.call_id }));
}

/** What the client keeps of an answer and of the tools it ran. */
function extend(format, history, out) {
    const calls = callsOf_(format, out);
    if (format === 'openai') {
        history.push(out.choices[0].message);
        for (const c of calls) history.push({ role: 'tool', tool_call_id: c.id, content: fileText(c.args.path) });
    } else if (format === 'anthropic') {
        history.push({ role: 'assistant', content: out.content });
        if (calls.length) history.push({ role: 'user', content: calls.map(c => ({ type: 'tool_result', tool_use_id: c.id, content: fileText(c.args.path) })) });
    } else {
        history.push(...out.output);
        for (const c of calls) history.push({ type: 'function_call_output', call_id: c.id, output: fileText(c.args.path) });
    }
    return calls;
}

/** What a streamed answer holds that the model made, for comparing with what it sent. */
function streamedPart(format, out) {
    const plain = JSON.parse(JSON.stringify(out));
    if (format === 'openai') return { content: plain.choices[0].message.content, tool_calls: plain.choices[0].message.tool_calls ?? [] };
    if (format === 'anthropic') return { content: plain.content, stop_reason: plain.stop_reason };
    return plain;
}

async function runLoop(redis, format, stream) {
    const setup = SETUPS[format];
    const model = await startReasoningModel({ format, ...setup, seed: 7 + format.length + (stream ? 1 : 0),
                                              callsOf, recallOf, planted: PLANTED });
    const compactd = await startProxy(redis, model.url, { COMPACTD_COMPACT_TO_PERCENT: '50' });
    const session = `loop-${format}-${stream ? 'stream' : 'whole'}`;
    // No read-only tools declared: every read is kept, verbatim or behind a
    // pointer, so that the history spills and the model reads spills back.
    const client = clientFor(compactd, format, {
        'X-Compactd-Budget': String(setup.budget), 'X-Compactd-Session': session });
    const history = [{ role: 'user', content: userTask(1) }];
    let task = 1, recalls = 0, factRead = false, rounds = 0;
    try {
        for (let call = 1; call <= CALLS; call++) {
            const seen = model.requests.length;
            const { out, text } = await callModel(client, format, history, stream);
            const sent = model.requests.slice(seen);
            assert.ok(sent.length >= 1, `call ${call}: nothing reached the model`);
            rounds += sent.length - 1;
            for (const [k, e] of sent.entries()) {
                assert.equal(e.error, null, `call ${call}, request ${k}: the model refused it: ${e.error}`);
                assert.ok(e.billed <= setup.budget, `call ${call}, request ${k}: billed ${e.billed} over ${setup.budget}`);
                assert.equal(e.body.stream === true, stream, `call ${call}: stream not passed on as sent`);
                // The planted facts: verbatim, or behind a pointer that leads to them.
                const texts = strings(e.body.messages ?? e.body.input).concat(strings(e.body.system ?? e.body.instructions ?? ''));
                const spills = [];
                for (const p of pointersIn(e.body)) spills.push(await spillOf(compactd, session, p));
                for (const fact of factRead ? [CONSTRAINT, PLANTED, FACT] : [CONSTRAINT, PLANTED])
                    assert.ok(texts.some(t => t.includes(fact)) || spills.some(t => t.includes(fact)) ||
                              texts.some(t => t.includes(`read_file {"path":"${PLANTED}"}`)),
                              `call ${call}, request ${k}: ${fact} is gone`);
            }
            // What the proxy answered itself stays inside: the client sees
            // the model's last answer, exactly as it was sent but for its
            // usage, every round's summed (and, streamed, the answer's id,
            // the first round's).
            const last = sent[sent.length - 1];
            const want = sent.length === 1 ? last.reply : { ...last.reply, usage: sumUsage(sent.map(e => e.reply.usage)) };
            if (stream)
                assert.deepEqual(streamedPart(format, out), streamedPart(format, { ...want, id: sent[0].reply.id }), `call ${call}: the answer changed on the way`);
            else
                assert.equal(text, JSON.stringify(want), `call ${call}: the answer changed on the way`);
            const r = recalled(format, last.body);
            if (r) {
                assert.equal(r.text, await spillOf(compactd, session, r.pointer), `call ${call}: the re-acquired bytes differ from the spill`);
                recalls++;
            }
            const calls = extend(format, history, out);
            assert.ok(calls.every(c => c.name === 'read_file'), `call ${call}: the client was handed a ${calls.map(c => c.name)} call`);
            if (calls.some(c => c.args.path === PLANTED)) factRead = true;
            if (calls.length === 0) history.push({ role: 'user', content: userTask(++task) });
        }
    } finally {
        await compactd.stop();
        await model.close();
    }
    return { task, recalls, rounds };
}

let redis;
before(async () => { redis = await Redis.start(); });
after(async () => { await redis?.stop(); });

for (const format of Object.keys(SETUPS))
    for (const stream of [false, true])
        test(`${format}${stream ? ', streamed' : ''}: ${CALLS} calls through the proxy`, async () => {
            const r = await runLoop(redis, format, stream);
            assert.ok(r.task > 10, `only ${r.task} user turns`);
            assert.ok(r.recalls >= 2, `the model read a pointer back only ${r.recalls} times`);
            console.log(`${format}${stream ? ' streamed' : ''}: ${r.task} user turns, ${r.recalls} recalls, ${r.rounds} reacquire rounds`);
        });
