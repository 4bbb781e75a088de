// Streamed answers whose rounds call reacquire, through the SDKs' own
// stream helpers (openai's ChatCompletionStream and ResponseStream,
// Anthropic's MessageStream, which check the events' order and indexes as
// they put the answer together): every event reaches the client as it
// arrives, only what belongs to a reacquire call is held back, and the
// next round's events continue the same answer, renumbered, with the
// rounds' usage summed. Liveness without a clock: the model holds the rest
// of each round until the client has seen that round's first text through
// compactd, so that a proxy that waited for a round's end would never
// finish. A model that asks only to re-acquire past the bound, or a later
// round the upstream refuses, ends the stream with the provider's error
// event, which the SDK raises.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { checkResponses } from '../clients/mock_provider.mjs';
import { eventsOf } from '../clients/mock_stream.mjs';
import { Redis } from '../servers.mjs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { PROVIDER_KEY, budgetFor, clientFor, spillOf, startProxy } from './harness.mjs';
import { FORMATS, answer, firstPointer, history, reacquireResults } from './histories.mjs';
import { startScriptedModel } from './scripted_model.mjs';

let redis;
before(async () => { redis = await Redis.start(); });
after(async () => { await redis?.stop(); });

const MODELS = { openai: 'gpt-4o', 'openai-responses': 'gpt-5', anthropic: 'claude-sonnet-4-6' };
const TEXTS = ['Reading it back.', ' test_case_3 failed in the first run.'];
// Each round's usage, as each API reports it, and what the client must get: their sum.
const USAGE = {
    openai: [{ prompt_tokens: 100, completion_tokens: 7, total_tokens: 107, prompt_tokens_details: { cached_tokens: 20 } },
             { prompt_tokens: 130, completion_tokens: 11, total_tokens: 141, prompt_tokens_details: { cached_tokens: 90 } }],
    anthropic: [{ input_tokens: 100, output_tokens: 7, cache_read_input_tokens: 20 },
                { input_tokens: 130, output_tokens: 11, cache_read_input_tokens: 90 }],
    'openai-responses': [{ input_tokens: 100, output_tokens: 7, total_tokens: 107, output_tokens_details: { reasoning_tokens: 3 } },
                         { input_tokens: 130, output_tokens: 11, total_tokens: 141, output_tokens_details: { reasoning_tokens: 5 } }],
};
const SUMMED = {
    openai: { prompt_tokens: 230, completion_tokens: 18, total_tokens: 248, prompt_tokens_details: { cached_tokens: 110 } },
    anthropic: { input_tokens: 230, output_tokens: 18, cache_read_input_tokens: 110 },
    'openai-responses': { input_tokens: 230, output_tokens: 18, total_tokens: 248, output_tokens_details: { reasoning_tokens: 8 } },
};

const reasoning = id => ({ id, type: 'reasoning', summary: [], encrypted_content: `sealed-${id}` });
const thinking = text => ({ type: 'thinking', thinking: text, signature: `sig-${text.length}` });

/**
 * The model's answer of round n (1 or 2): round 1 says a text and calls
 * reacquire only (Anthropic thinks first; Responses reasons before its
 * message and before its call), round 2 says a text and calls reacquire
 * beside the client's run_tests (Responses: after one reasoning item).
 */
function roundReply(format, n, pointer) {
    const reacquire = { name: 'reacquire', args: { pointer } };
    const calls = n === 1 ? [reacquire] : [reacquire, { name: 'run_tests', args: {} }];
    const reply = answer(format, n, { text: TEXTS[n - 1], calls });
    reply.usage = USAGE[format][n - 1];
    if (format === 'anthropic') {
        if (n === 1) reply.content.unshift(thinking('The failing run is behind a pointer.'));
        // As the API streams it: the message's start holds the input, its delta the output.
        reply.streamUsage = { start: { ...reply.usage, output_tokens: 1 }, delta: reply.usage };
    }
    if (format === 'openai-responses') {
        const [message, ...items] = reply.output;
        reply.output = [reasoning(`rs_${n}a`), message, reasoning(`rs_${n}b`), ...items];
    }
    return reply;
}

