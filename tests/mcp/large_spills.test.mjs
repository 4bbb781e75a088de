// Spills as large as compactd accepts, re-acquired byte for byte on every
// front (REST, /mcp and /v1/sessions/{session}/mcp, the last two through the
// official MCP TypeScript SDK client), and spills whose answer could not be
// given back refused when they are compacted, with nothing written. One
// compactd whose client share (COMPACTD_MAX_CLIENT_INFLIGHT_BYTES) is the
// largest body plus 8 KiB, so that the texts reach it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Compactd, Redis } from './servers.mjs';

const MIB = 1 << 20;
const MAX_BODY = 32 * MIB; // COMPACTD_MAX_BODY_BYTES's default
const SHARE = MAX_BODY + 8192;
const MAX_TEXT = 16 * MIB; // COMPACTD_MAX_TEXT_BYTES's default

const sha256 = text => crypto.createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

// Control bytes that JSON writes as \u00XX, six bytes each: every one below
// 0x20 but \b, \t, \n, \f and \r.
const CONTROLS = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i))
    .filter(c => !'\b\t\n\f\r'.includes(c)).join('');

function logText(bytes) {
    const line = 'step 0042: compiled src/module.c with -O2 -Wall, 0 warnings\n';
    return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
}

// Compares without printing texts of many MiB on a mismatch.
function sameText(got, want, what) {
    assert.ok(typeof got === 'string', `${what}: no text`);
    assert.ok(got === want, `${what}: ${got.length} characters back, ${want.length} spilled, ` +
        `sha256 ${sha256(got)} for ${sha256(want)}`);
}

async function post(server, route, body) {
    const res = await fetch(server.base + route, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body,
    });
    const text = await res.text();
    return { status: res.status, text, json: JSON.parse(text) };
}

async function mcpClient(server, route) {
    const client = new Client({ name: 'compactd-large-spills', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.base + route)));
    return client;
}

// The compaction of one unit that must be spilled: the budget leaves no
// room for it.
function unitsBody(key, text) {
    return JSON.stringify({ budget: 200, tokenizer: 'bytes', units: [
        { key: 'task', class: 'protected', tokens: 10, text: 'Never push to main.' },
        { key, class: 'protected', tokens: 100000, text }] });
}

// A chat history whose second message must be spilled; its spill is the
// message's JSON as sent.
function messagesBody(content) {
    const big = { role: 'user', content };
    const body = JSON.stringify({ format: 'openai', tokenizer: 'bytes', budget: 300, messages: [
        { role: 'system', content: 'Never push to main.' }, big,
        { role: 'assistant', content: 'ok' }, { role: 'user', content: 'go on' }] });
    return { body, spilled: JSON.stringify(big) };
}

