// The proxy's attack surface: no request can choose where compactd
// connects (paths, absolute request targets, Host and forwarding headers,
// body fields); nothing but the provider's own headers goes upstream, and a
// header with a control byte is refused rather than split; the provider's
// key is never logged, counted, stored or shown (compactd's stderr at debug,
// /metrics, the decision log, /ui and every byte Redis wrote, scanned for a
// planted key after successes and every kind of failure); a slow client
// holds no more than its share while the upstream streams on, and is cut
// with the upstream call it held.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis, runCompactd } from '../servers.mjs';
import { PROVIDER_KEY, clientFor, startProxy } from './harness.mjs';
import { FORMATS, answer, history, send } from './histories.mjs';
import { startScriptedModel } from './scripted_model.mjs';

let redis;
before(async () => { redis = await Redis.start(); });
after(async () => { await redis?.stop(); });

/**
 * Sends raw bytes to compactd and reads the answer until the connection
 * closes (the request says Connection: close) or 5 s pass. The socket is
 * not half-closed: libmicrohttpd takes that for a client gone.
 */
function raw(port, text) {
    return new Promise((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1', () => s.write(text));
        const chunks = [];
        s.on('data', c => chunks.push(c));
        s.on('error', reject);
        s.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
        s.setTimeout(5000, () => s.destroy());
    });
}

function rawRequest(target, headers, body) {
    return `POST ${target} HTTP/1.1\r\n` + headers.map(h => h + '\r\n').join('') +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n` + body;
}

const chatBody = JSON.stringify({ model: 'gpt-4o', ...history('openai', 5) });

test('no request chooses the upstream: only the configured one, at the fixed paths, is ever called', async () => {
    const model = await startScriptedModel((body, n) => answer('openai', n, { text: 'ok' }));
    const evil = await startScriptedModel((body, n) => answer('openai', n, { text: 'pwned' }));
    const compactd = await startProxy(redis, model.url);
    const evilHost = new URL(evil.url).host;
    try {
        const attempts = [
            rawRequest(`http://${evilHost}/v1/chat/completions`, [`Host: ${evilHost}`], chatBody),
            rawRequest('/proxy/openai/v1/chat/completions', [`Host: ${evilHost}`], chatBody),
            rawRequest('/proxy/openai/v1/chat/completions', [`Host: 127.0.0.1:${compactd.port}`, `X-Forwarded-Host: ${evilHost}`,
                'X-Forwarded-Proto: http', `Forwarded: host=${evilHost}`, `X-Original-URL: ${evil.url}/v1/chat/completions`], chatBody),
            rawRequest('/proxy/openai/v1/../../v1/chat/completions', [`Host: 127.0.0.1:${compactd.port}`], chatBody),
            rawRequest(`/proxy/openai/v1/chat/completions?base_url=${encodeURIComponent(evil.url)}`, [`Host: 127.0.0.1:${compactd.port}`], chatBody),
            rawRequest('/proxy/openai/v1/chat/completions', [`Host: 127.0.0.1:${compactd.port}`],
                JSON.stringify({ ...JSON.parse(chatBody), base_url: evil.url, url: evil.url, api_base: evil.url })),
            rawRequest(`/proxy/openai/v1/chat/completions%2F..%2F..%2F${encodeURIComponent(evilHost)}`, [`Host: 127.0.0.1:${compactd.port}`], chatBody),
            rawRequest('/proxy/anthropic/v1/messages/../../../openai/v1/chat/completions', [`Host: 127.0.0.1:${compactd.port}`], chatBody),
        ];
        for (const a of attempts) await raw(compactd.port, a);
        assert.equal(evil.requests.length, 0, 'a request reached a host it named');
        const paths = new Set(model.requests.map(r => r.url));
        for (const p of paths) assert.ok(['/v1/chat/completions', '/v1/messages', '/v1/responses'].includes(p), `upstream called at ${p}`);
        // The upstream is configuration, and only a plain base URL is taken.
        for (const url of ['file:///etc/passwd', 'gopher://127.0.0.1:1/', 'http://user:pw@127.0.0.1:1/v1',
                           'http://127.0.0.1:1/v1?x=1', 'http://127.0.0.1:1/v1#f', 'http:///v1', 'http://127.0.0.1:1/v1/']) {
            const r = runCompactd({ COMPACTD_REDIS_URL: redis.url(), COMPACTD_UPSTREAM_OPENAI: url });
            assert.equal(r.code, 2, `${url} was taken`);
            assert.match(r.stderr, /COMPACTD_UPSTREAM_OPENAI: .* is not a base URL/);
        }
    } finally {
        await compactd.stop();
        await model.close();
        await evil.close();
    }
});