/** reply's events as the API streams them, usage where the API puts it. */
function streamedEvents(format, reply, body) {
    if (format === 'anthropic') {
        const { streamUsage, ...plain } = reply;
        return eventsOf(format, plain).map(e => {
            const [head, data] = e.split('\ndata: ');
            const ev = JSON.parse(data);
            if (ev.type === 'message_start') ev.message.usage = streamUsage.start;
            if (ev.type === 'message_delta') ev.usage = streamUsage.delta;
            return `${head}\ndata: ${JSON.stringify(ev)}\n\n`;
        });
    }
    const events = eventsOf(format, reply);
    if (format === 'openai' && body.stream_options?.include_usage) // the last chunk, before [DONE]
        events.splice(events.length - 1, 0, `data: ${JSON.stringify({ id: reply.id, object: 'chat.completion.chunk',
            created: reply.created, model: reply.model, choices: [], usage: reply.usage })}\n\n`);
    return events;
}

const isTextDelta = e => /"(content|text|delta)":"[^"]/.test(e) &&
    /content_block_delta|output_text\.delta|chat\.completion\.chunk/.test(e) && !/"tool_calls"|partial_json|thinking_delta/.test(e);

/** A gate the model waits at and the client opens. */
function gate() {
    let open;
    const p = new Promise(resolve => { open = resolve; });
    return { wait: p, open };
}

/**
 * Streams reply: its events up to its first text delta, then, once the
 * gate is open (the client saw that text through compactd), the rest.
 */
function gatedStream(format, reply, body, g) {
    return async res => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'x-request-id': `req_${reply.id}` });
        const events = streamedEvents(format, reply, body);
        const k = events.findIndex(isTextDelta);
        for (const e of events.slice(0, k + 1)) res.write(e);
        await g.wait;
        for (const e of events.slice(k + 1)) res.write(e);
        res.end();
    };
}

/**
 * Sends history through the format's stream helper: calls onText(text)
 * for each text delta as the client reads it, records every event, and
 * resolves with the helper's final answer and the events.
 */
async function streamThrough(client, format, body, onText) {
    const seen = [];
    if (format === 'openai') {
        const s = client.chat.completions.stream({ model: MODELS[format], ...body, stream_options: { include_usage: true } });
        for await (const chunk of s) {
            seen.push(chunk);
            const text = chunk.choices[0]?.delta?.content;
            if (text) onText(text);
        }
        return { final: await s.finalChatCompletion(), seen };
    }
    if (format === 'anthropic') {
        const s = client.messages.stream({ model: MODELS[format], ...body });
        for await (const ev of s) {
            seen.push(ev);
            if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') onText(ev.delta.text);
        }
        return { final: await s.finalMessage(), seen };
    }
    const s = client.responses.stream({ model: MODELS[format], ...body });
    for await (const ev of s) {
        seen.push(ev);
        if (ev.type === 'response.output_text.delta') onText(ev.delta);
    }
    return { final: await s.finalResponse(), seen };
}

// Room for two rounds to read the first run back: protected messages the
// budget holds stay in full, so the history leaves the pages only the room
// the proxy keeps for them.
async function setup(script, env = {}) {
    const model = await startScriptedModel(script);
    const compactd = await startProxy(redis, model.url, {
        COMPACTD_COMPACT_TO_PERCENT: '50', COMPACTD_PROXY_REACQUIRE_ROOM_PERCENT: '60', ...env });
    return { model, compactd };
}

