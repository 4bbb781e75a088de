// What a client gets when a proxied call cannot go through, each in the
// provider's own error shape so that its SDK raises it as its own: an
// upstream that cannot be reached (502), one that says nothing (504), the
// upstream's own errors relayed as they are, a history that cannot fit
// (400, code compaction_failure, with compactd's required_budget), bad
// X-Compactd-* headers (400 naming the header) with nothing sent upstream
// and nothing written; and where the budget and session come from when the
// client names neither, and whose key opens a tenant.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis, Compactd, freePort } from '../servers.mjs';
import { PROVIDER_KEY, clientFor, startProxy } from './harness.mjs';
import { FORMATS, answer, history, send } from './histories.mjs';
import { startScriptedModel } from './scripted_model.mjs';

let redis;
before(async () => { redis = await Redis.start(); });
after(async () => { await redis?.stop(); });

const ROUTES = { openai: '/proxy/openai/v1/chat/completions', 'openai-responses': '/proxy/openai/v1/responses',
                 anthropic: '/proxy/anthropic/v1/messages' };
const MODELS = { openai: 'gpt-4o', 'openai-responses': 'gpt-5', anthropic: 'claude-sonnet-4-6' };

/** The error object of a provider-shaped error body. */
const errorOf = body => body.error;

/** A raw POST of a proxied request (headers as given, nothing added). */
async function post(compactd, format, body, headers = {}) {
    const r = await fetch(compactd.base + ROUTES[format], { method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, headers: r.headers, text, json };
}

const request = format => ({ model: MODELS[format], ...history(format, 5) });

test('an upstream nobody listens on is 502 in the provider shape, for each SDK', async () => {
    const port = await freePort();
    const compactd = await startProxy(redis, `http://127.0.0.1:${port}`);
    try {
        for (const format of FORMATS) {
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': '100000' });
            await assert.rejects(send(client, format, history(format, 5), false), e => {
                assert.equal(e.status, 502, `${format}: ${e.message}`);
                assert.match(e.message, /upstream_unreachable|could not be reached/);
                return true;
            });
        }
    } finally {
        await compactd.stop();
    }
});

test('an upstream that says nothing is 504 after COMPACTD_UPSTREAM_TIMEOUT_S', async () => {
    const model = await startScriptedModel(() => ({ hang: true }));
    const compactd = await startProxy(redis, model.url, { COMPACTD_UPSTREAM_TIMEOUT_S: '1' });
    try {
        for (const format of FORMATS) {
            const r = await post(compactd, format, request(format), { 'X-Compactd-Budget': '100000' });
            assert.equal(r.status, 504, r.text);
            const e = errorOf(r.json);
            assert.equal(e.code, 'upstream_timeout');
            if (format === 'anthropic') assert.equal(r.json.type, 'error');
        }
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test("the upstream's own errors are relayed as they are", async () => {
    const errors = [
        { status: 429, body: { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } } },
        { status: 500, body: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } } },
        { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } },
    ];
    let k = 0;
    const model = await startScriptedModel(() => ({ fail: errors[k % errors.length] }));
    const compactd = await startProxy(redis, model.url);
    try {
        for (const format of FORMATS)
            for (; k < errors.length * (FORMATS.indexOf(format) + 1); k++) {
                const want = errors[k % errors.length];
                const r = await post(compactd, format, request(format), { 'X-Compactd-Budget': '100000' });
                assert.equal(r.status, want.status);
                assert.equal(r.text, JSON.stringify(want.body), 'the body changed on the way');
                assert.equal(r.headers.get('content-type'), 'application/json');
                assert.equal(r.headers.get('x-request-id'), `req_${k + 1}`, "the provider's request id is relayed");
            }
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('a history that cannot fit is the provider-shaped 400 compaction_failure, never forwarded', async () => {
    const model = await startScriptedModel((body, n) => answer('openai', n, { text: 'unreachable' }));
    const compactd = await startProxy(redis, model.url);
    try {
        for (const format of FORMATS) {
            const client = clientFor(compactd, format, { 'X-Compactd-Budget': '40' });
            await assert.rejects(send(client, format, history(format, 5), false), e => {
                assert.equal(e.status, 400);
                const body = e.error;
                const err = format === 'anthropic' ? body.error : body;
                assert.equal(err.code ?? e.code, 'compaction_failure');
                assert.ok(err.required_budget > 40, `required_budget ${err.required_budget}`);
                assert.equal(err.budget, 40);
                return true;
            });
        }
        assert.equal(model.requests.length, 0);
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('bad X-Compactd-* headers are 400 naming the header, with nothing sent or written', async () => {
    const model = await startScriptedModel((body, n) => answer('openai', n, { text: 'unreachable' }));
    const compactd = await startProxy(redis, model.url);
    const bad = [
        [{ 'X-Compactd-Budget': 'lots' }, 'X-Compactd-Budget'],
        [{ 'X-Compactd-Budget': '0' }, 'X-Compactd-Budget'],
        [{ 'X-Compactd-Budget': '99999999999999' }, 'X-Compactd-Budget'],
        [{ 'X-Compactd-Session': '..' }, 'X-Compactd-Session'],
        [{ 'X-Compactd-Session': 'a b' }, 'X-Compactd-Session'],
        [{ 'X-Compactd-Policy': '[1]' }, 'X-Compactd-Policy'],
        [{ 'X-Compactd-Policy': '{"read_only_tools": 3}' }, 'X-Compactd-Policy'],
        [{ 'X-Compactd-Policy': '{"no_such_rule": true}' }, 'X-Compactd-Policy'],
    ];
    try {
        const keys = Number(redis.cli('DBSIZE'));
        for (const format of FORMATS)
            for (const [headers, name] of bad) {
                const r = await post(compactd, format, request(format), { 'X-Compactd-Session': 'bad-headers', ...headers });
                assert.equal(r.status, 400, `${format} ${JSON.stringify(headers)}: ${r.text}`);
                const e = errorOf(r.json);
                assert.equal(e.param, name, `${format} ${JSON.stringify(headers)}: ${r.text}`);
                assert.ok(e.message.includes(name) || name === 'X-Compactd-Policy', e.message);
            }
        // Sent twice, any of them: refused by name.
        const twice = await fetch(compactd.base + ROUTES.openai, { method: 'POST',
            headers: [['Content-Type', 'application/json'], ['X-Compactd-Budget', '500'], ['X-Compactd-Budget', '900']],
            body: JSON.stringify(request('openai')) });
        assert.equal(twice.status, 400);
        assert.equal((await twice.json()).error.param, 'X-Compactd-Budget');
        assert.equal(model.requests.length, 0, 'a bad request reached the upstream');
        assert.equal(Number(redis.cli('DBSIZE')), keys, 'a bad request wrote to Redis');
    } finally {
        await compactd.stop();
        await model.close();
    }
});

/** A raw POST of body, a text sent as it is. */
async function postText(compactd, format, text, headers = {}) {
    const r = await fetch(compactd.base + ROUTES[format], { method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Compactd-Budget': '100000', ...headers }, body: text });
    const out = await r.text();
    return { status: r.status, text: out, json: JSON.parse(out) };
}

test('a malformed body is 400 naming where it breaks as the client wrote it, with nothing sent or written', async () => {
    const model = await startScriptedModel((body, n) => answer('openai', n, { text: 'unreachable' }));
    const compactd = await startProxy(redis, model.url);
    try {
        const keys = Number(redis.cli('DBSIZE'));
        for (const format of FORMATS) {
            const hist = format === 'openai-responses' ? 'input' : 'messages';
            const lines = (history, after = '"max_tokens": 1024') => ['{', `  "model": "${MODELS[format]}",`,
                `  "${hist}": [`, ...history, '  ],', `  ${after}`, '}'].join('\n');
            const good = ['    {"role": "user", "content": "Fix the parser."},', '    {"role": "user", "content": "Now."}'];
            const cases = [
                // Inside the history, on line 5 of the body the client sent.
                [lines([good[0], '    {"role": "user" "content": "Now."}']), /line 5\b/],
                // After it: a member left open, the '}' on line 8.
                [lines(good, '"max_tokens": 1024,'), /line 8\b/],
                // Before it, on line 2.
                [lines(good).replace(`"model": "${MODELS[format]}",`, '"model": ,'), /line 2\b/],
                // Bytes after the document.
                [lines(good) + ' {}', /after the JSON document/],
                // The history twice.
                [lines(good).replace('"max_tokens": 1024', `"${hist}": []`), /appears twice/],
            ];
            for (const [text, message] of cases) {
                const r = await postText(compactd, format, text);
                assert.equal(r.status, 400, `${format}: ${text}\n${r.text}`);
                const e = format === 'anthropic' ? r.json.error : errorOf(r.json);
                assert.equal(e.code, 'invalid_request', r.text);
                assert.match(e.message, message, `${format}: ${text}`);
            }
            // A member the proxy splices, written with escapes: refused by name.
            const escaped = name => name.slice(0, -1) + '\\u00' + name.charCodeAt(name.length - 1).toString(16);
            for (const name of [hist, 'tools']) {
                const body = JSON.stringify({ model: MODELS[format], ...history(format, 5) })
                    .replace(`"${name}":`, `"${escaped(name)}":`);
                const r = await postText(compactd, format, body);
                assert.equal(r.status, 400, `${format} ${name}: ${r.text}`);
                const e = format === 'anthropic' ? r.json.error : errorOf(r.json);
                assert.equal(e.param, name, r.text);
            }
        }
        assert.equal(model.requests.length, 0, 'a malformed body reached the upstream');
        assert.equal(Number(redis.cli('DBSIZE')), keys, 'a malformed body wrote to Redis');
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test('without X-Compactd-Budget the model table sets it; an unknown model is refused naming the header', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-models-'));
    const file = path.join(dir, 'models.json');
    fs.writeFileSync(file, JSON.stringify({ 'acme-small': 6000, 'gpt-4o': 50000 }));
    const model = await startScriptedModel((body, n) => answer('openai', n, { text: 'ok' }));
    const compactd = await startProxy(redis, model.url, { COMPACTD_MODELS: file, COMPACTD_PROXY_RESERVE_TOKENS: '500' });
    try {
        const chat = history('openai', 5);
        let r = await post(compactd, 'openai', { model: 'acme-small-2', max_tokens: 1000, ...chat });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.headers.get('x-compactd-budget'), String(6000 - 1000 - 500));
        r = await post(compactd, 'openai', { model: 'gpt-4o-2024-08-06', max_completion_tokens: 2000, ...chat });
        assert.equal(r.headers.get('x-compactd-budget'), String(50000 - 2000 - 500), 'the file overrides the built-in row');
        r = await post(compactd, 'openai', { model: 'gpt-4.1-mini', ...chat });
        assert.equal(r.headers.get('x-compactd-budget'), String(1047576 - 500));
        r = await post(compactd, 'openai', { model: 'mystery-9', ...chat });
        assert.equal(r.status, 400);
        assert.equal(r.json.error.param, 'X-Compactd-Budget');
        assert.equal(model.requests.length, 3);
    } finally {
        await compactd.stop();
        await model.close();
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test('without X-Compactd-Session the session is a digest of the conversation, the same on every turn', async () => {
    const model = await startScriptedModel((body, n) => answer('anthropic', n, { text: `turn ${n}` }));
    const compactd = await startProxy(redis, model.url);
    try {
        // A conversation of its own (other suites send history() as it is).
        const h = history('anthropic', 5);
        h.messages[0] = { role: 'user', content: 'Find the flaky test; ' + h.messages[0].content };
        const r1 = await post(compactd, 'anthropic', { model: MODELS.anthropic, ...h });
        const s1 = r1.headers.get('x-compactd-session');
        assert.match(s1, /^proxy-[0-9a-f]{16}$/);
        h.messages.push({ role: 'assistant', content: 'turn 1' }, { role: 'user', content: 'And the second run?' });
        const before = (await compactd.get(`/v1/sessions/${s1}/events`)).json.events.length;
        assert.equal(before, 1);
        const r2 = await post(compactd, 'anthropic', { model: MODELS.anthropic, ...h });
        assert.equal(r2.headers.get('x-compactd-session'), s1, 'a longer history of the same conversation changed session');
        const other = history('anthropic', 5);
        other.messages[0] = { role: 'user', content: 'Another task altogether.' };
        const r3 = await post(compactd, 'anthropic', { model: MODELS.anthropic, ...other });
        assert.notEqual(r3.headers.get('x-compactd-session'), s1);
        const ev = await compactd.get(`/v1/sessions/${s1}/events`);
        assert.equal(ev.json.events.filter(e => e.kind === 'compact').length, 2);
    } finally {
        await compactd.stop();
        await model.close();
    }
});

test("with API keys, compactd's key comes in X-Compactd-Key and the provider's Authorization goes on untouched", async () => {
    const model = await startScriptedModel((body, n) => answer('openai', n, { text: 'ok' }));
    const ownKey = 'cmpk-tenant-a-0123456789abcdef';
    const compactd = await Compactd.start(redis, { keys: { [ownKey]: 'tenant-a' },
        env: { COMPACTD_UPSTREAM_OPENAI: model.url + '/v1', COMPACTD_UPSTREAM_ANTHROPIC: model.url + '/v1' } });
    try {
        const body = request('openai');
        const auth = { Authorization: `Bearer ${PROVIDER_KEY}`, 'X-Compactd-Session': 'keyed' };
        let r = await post(compactd, 'openai', body, auth);
        assert.equal(r.status, 401, 'no X-Compactd-Key');
        r = await post(compactd, 'openai', body, { ...auth, 'X-Compactd-Key': 'cmpk-wrong-key-00000000000' });
        assert.equal(r.status, 401);
        r = await post(compactd, 'openai', body, { ...auth, 'X-Compactd-Key': ownKey, 'X-Compactd-Budget': '100000' });
        assert.equal(r.status, 200, r.text);
        assert.equal(model.requests.length, 1);
        assert.equal(model.requests[0].headers.authorization, `Bearer ${PROVIDER_KEY}`);
        assert.equal(model.requests[0].headers['x-compactd-key'], undefined, "compactd's key went upstream");
        // The session is the tenant's.
        const ev = await compactd.get('/v1/sessions/keyed/events');
        assert.equal(ev.status, 200);
        assert.equal(ev.json.events.length, 1);
    } finally {
        await compactd.stop();
        await model.close();
    }
});