test("only the provider's headers go upstream, and a header that would split is refused", async () => {
    const model = await startScriptedModel((body, n, entry) => answer(entry.api, n, { text: 'ok' }));
    const compactd = await startProxy(redis, model.url);
    const hostHeader = `Host: 127.0.0.1:${compactd.port}`;
    try {
        const extra = ['Cookie: session=abc', 'X-Forwarded-For: 10.0.0.1', 'Proxy-Authorization: Basic eDp5',
                       'X-Injected: 1', 'Transfer-Encoding: gzip', 'X-Compactd-Budget: 100000', 'Origin: http://127.0.0.1'];
        const anthropicBody = JSON.stringify({ model: 'claude-sonnet-4-6', ...history('anthropic', 5) });
        let out = await raw(compactd.port, rawRequest('/proxy/anthropic/v1/messages', [hostHeader,
            `x-api-key: ${PROVIDER_KEY}`, 'anthropic-version: 2023-06-01', 'anthropic-beta: tools-2024', ...extra], anthropicBody));
        assert.match(out, /^HTTP\/1\.1 (200|400)/);
        out = await raw(compactd.port, rawRequest('/proxy/openai/v1/chat/completions', [hostHeader,
            `Authorization: Bearer ${PROVIDER_KEY}`, 'OpenAI-Organization: org-1', ...extra.filter(h => !h.startsWith('Transfer'))], chatBody));
        assert.match(out, /^HTTP\/1\.1 200/, out.slice(0, 300));
        assert.equal(model.requests.length >= 1, true);
        const allowed = new Set(['host', 'content-type', 'content-length', 'accept', 'accept-encoding', 'authorization', 'x-api-key',
                                 'anthropic-version', 'anthropic-beta', 'openai-organization', 'openai-project', 'openai-beta']);
        for (const r of model.requests) {
            for (const name of Object.keys(r.headers)) assert.ok(allowed.has(name), `${name} went upstream`);
            assert.equal(r.headers['accept-encoding'], 'identity', 'compactd asks for the body as it is');
            assert.equal(r.headers.host, new URL(model.url).host, 'the Host is the upstream\'s');
        }
        const chat = model.requests.find(r => r.api === 'openai');
        assert.equal(chat.headers.authorization, `Bearer ${PROVIDER_KEY}`);
        assert.equal(chat.headers['openai-organization'], 'org-1');
        // A bare CR, a NUL or another control byte in a header passed on:
        // refused naming it, never sent on (where libmicrohttpd does not
        // refuse the request line itself first).
        const before = model.requests.length;
        for (const bad of ['OpenAI-Organization: org\rX-Injected: 1', 'OpenAI-Organization: org\x01x', 'OpenAI-Beta: a\x7fb']) {
            const answerText = await raw(compactd.port, rawRequest('/proxy/openai/v1/chat/completions',
                [hostHeader, 'X-Compactd-Budget: 100000', bad], chatBody));
            const status = Number(/^HTTP\/1\.1 (\d+)/.exec(answerText)?.[1] ?? 0);
            assert.ok(status === 400 || status === 0, `${JSON.stringify(bad)} answered ${status}`);
            if (status === 400 && answerText.includes('"param"'))
                assert.match(answerText, /"param":"OpenAI-(Organization|Beta)"/);
        }
        assert.equal(model.requests.length, before, 'a header with a control byte was sent upstream');
    } finally {
        await compactd.stop();
        await model.close();
    }
});

/** Every file under dir, read as bytes. */
function filesUnder(dir) {
    const out = [];
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) out.push(...filesUnder(p));
        else out.push([p, fs.readFileSync(p)]);
    }
    return out;
}