for (const format of FORMATS)
    test(`${format}: a round that re-acquires streams live, and the next round continues the same answer`, { timeout: 120000 }, async () => {
        const gates = [gate(), gate()];
        const { model, compactd } = await setup((body, n) =>
            ({ custom: gatedStream(format, roundReply(format, n, firstPointer(body)), body, gates[n - 1]) }));
        try {
            const session = `live-${format}`;
            // keep_last 0: the turn just sent (the second run's output) is
            // not pinned in full either, so that the first run's output goes
            // behind a pointer and both rounds read it back whole, in the
            // room the proxy keeps for that.
            const client = clientFor(compactd, format, {
                'X-Compactd-Budget': String(await budgetFor(compactd, format)), 'X-Compactd-Session': session,
                'X-Compactd-Policy': JSON.stringify({ keep_last: 0 }) });
            // Each round's first text opens its gate: the model holds the
            // rest of the round until then, so the round is relayed live.
            const upstreamCallsAtText = [];
            let text = '';
            const { final, seen } = await streamThrough(client, format, history(format), delta => {
                text += delta;
                const round = text.length <= TEXTS[0].length ? 0 : 1;
                if (upstreamCallsAtText[round] === undefined) {
                    upstreamCallsAtText[round] = model.requests.length;
                    gates[round].open();
                }
            });
            assert.deepEqual(upstreamCallsAtText, [1, 2], "each round's first text reached the client before the round's end");
            assert.equal(text, TEXTS.join(''));
            assert.equal(model.requests.length, 2);
            const [first, second] = model.requests;
            assert.equal(reacquireResults(format, second.body)[0], await spillOf(compactd, session, firstPointer(first.body)),
                         'the model was not given the spilled bytes');

            if (format === 'openai') {
                assert.equal(final.id, 'chatcmpl-1', 'one completion, the first round\'s');
                assert.ok(seen.every(c => c.id === 'chatcmpl-1'));
                const m = final.choices[0].message;
                assert.equal(m.content, TEXTS.join(''));
                assert.deepEqual(m.tool_calls.map(c => [c.id, c.function.name, c.function.arguments]), [['call_2_1', 'run_tests', '{}']]);
                assert.equal(final.choices[0].finish_reason, 'tool_calls');
                assert.deepEqual(seen.filter(c => c.choices[0]?.finish_reason).length, 1, 'one end');
                assert.deepEqual(final.usage, SUMMED[format]);
            } else if (format === 'anthropic') {
                assert.equal(final.id, 'msg_1');
                assert.equal(seen.filter(e => e.type === 'message_start').length, 1);
                assert.equal(seen.filter(e => e.type === 'message_stop').length, 1);
                assert.deepEqual(final.content.map(b => b.type === 'tool_use' ? [b.type, b.name, b.id] : [b.type, b.text ?? b.thinking]), [
                    ['thinking', 'The failing run is behind a pointer.'], ['text', TEXTS[0]], ['text', TEXTS[1]], ['tool_use', 'run_tests', 'toolu_2_1']]);
                assert.deepEqual(seen.filter(e => e.type === 'content_block_start').map(e => e.index), [0, 1, 2, 3]);
                assert.equal(final.stop_reason, 'tool_use');
                assert.deepEqual({ ...final.usage }, { ...SUMMED[format] });
            } else {
                assert.equal(final.id, 'resp_1', 'one response, the first round\'s');
                assert.equal(seen.filter(e => e.type === 'response.created').length, 1);
                assert.equal(seen.filter(e => e.type === 'response.completed').length, 1);
                // The reasoning before each message is kept, and before the
                // client's call (a reacquire call between them goes); the
                // reasoning that led to reacquire only went with it.
                assert.deepEqual(final.output.map(i => i.id), ['rs_1a', 'msg_1', 'rs_2a', 'msg_2', 'rs_2b', 'fc_2_1']);
                assert.deepEqual(seen.filter(e => e.type === 'response.output_item.added').map(e => [e.output_index, e.item.id]),
                                 [[0, 'rs_1a'], [1, 'msg_1'], [2, 'rs_2a'], [3, 'msg_2'], [4, 'rs_2b'], [5, 'fc_2_1']]);
                assert.deepEqual(seen.map(e => e.sequence_number), seen.map((e, i) => i), 'sequence numbers run on');
                assert.deepEqual(final.usage, SUMMED[format]);
                // What the client got can be given back as the next turn's input.
                const next = [...history(format).input, ...final.output,
                              { type: 'function_call_output', call_id: 'call_2_1', output: 'ok' }];
                checkResponses({ input: next, store: false });
            }
            const ev = (await compactd.get(`/v1/sessions/${session}/events`)).json.events;
            assert.equal(ev.filter(e => e.kind === 'reacquire').length, 2, 'both rounds\' calls answered and logged');
        } finally {
            gates.forEach(g => g.open());
            await compactd.stop();
            await model.close();
        }
    });

for (const format of FORMATS)
    test(`${format}: a stream that can only re-acquire past the bound ends with the provider's error event`, async () => {
        const { model, compactd } = await setup((body, n) => answer(format, n, {
            text: `round ${n}`, calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] }),
            { COMPACTD_PROXY_REACQUIRE_ROUNDS: '1' });
        try {
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(await budgetFor(compactd, format)) });
            let text = '';
            await assert.rejects(streamThrough(client, format, history(format), d => { text += d; }), e => {
                assert.match(String(e.message), /re-acquire, 1 rounds running/);
                return true;
            });
            assert.equal(text, 'round 1round 2', 'what came before the error was relayed');
            assert.equal(model.requests.length, 2);
        } finally {
            await compactd.stop();
            await model.close();
        }
    });

