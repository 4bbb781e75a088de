// An upstream that compresses its answer although compactd asked for it as
// it is (Accept-Encoding: identity): compactd decodes it, so that the
// client gets the answer, whole or streamed, as plain bytes with no
// Content-Encoding, and a streamed round the proxy reads itself (a
// reacquire call it answers) is read decoded too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { Redis } from '../servers.mjs';
import { eventsOf } from '../clients/mock_stream.mjs';
import { assertSpilledBytes, budgetFor, clientFor, spillOf, startProxy } from './harness.mjs';
import { FORMATS, answer, callNames, firstPointer, history, reacquireResults, send } from './histories.mjs';
import { startScriptedModel } from './scripted_model.mjs';

let redis;
before(async () => { redis = await Redis.start(); });
after(async () => { await redis?.stop(); });

const ENCODERS = { gzip: () => zlib.createGzip(), br: () => zlib.createBrotliCompress(), deflate: () => zlib.createDeflate() };

/** Writes reply on res compressed with encoding, streamed (an event per flush) when stream. */
function compressed(api, reply, stream, encoding) {
    return res => {
        const enc = ENCODERS[encoding]();
        res.writeHead(200, { 'Content-Type': stream ? 'text/event-stream' : 'application/json', 'Content-Encoding': encoding });
        enc.pipe(res);
        if (!stream) return enc.end(JSON.stringify(reply));
        for (const e of eventsOf(api, reply)) {
            enc.write(e);
            enc.flush();
        }
        enc.end();
    };
}

const textOf = (format, out) => format === 'openai' ? out.choices[0].message.content
    : format === 'anthropic' ? out.content.find(b => b.type === 'text').text
    : out.output.find(i => i.type === 'message').content[0].text;

for (const [k, format] of FORMATS.entries())
    test(`${format}: an answer compressed unasked reaches the client decoded, whole and streamed`, async () => {
        const encoding = Object.keys(ENCODERS)[k];
        let stream = false;
        const model = await startScriptedModel((body, n) =>
            ({ custom: compressed(format, answer(format, n, { text: `answer ${n}, ${encoding}` }), stream, encoding) }));
        const compactd = await startProxy(redis, model.url);
        try {
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': '100000' });
            for (stream of [false, true]) {
                const out = await send(client, format, history(format, 5), stream);
                assert.equal(textOf(format, out), `answer ${model.requests.length}, ${encoding}`);
            }
            // As the client reads it: no Content-Encoding, the bytes plain.
            stream = false;
            const route = format === 'anthropic' ? '/proxy/anthropic/v1/messages'
                : format === 'openai' ? '/proxy/openai/v1/chat/completions' : '/proxy/openai/v1/responses';
            const r = await fetch(compactd.base + route, { method: 'POST', headers: { 'Content-Type': 'application/json',
                'X-Compactd-Budget': '100000', 'Accept-Encoding': 'identity' },
                body: JSON.stringify({ model: 'gpt-4o', ...history(format, 5) }) });
            assert.equal(r.headers.get('content-encoding'), null);
            assert.equal(textOf(format, JSON.parse(Buffer.from(await r.arrayBuffer()).toString('utf8'))),
                         `answer ${model.requests.length}, ${encoding}`);
            for (const e of model.requests) assert.equal(e.headers['accept-encoding'], 'identity');
        } finally {
            await compactd.stop();
            await model.close();
        }
    });

test('a compressed stream whose round calls reacquire is read decoded and answered inside', async () => {
    for (const format of FORMATS) {
        const model = await startScriptedModel((body, n) => ({ custom: compressed(format,
            reacquireResults(format, body).length === 0
                ? answer(format, n, { calls: [{ name: 'reacquire', args: { pointer: firstPointer(body) } }] })
                : answer(format, n, { text: 'read back' }), true, 'gzip') }));
        const compactd = await startProxy(redis, model.url, { COMPACTD_COMPACT_TO_PERCENT: '50' });
        try {
            const session = `encoded-${format}`;
            const client = clientFor(compactd, format, {
                'X-Compactd-Budget': String(await budgetFor(compactd, format)), 'X-Compactd-Session': session });
            const out = await send(client, format, history(format), true);
            assert.deepEqual(callNames(format, out), []);
            assert.equal(textOf(format, out), 'read back');
            assert.equal(model.requests.length, 2);
            assertSpilledBytes(reacquireResults(format, model.requests[1].body)[0],
                               await spillOf(compactd, session, firstPointer(model.requests[0].body)));
        } finally {
            await compactd.stop();
            await model.close();
        }
    }
});