test("the provider's key is never logged, counted, stored or shown", async () => {
    let n = 0;
    const model = await startScriptedModel((body, k, entry) => (++n % 4 === 0
        ? { fail: { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } } }
        : answer(entry.api, k, { text: 'ok' })));
    const compactd = await startProxy(redis, model.url, { COMPACTD_LOG_LEVEL: 'debug', COMPACTD_UPSTREAM_TIMEOUT_S: '1' });
    const sessions = [];
    try {
        for (const format of FORMATS)
            // Answered, refused for the budget, a bad header, the model table.
            for (const [k, headers] of [{ 'X-Compactd-Budget': '100000' }, { 'X-Compactd-Budget': '40' },
                                        { 'X-Compactd-Budget': 'many' }, {}].entries()) {
                const session = `creds-${format}-${k}`;
                sessions.push(session);
                const client = clientFor(compactd, format, { 'X-Compactd-Session': session, ...headers });
                for (const stream of [false, true])
                    await send(client, format, history(format, 5), stream).catch(() => null);
            }
        // An upstream that cannot be reached, with the key on its way.
        const down = await startProxy(redis, 'http://127.0.0.1:9', { COMPACTD_LOG_LEVEL: 'debug' });
        await send(clientFor(down, 'openai', { 'X-Compactd-Session': 'creds-down' }), 'openai', history('openai', 5), false).catch(() => null);
        const downLog = down.stderr();
        await down.stop();
        assert.ok(model.requests.some(r => r.headers.authorization === `Bearer ${PROVIDER_KEY}` ||
                                           r.headers['x-api-key'] === PROVIDER_KEY), 'the key never reached the upstream');
        const places = [['stderr', compactd.stderr()], ['stderr of the one with no upstream', downLog],
                        ['/metrics', (await compactd.get('/metrics')).text]];
        for (const p of ['/ui', '/ui/inspector.js', '/ui/inspector-units.js'])
            places.push([p, (await compactd.get(p)).text]);
        for (const s of [...sessions, 'creds-down']) {
            places.push([`events of ${s}`, (await compactd.get(`/v1/sessions/${s}/events`)).text]);
            places.push([`spills of ${s}`, (await compactd.get(`/v1/sessions/${s}/spills`)).text]);
        }
        // Read Redis's files once the rewrite is over: while it runs, its
        // temporary file comes and goes under the listing.
        redis.cli('BGREWRITEAOF');
        const rewriting = () => /aof_rewrite_(in_progress|scheduled):1/.test(redis.cli('INFO', 'persistence'));
        for (const until = Date.now() + 10000; rewriting() && Date.now() < until;)
            await new Promise(r => setTimeout(r, 20));
        assert.ok(!rewriting(), 'the AOF rewrite did not finish within 10 s');
        for (const [file, bytes] of filesUnder(redis.dir)) places.push([`Redis's ${path.basename(file)}`, bytes.toString('latin1')]);
        places.push(['Redis key names', redis.cli('--scan')]);
        const secret = PROVIDER_KEY.slice('sk-proxytest-'.length);
        for (const [where, text] of places)
            assert.ok(!text.includes(secret), `the key is in ${where}`);
        assert.ok(compactd.stderr().includes('/proxy/'), 'the log of the calls is not where it was looked for');
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('a client that reads nothing holds no more than its share, and is cut with the upstream call', async () => {
    const TOTAL = 256 << 20, EVENT = 16 << 10;
    let written = 0, closed = false, finished = false;
    const filler = 'x'.repeat(EVENT);
    // The upstream streams far more than any buffer on the way can hold,
    // writing only as fast as it is read.
    const streamOut = async res => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.on('close', () => { closed = true; });
        const chunk = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o',
            choices: [{ index: 0, delta: { content: filler }, finish_reason: null }] })}\n\n`;
        while (written < TOTAL && !closed) {
            written += chunk.length;
            if (!res.write(chunk)) await new Promise(r => { res.once('drain', r); res.once('close', r); });
        }
        finished = written >= TOTAL;
        res.end();
    };
    const model = await startScriptedModel(() => ({ custom: streamOut }));
    const share = 1 << 20;
    const compactd = await startProxy(redis, model.url, { COMPACTD_MAX_CLIENT_INFLIGHT_BYTES: String(share),
        COMPACTD_MAX_BODY_BYTES: String(share / 2), COMPACTD_CONNECTION_TIMEOUT_S: '2' });
    const sock = net.connect(compactd.port, '127.0.0.1');
    try {
        await new Promise(r => sock.once('connect', r));
        sock.pause(); // reads nothing
        const body = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'stream a lot' }] });
        sock.write(rawRequest('/proxy/openai/v1/chat/completions', [`Host: 127.0.0.1:${compactd.port}`, 'X-Compactd-Budget: 100000'], body));
        // The upstream is read as the client reads: a stall, well short of the whole.
        let last = -1, peak = 0;
        for (let i = 0; i < 600 && !closed; i++) {
            await new Promise(r => setTimeout(r, 50));
            const m = /compactd_inflight_bytes (\d+)/.exec((await compactd.get('/metrics')).text);
            peak = Math.max(peak, Number(m[1]));
            if (written === last && written > 0) break;
            last = written;
        }
        assert.ok(!finished, 'the whole stream was read with nobody reading it');
        assert.ok(written < 96 << 20, `the upstream wrote ${written} bytes for a client that read none`);
        assert.ok(peak <= share, `compactd held ${peak} bytes, past the client's share of ${share}`);
        // The watchdog cuts the client within its connection timeout; the
        // upstream call it held ends with it.
        for (let i = 0; i < 1200 && !closed; i++) await new Promise(r => setTimeout(r, 50));
        assert.ok(closed, 'the upstream call outlived the client');
        assert.ok(!finished);
    } finally {
        sock.destroy();
        await compactd.stop();
        await model.close();
    }
});