for (const format of FORMATS)
    test(`${format}: a later round the upstream refuses ends the stream with its error`, async () => {
        const refusal = format === 'anthropic'
            ? { type: 'error', error: { type: 'rate_limit_error', message: 'slow down: 42 requests a minute' } }
            : { error: { message: 'slow down: 42 requests a minute', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
        const { model, compactd } = await setup((body, n) => n === 1
            ? answer(format, n, { text: 'first', calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] })
            : { fail: { status: 429, body: refusal } });
        try {
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(await budgetFor(compactd, format)) });
            let text = '';
            await assert.rejects(streamThrough(client, format, history(format), d => { text += d; }), e => {
                assert.match(String(e.message), /slow down: 42 requests a minute/);
                return true;
            });
            assert.equal(text, 'first', 'the first round was relayed before the error');
            assert.equal(model.requests.length, 2);
        } finally {
            await compactd.stop();
            await model.close();
        }
    });

/** A Chat Completions chunk of completion id. */
const chunk = (id, delta, finish = null) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1700000000,
    model: 'gpt-4o', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

/**
 * Streams the history through compactd to a model whose custom(body, n)
 * writes each round: the first round's reacquire call answered inside, the
 * client reads one answer, "Reading. Done.", under the first round's id.
 * Resolves with the chunks it read.
 */
async function oneAnswerOfTwoRounds(custom, id, why) {
    const { model, compactd } = await setup((body, n) => ({ custom: res => custom(res, body, n) }));
    try {
        const client = clientFor(compactd, 'openai', { 'X-Compactd-Budget': String(await budgetFor(compactd, 'openai')) });
        const { final, seen } = await streamThrough(client, 'openai', history('openai'), () => {});
        assert.equal(model.requests.length, 2, why);
        assert.equal(final.choices[0].message.content, 'Reading. Done.');
        assert.equal(final.choices[0].message.tool_calls, undefined);
        assert.ok(seen.every(c => c.id === id));
        return seen;
    } finally {
        await compactd.stop();
        await model.close();
    }
}

const reacquireCall = body => ({ tool_calls: [{ index: 0, id: 'call_r', type: 'function',
    function: { name: 'reacquire', arguments: JSON.stringify({ pointer: firstPointer(body) }) } }] });

test('a chunk that carries its delta and the finish together is read as both', async () => {
    // Some servers end on a chunk with content or a call and finish_reason at once.
    const seen = await oneAnswerOfTwoRounds((res, body, n) => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        if (n === 1)
            res.write(chunk('chatcmpl-a', { role: 'assistant', content: 'Reading. ', ...reacquireCall(body) }, 'tool_calls'));
        else
            res.write(chunk('chatcmpl-b', { role: 'assistant', content: 'Done.' }, 'stop'));
        res.end('data: [DONE]\n\n');
    }, 'chatcmpl-a', 'the call in the closing chunk was not answered');
    assert.deepEqual(seen.map(c => c.choices[0]?.finish_reason ?? null), [null, null, 'stop']);
});

test('lines ended by a CR alone or by CRLF are read as the client reads them', async () => {
    // The SSE specification ends a line at CR, LF or CRLF, and so do the SDKs' readers.
    await oneAnswerOfTwoRounds((res, body, n) => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        const events = n === 1
            ? [chunk('chatcmpl-r', { role: 'assistant', content: 'Reading. ' }), chunk('chatcmpl-r', reacquireCall(body)),
               chunk('chatcmpl-r', {}, 'tool_calls'), 'data: [DONE]\n\n']
            : [chunk('chatcmpl-s', { role: 'assistant', content: 'Done.' }), chunk('chatcmpl-s', {}, 'stop'), 'data: [DONE]\n\n'];
        res.end(events.join('').replaceAll('\n', n === 1 ? '\r' : '\r\n'));
    }, 'chatcmpl-r', 'the reacquire call was not read');
});

