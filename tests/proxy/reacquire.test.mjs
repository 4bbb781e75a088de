// Re-acquisition inside the proxy, for each API, whole and streamed: the
// model calls reacquire on a pointer of its compacted history; the proxy
// answers it from the session's spills and calls the model again, so that
// the client gets the model's next answer after what the first round said,
// with no reacquire call in it and both rounds' usage, the
// model was given the spilled bytes exactly, and the round is in the
// session's decision log. A reacquire call beside the client's own is
// answered and taken out (what the client gets is still the provider's
// shape, streamed events renumbered), and a model that only ever asks to
// re-acquire is stopped after COMPACTD_PROXY_REACQUIRE_ROUNDS rounds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from '../servers.mjs';
import { assertSpilledBytes, budgetFor, clientFor, spillOf, startProxy } from './harness.mjs';
import { FORMATS, answer, callNames, firstPointer, history, reacquireResults, send } from './histories.mjs';
import { startScriptedModel } from './scripted_model.mjs';

let redis;
before(async () => { redis = await Redis.start(); });
after(async () => { await redis?.stop(); });

const SYSTEM = { openai: null, anthropic: 'system', 'openai-responses': 'instructions' };

async function setup(script, env = {}) {
    const model = await startScriptedModel(script);
    const compactd = await startProxy(redis, model.url, { COMPACTD_COMPACT_TO_PERCENT: '50', ...env });
    return { model, compactd };
}

for (const format of FORMATS)
    for (const stream of [false, true]) {
        const name = `${format}${stream ? ', streamed' : ''}`;

        test(`${name}: the model's reacquire call is answered inside, with the spilled bytes`, async () => {
            const { model, compactd } = await setup((body, n) => reacquireResults(format, body).length === 0
                ? answer(format, n, { text: 'Reading it back.', calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] })
                : answer(format, n, { text: 'test_case_3 failed in the first run.' }));
            try {
                const session = `reacquire-${format}-${stream}`;
                const budget = await budgetFor(compactd, format);
                const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(budget), 'X-Compactd-Session': session });
                const out = await send(client, format, history(format), stream);
                assert.deepEqual(callNames(format, out), [], 'the client was handed a call');
                assert.equal(model.requests.length, 2, 'one round, then the answer');
                const [first, second] = model.requests;
                assert.ok(first.body.tools.some(t => (t.name ?? t.function?.name) === 'reacquire'), 'the tool was not added');
                const pointer = firstPointer(first.body);
                const results = reacquireResults(format, second.body);
                assert.equal(results.length, 1);
                assertSpilledBytes(results[0], await spillOf(compactd, session, pointer), 'the model was not given the spilled bytes');
                // Whole or streamed, every round's parts but the reacquire
                // call, as one answer.
                const texts = format === 'openai' ? [out.choices[0].message.content]
                    : format === 'anthropic' ? out.content.filter(b => b.type === 'text').map(b => b.text)
                    : out.output.filter(i => i.type === 'message').map(i => i.content[0].text);
                const want = ['Reading it back.', 'test_case_3 failed in the first run.'];
                assert.deepEqual(texts, format === 'openai' ? [want.join('')] : want);
                // The usage is both rounds' (each reported 1 and 1).
                if (out.usage) assert.deepEqual({ ...out.usage }, format === 'openai' ? { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 }
                    : format === 'anthropic' ? { input_tokens: 2, output_tokens: 2 } : { input_tokens: 2, output_tokens: 2, total_tokens: 4 });
                else assert.ok(format === 'openai' && stream, 'no usage');
                // The round is in the decision log, as the proxy's.
                const ev = (await compactd.get(`/v1/sessions/${session}/events`)).json.events;
                assert.deepEqual(ev.filter(e => e.kind === 'reacquire').map(e => e.via), ['proxy']);
            } finally {
                await compactd.stop();
                await model.close();
            }
        });

        test(`${name}: a reacquire call beside the client's own is answered and taken out`, async () => {
            const { model, compactd } = await setup((body, n) => answer(format, n, {
                text: 'Running them again.', calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } },
                                                     { name: 'run_tests', args: {} }] }));
            try {
                const session = `mixed-${format}-${stream}`;
                const budget = await budgetFor(compactd, format);
                const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(budget), 'X-Compactd-Session': session });
                const out = await send(client, format, history(format), stream);
                assert.deepEqual(callNames(format, out), ['run_tests']);
                if (out.events) assert.deepEqual(out.events, [[0, 'message'], [1, 'run_tests']], 'the events were not renumbered');
                if (format === 'openai' && stream)
                    assert.equal(out.choices[0].message.tool_calls[0].id, 'call_1_1');
                assert.equal(model.requests.length, 1);
                const ev = (await compactd.get(`/v1/sessions/${session}/events`)).json.events;
                assert.deepEqual(ev.filter(e => e.kind === 'reacquire').map(e => e.via), ['proxy']);
            } finally {
                await compactd.stop();
                await model.close();
            }
        });
    }

for (const format of FORMATS)
    test(`${format}: a model that only ever asks to re-acquire is stopped after the bound`, async () => {
        const { model, compactd } = await setup((body, n) => answer(format, n, {
            calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] }),
            { COMPACTD_PROXY_REACQUIRE_ROUNDS: '2' });
        try {
            const budget = await budgetFor(compactd, format);
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(budget) });
            await assert.rejects(send(client, format, history(format), false), e => {
                assert.equal(e.status, 502);
                assert.match(e.message, /reacquire_limit|re-acquire, 2 rounds/);
                return true;
            });
            assert.equal(model.requests.length, 3, 'the first call and two rounds');
        } finally {
            await compactd.stop();
            await model.close();
        }
    });

for (const format of FORMATS)
    test(`${format}: a last round that is not an answer of the API's comes whole, with the rounds' usage`, async () => {
        // Nowhere to put the earlier round's text: the body goes as it came
        // but for its usage, never a 500 that blames memory.
        const usage = { openai: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            anthropic: { input_tokens: 1, output_tokens: 1 }, 'openai-responses': { input_tokens: 1, output_tokens: 1, total_tokens: 2 } };
        const odd = { id: 'odd_2', object: 'unexpected', usage: usage[format] };
        const { model, compactd } = await setup((body, n) => n === 1
            ? answer(format, n, { text: 'Reading it back.', calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] })
            : odd);
        try {
            const budget = await budgetFor(compactd, format);
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': String(budget) });
            const out = await send(client, format, history(format), false);
            assert.equal(model.requests.length, 2);
            assert.equal(out.id, 'odd_2');
            const twice = Object.fromEntries(Object.entries(usage[format]).map(([k, v]) => [k, 2 * v]));
            assert.deepEqual({ ...out.usage }, twice);
        } finally {
            await compactd.stop();
            await model.close();
        }
    });