describe('spills at the limits', () => {
    let redis, server;
    before(async () => {
        redis = await Redis.start();
        server = await Compactd.start(redis, { env: { COMPACTD_MAX_CLIENT_INFLIGHT_BYTES: String(SHARE) } });
    });
    after(async () => {
        try {
            await server?.stop();
        } finally {
            await redis?.stop();
        }
    });

    // The spilled text, back through GET .../spills/{key}, the reacquire tool
    // of /mcp and that of the session's own /mcp.
    async function everyFront(session, key, pointer, text) {
        const sha = sha256(text);
        const rest = await fetch(`${server.base}/v1/sessions/${session}/spills/${encodeURIComponent(key)}` +
            `?sha256=${sha.slice(0, 16)}`);
        const restText = await rest.text();
        assert.equal(rest.status, 200, restText.slice(0, 500));
        sameText(JSON.parse(restText).text, text, 'GET spills');

        const orchestrator = await mcpClient(server, '/mcp');
        const own = await mcpClient(server, `/v1/sessions/${session}/mcp`);
        try {
            for (const [front, r] of [
                ['/mcp', await orchestrator.callTool({ name: 'reacquire', arguments: { session, pointer } })],
                ['session /mcp', await own.callTool({ name: 'reacquire', arguments: { pointer } })]]) {
                assert.equal(r.isError, undefined, `${front}: ${r.content?.[0]?.text?.slice(0, 500)}`);
                assert.equal(r.content.length, 1, front);
                sameText(r.content[0].text, text, front);
                // The text once: the record without it beside.
                assert.equal(r.structuredContent.text, undefined, front);
                assert.equal(r.structuredContent.sha256, sha, front);
                assert.equal(r.structuredContent.key, key, front);
            }
        } finally {
            await orchestrator.close();
            await own.close();
        }
    }

    async function spillUnit(session, key, text) {
        const r = await post(server, `/v1/sessions/${session}/compact`, unitsBody(key, text));
        assert.equal(r.status, 200, r.text.slice(0, 500));
        const ext = r.json.externalized[0];
        assert.equal(ext.sha256, sha256(text));
        return ext.pointer;
    }

    function nothingWritten(session) {
        for (const part of ['text', 'meta', 'events'])
            assert.equal(redis.cli('EXISTS', `compactd:{default:${session}}:${part}`), '0', `${session} ${part}`);
    }

    test('a 16 MiB spill, the longest text, comes back on every front', async () => {
        const text = logText(MAX_TEXT);
        assert.equal(Buffer.byteLength(text), MAX_TEXT);
        await everyFront('big-16', 'build.log', await spillUnit('big-16', 'build.log', text), text);
    });

    test('10 MiB of quotes (20 MiB escaped) come back on every front, the text carried once', async () => {
        const text = '"'.repeat(10 * MIB);
        const pointer = await spillUnit('quotes', 'quotes.txt', text);
        await everyFront('quotes', 'quotes.txt', pointer, text);
        // The JSON-RPC answer holds the escaped text once, not twice.
        const raw = await post(server, '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
            params: { name: 'reacquire', arguments: { session: 'quotes', pointer } } }));
        assert.equal(raw.status, 200);
        assert.ok(raw.text.length < 20 * MIB + 8192, `${raw.text.length} bytes for 20 MiB of escaped text`);
        sameText(raw.json.result.content[0].text, text, 'raw /mcp');
    });

    test('3 MiB of control bytes (18 MiB of \\u00XX) come back on every front', async () => {
        const text = CONTROLS.repeat(Math.ceil(3 * MIB / CONTROLS.length)).slice(0, 3 * MIB);
        await everyFront('controls', 'bytes.bin', await spillUnit('controls', 'bytes.bin', text), text);
    });

    test('a message whose answer just fits the share is spilled and comes back on every front', async () => {
        // Its spill is its JSON, 2 bytes a quote, written back 4 bytes a
        // quote: 48 KiB under the share.
        const { body, spilled } = messagesBody('"'.repeat((SHARE - 48 * 1024) / 4));
        const r = await post(server, '/v1/sessions/edge/messages/compact', body);
        assert.equal(r.status, 200, r.text.slice(0, 500));
        const pointer = r.json.messages[1].content;
        assert.match(pointer, /^\[externalized \S+ sha256:[0-9a-f]{16}\]$/);
        const key = / (\S+) sha256:/.exec(pointer)[1];
        await everyFront('edge', key, pointer, spilled);
    });

    test('a message no front could give back is refused when compacted, and nothing is written', async () => {
        // 17 MiB of JSON that 34 MiB of answer would carry: past the share.
        const { body } = messagesBody('"'.repeat(8.5 * MIB));
        assert.ok(body.length < MAX_BODY);
        const r = await post(server, '/v1/sessions/too-big/messages/compact', body);
        assert.equal(r.status, 413, r.text.slice(0, 500));
        assert.equal(r.json.error.type, 'PayloadTooLarge');
        assert.equal(r.json.error.path, '$.messages[1]');
        assert.match(r.json.error.message, /COMPACTD_MAX_CLIENT_INFLIGHT_BYTES/);
        assert.match(r.json.error.message, /nothing was written/);
        nothingWritten('too-big');

        // The same through /mcp's compact_messages tool.
        const client = await mcpClient(server, '/mcp');
        try {
            const args = JSON.parse(body);
            const t = await client.callTool({ name: 'compact_messages', arguments: { session: 'too-big-mcp', ...args } });
            assert.equal(t.isError, true);
            assert.match(t.content[0].text, /^PayloadTooLarge: .*COMPACTD_MAX_CLIENT_INFLIGHT_BYTES.*\$\.messages\[1\]/);
        } finally {
            await client.close();
        }
        nothingWritten('too-big-mcp');
    });

    test('a unit whose answer and the request for it would pass the share is refused when compacted', async () => {
        // 2 KiB under the largest body: its answer, with the 16 KiB kept for
        // the request that asks for it, passes the share.
        const n = Math.floor((MAX_BODY - 2048) / 6);
        const text = CONTROLS.repeat(Math.ceil(n / CONTROLS.length)).slice(0, n);
        const body = unitsBody('near.bin', text);
        assert.ok(body.length <= MAX_BODY);
        const r = await post(server, '/v1/sessions/near/compact', body);
        assert.equal(r.status, 413, r.text.slice(0, 500));
        assert.equal(r.json.error.type, 'PayloadTooLarge');
        assert.equal(r.json.error.path, '$.units[1]');
        assert.match(r.json.error.message, /unit 'near\.bin' would take \d+ bytes to give back/);
        nothingWritten('near');
    });

    test("a verify's repair that would spill such a unit is refused, and nothing is written", async () => {
        const n = Math.floor((MAX_BODY - 2048) / 6);
        const text = CONTROLS.repeat(Math.ceil(n / CONTROLS.length)).slice(0, n);
        const body = JSON.stringify({ context: 'Goal: ship v2.', budget: 200, context_tokens: 10, units: [
            { key: 'near.bin', class: 'protected', tokens: 100000, text }] });
        assert.ok(body.length <= MAX_BODY);
        const r = await post(server, '/v1/sessions/near-verify/verify', body);
        assert.equal(r.status, 413, r.text.slice(0, 500));
        assert.equal(r.json.error.type, 'PayloadTooLarge');
        assert.equal(r.json.error.path, '$.units[0]');
        nothingWritten('near-verify');
    });
});