test('fields written the short ways the specification allows are read as the SDK reads them', async () => {
    // "event" alone is the field with an empty value: it sets the event's
    // name to "", which the SDK reads by its data (here a text delta), where
    // the name it replaced ("ping") would have the SDK pass it over; and
    // "data" alone is an empty data line. The client through compactd gets
    // the answer the SDK puts together from the upstream's own stream.
    const format = 'anthropic';
    const reply = answer(format, 1, { text: 'Done.' });
    reply.usage = { input_tokens: 100, output_tokens: 7 };
    const events = streamedEvents(format, { ...reply, streamUsage: { start: reply.usage, delta: reply.usage } });
    const k = events.findIndex(isTextDelta);
    const delta = JSON.parse(events[k].split('\ndata: ')[1]);
    delta.delta.text = ' More.';
    events.splice(k + 1, 0, `event: ping\nevent\ndata: ${JSON.stringify(delta)}\n\n`, ':\ndata\n\n');
    const { model, compactd } = await setup(() => ({ custom: res => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.end(events.join(''));
    } }));
    try {
        const params = { model: MODELS[format], ...history(format) };
        const direct = await new Anthropic({ apiKey: PROVIDER_KEY, baseURL: model.url, maxRetries: 0 })
            .messages.stream(params).finalMessage();
        assert.deepEqual(direct.content.map(b => b.text), ['Done. More.']);
        const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(await budgetFor(compactd, format)) });
        const proxied = await client.messages.stream(params).finalMessage();
        assert.deepEqual(proxied.content, direct.content);
        assert.equal(model.requests.length, 2);
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('an event held back whose name is not UTF-8 goes on as it came', async () => {
    // Responses reasoning is held until what follows it; its event's name,
    // a byte that is not UTF-8 at its end, is kept as bytes, not refused:
    // the client's SDK reads what it reads from the upstream itself.
    const format = 'openai-responses';
    const reply = answer(format, 1, { text: 'Done.' });
    reply.output.unshift(reasoning('rs_1a'));
    const events = streamedEvents(format, reply, {});
    const k = events.findIndex(e => e.startsWith('event: response.output_item.added\n') && e.includes('"reasoning"'));
    assert.ok(k >= 0);
    const [head, rest] = [events[k].slice(0, events[k].indexOf('\n')), events[k].slice(events[k].indexOf('\n'))];
    const bytes = Buffer.concat([Buffer.from(events.slice(0, k).join('') + head), Buffer.from([0xff]),
        Buffer.from(rest + events.slice(k + 1).join(''))]);
    const { model, compactd } = await setup(() => ({ custom: res => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.end(bytes);
    } }));
    try {
        const params = { model: MODELS[format], ...history(format) };
        const direct = await new OpenAI({ apiKey: PROVIDER_KEY, baseURL: `${model.url}/v1`, maxRetries: 0 })
            .responses.stream(params).finalResponse();
        assert.deepEqual(direct.output.map(i => i.type), ['reasoning', 'message']);
        const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(await budgetFor(compactd, format)) });
        const proxied = await client.responses.stream(params).finalResponse();
        assert.deepEqual(proxied.output, direct.output);
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('an upstream that cuts a round short cuts the client\'s stream short', async () => {
    const { model, compactd } = await setup(() => ({ custom: res => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(chunk('chatcmpl-c', { role: 'assistant', content: 'partial' }));
        setTimeout(() => res.socket.destroy(), 50);
    } }));
    try {
        const client = clientFor(compactd, 'openai', { 'X-Compactd-Budget': String(await budgetFor(compactd, 'openai')) });
        let text = '';
        await assert.rejects(streamThrough(client, 'openai', history('openai'), d => { text += d; }));
        assert.equal(text, 'partial');
        assert.equal(model.requests.length, 1);
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test("a round larger than the client's share ends the stream with upstream_answer_too_large", async () => {
    const share = 1 << 20, piece = 'y'.repeat(16 << 10);
    let written = 0;
    const { model, compactd } = await setup(() => ({ custom: async res => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.on('close', () => { written = Infinity; });
        while (written < 4 * share) {
            const c = chunk('chatcmpl-d', { content: piece });
            written += c.length;
            if (!res.write(c)) await new Promise(r => { res.once('drain', r); res.once('close', r); });
        }
        res.end(chunk('chatcmpl-d', {}, 'stop') + 'data: [DONE]\n\n');
    } }), { COMPACTD_MAX_CLIENT_INFLIGHT_BYTES: String(share), COMPACTD_MAX_BODY_BYTES: String(share / 2) });
    try {
        const client = clientFor(compactd, 'openai', { 'X-Compactd-Budget': String(await budgetFor(compactd, 'openai')) });
        let got = 0;
        await assert.rejects(streamThrough(client, 'openai', history('openai'), d => { got += d.length; }), e => {
            assert.match(String(e.message), /larger than one client may hold/);
            return true;
        });
        assert.ok(got > 0 && got < share, `the client got ${got} bytes of text`);
        assert.equal(written, Infinity, 'the upstream call went on');
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('a stream whose buffer cannot be had is answered whole, with the events it would have streamed', async () => {
    // compactd's stream buffer comes out of the client's share; with a share
    // just too small for it (found by trying shares in turn, 1 KiB apart:
    // the shares that hold the request but not the buffer span a few KiB),
    // the events go to memory and are answered whole at the end.
    const format = 'anthropic';
    const model = await startScriptedModel((body, n) => answer(format, n, reacquireResults(format, body).length === 0
        ? { text: 'Reading it back.', calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] }
        : { text: 'done' }));
    let budget;
    {
        const c = await startProxy(redis, model.url);
        budget = await budgetFor(c, format);
        await c.stop();
    }
    const body = JSON.stringify({ model: MODELS[format], stream: true, ...history(format) });
    const answers = [];
    try {
        for (let share = 48 << 10; share <= 128 << 10 && answers.filter(a => !a.whole).length < 4; share += 1 << 10) {
            const compactd = await startProxy(redis, model.url, { COMPACTD_COMPACT_TO_PERCENT: '50',
                COMPACTD_MAX_CLIENT_INFLIGHT_BYTES: String(share), COMPACTD_MAX_BODY_BYTES: String(share / 2) });
            try {
                const r = await fetch(compactd.base + '/proxy/anthropic/v1/messages', { method: 'POST',
                    headers: { 'Content-Type': 'application/json', 'X-Compactd-Budget': String(budget) }, body });
                const text = (await r.text()).replace(/msg_\d+/g, 'msg_N').replace(/toolu_\d+_\d+/g, 'toolu_N');
                if (r.status === 200) answers.push({ share, whole: r.headers.get('transfer-encoding') !== 'chunked', text });
                if (r.status === 200 && answers.length === 1) {
                    // The SDK takes it as the stream it is.
                    const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(budget) });
                    const final = await client.messages.stream({ model: MODELS[format], ...history(format) }).finalMessage();
                    assert.deepEqual(final.content.map(b => b.text), ['Reading it back.', 'done']);
                }
            } finally {
                await compactd.stop();
            }
        }
        const whole = answers.filter(a => a.whole), streamed = answers.filter(a => !a.whole);
        assert.ok(whole.length > 0, `no share gave a whole answer: ${answers.map(a => a.share)}`);
        assert.ok(streamed.length > 0, 'no share gave a stream');
        for (const a of answers) assert.equal(a.text, streamed[0].text, `share ${a.share}: another answer`);
    } finally {
        await model.close();
    }
});

for (const format of FORMATS)
    test(`${format}: whole, the answer after rounds is the one the stream puts together`, async () => {
        // Each call's rounds as in the streamed test: first reacquire only, then beside run_tests.
        const { model, compactd } = await setup((body, n) => {
            const { streamUsage, ...reply } = roundReply(format, (n - 1) % 2 + 1, firstPointer(body));
            return body.stream ? { custom: gatedStream(format, { ...reply, streamUsage }, body, { wait: null }) } : reply;
        });
        try {
            const budget = String(await budgetFor(compactd, format));
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': budget });
            const { final: streamed } = await streamThrough(client, format, history(format), () => {});
            const params = { model: MODELS[format], ...history(format) };
            const whole = format === 'openai' ? await client.chat.completions.create(params)
                : format === 'anthropic' ? await client.messages.create(params) : await client.responses.create(params);
            assert.equal(model.requests.length, 4);
            if (format === 'openai') {
                const [w, s] = [whole, streamed].map(a => a.choices[0].message);
                assert.equal(w.content, TEXTS.join(''));
                assert.deepEqual(w.tool_calls.map(c => [c.id, c.function.name]), s.tool_calls.map(c => [c.id, c.function.name]));
            } else if (format === 'anthropic') {
                // The turn starts with its thinking, as the API wants it given back.
                const parts = a => a.content.map(b => [b.type, b.text ?? b.thinking ?? b.name]);
                assert.deepEqual(parts(whole), parts(streamed));
                assert.equal(whole.content[0].type, 'thinking');
            } else {
                assert.deepEqual(whole.output.map(i => i.id), streamed.output.map(i => i.id));
                checkResponses({ input: [...history(format).input, ...whole.output,
                                         { type: 'function_call_output', call_id: 'call_2_1', output: 'ok' }], store: false });
            }
            assert.deepEqual({ ...whole.usage }, SUMMED[format]);
        } finally {
            await compactd.stop();
            await model.close();
        }
    });
