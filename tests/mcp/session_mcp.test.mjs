// The model's own MCP endpoint, POST /v1/sessions/{session}/mcp, driven by
// the official MCP TypeScript SDK client against a real compactd and
// redis-server: two tools, the pointer text alone, bound to its session.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Compactd, Redis } from './servers.mjs';

const KEY_A = 'key-of-tenant-a-0123456789';
const KEY_B = 'key-of-tenant-b-0123456789';
const TRICKY = 'é ü 中文 🚀 \u0000\u0001\u001f\u007f \\ " \' </script> \r\n end';

const sha256 = text => crypto.createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

async function connect(server, session, key = null) {
    const headers = key ? { Authorization: `Bearer ${key}` } : {};
    const url = new URL(`${server.base}/v1/sessions/${session}/mcp`);
    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
    const client = new Client({ name: 'compactd-session-test', version: '1.0.0' });
    await client.connect(transport);
    return client;
}

// Spills text under key in session through REST and answers its pointer.
async function spill(server, session, key, text, token = null) {
    const headers = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(`${server.base}/v1/sessions/${session}/compact`, {
        method: 'POST', headers, body: JSON.stringify({
            budget: 200, units: [
                { key: 'task', class: 'protected', tokens: 10, text: 'Never push to main.' },
                { key, class: 'protected', tokens: 100000, text }],
        }),
    });
    assert.equal(res.status, 200);
    const ext = (await res.json()).externalized[0];
    assert.equal(ext.sha256, sha256(text));
    return ext.pointer;
}

async function withServers(opts, body) {
    const redis = await Redis.start();
    let server;
    try {
        server = await Compactd.start(redis, opts);
        await body(server);
    } finally {
        try {
            await server?.stop();
        } finally {
            await redis.stop();
        }
    }
}

describe('the per-session MCP endpoint', () => {
    let redis, server;
    before(async () => {
        redis = await Redis.start();
        server = await Compactd.start(redis);
    });
    after(async () => {
        try {
            await server?.stop();
        } finally {
            await redis?.stop();
        }
    });

    test('lists exactly reacquire and list_spills, neither taking a session', async () => {
        const client = await connect(server, 'agent-1');
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map(t => t.name), ['reacquire', 'list_spills']);
        for (const t of tools)
            assert.equal(t.inputSchema.properties.session, undefined, t.name);
        const reacquire = tools[0];
        assert.deepEqual(reacquire.inputSchema.required, ['pointer']);
        assert.deepEqual(Object.keys(reacquire.inputSchema.properties), ['pointer', 'offset', 'max_tokens']);
        assert.match(reacquire.description, /\[externalized build\.log sha256:[0-9a-f]{16}\]/);
        assert.match(reacquire.description, /before you act/);
        assert.match(client.getInstructions(), /pointer text exactly/);
        assert.doesNotMatch(client.getInstructions(), /session id/);
        await client.close();
    });

    test('reacquire with the pointer text alone returns the exact bytes', async () => {
        const pointer = await spill(server, 'agent-2', 'build log', TRICKY);
        const client = await connect(server, 'agent-2');
        const r = await client.callTool({ name: 'reacquire', arguments: { pointer } });
        assert.equal(r.isError, undefined);
        assert.equal(r.content.length, 1);
        assert.equal(r.content[0].text, TRICKY);
        assert.equal(sha256(r.content[0].text), sha256(TRICKY));
        assert.equal(r.structuredContent.key, 'build log');
        const listed = await client.callTool({ name: 'list_spills', arguments: {} });
        assert.deepEqual(listed.structuredContent.spills.map(s => s.sha256), [sha256(TRICKY)]);
        await client.close();
    });

    test('an ambiguous pointer is told in the words of what this endpoint takes', async () => {
        const pointer = await spill(server, 'agent-5', 'dup', 'first text');
        const real = sha256('first text');
        // A second version whose digest shares the pointer's 16 digits: no
        // text makes one on purpose, so it is written into Redis directly.
        const twin = real.slice(0, 16) + '0'.repeat(48);
        redis.cli('HSET', 'compactd:{default:agent-5}:meta', `${twin}:dup`, 'protected 5 2026-01-01T00:00:00.000Z');
        redis.cli('HSET', 'compactd:{default:agent-5}:text', `${twin}:dup`, 'twin');
        const client = await connect(server, 'agent-5');
        const r = await client.callTool({ name: 'reacquire', arguments: { pointer } });
        assert.equal(r.isError, true);
        const text = r.content[0].text;
        assert.match(text, /^Ambiguous/);
        assert.ok(text.includes(real) && text.includes(twin), text);
        // Only the pointer is taken here: no advice to pass arguments that
        // this endpoint refuses.
        assert.doesNotMatch(text, /"key"|"sha256"/);
        const refused = await client.callTool({ name: 'reacquire', arguments: { pointer, sha256: real } });
        assert.equal(refused.isError, true);
        assert.match(text, /takes only the pointer/);
        assert.match(text, /do not act on what the pointer stood for/);
        await client.close();
    });

    test("another session's pointer is not found there, and no session can be named", async () => {
        const pointer = await spill(server, 'agent-3', 'secret.log', 'only agent-3 may read this');
        const client = await connect(server, 'agent-4');
        const r = await client.callTool({ name: 'reacquire', arguments: { pointer } });
        assert.equal(r.isError, true);
        assert.match(r.content[0].text, /^NotFound/);
        assert.doesNotMatch(r.content[0].text, /only agent-3/);
        const named = await client.callTool({ name: 'reacquire', arguments: { session: 'agent-3', pointer } });
        assert.equal(named.isError, true);
        assert.match(named.content[0].text, /unknown argument "session"/);
        const listed = await client.callTool({ name: 'list_spills', arguments: {} });
        assert.deepEqual(listed.structuredContent.spills, []);
        // The orchestrator's tools are not there.
        await assert.rejects(client.callTool({ name: 'compact', arguments: { session: 'agent-4', budget: 1, units: [] } }),
            e => e.code === -32602);
        await client.close();
    });
});

describe('the per-session MCP endpoint with API keys', () => {
    test("a key sees its own tenant's session only; no key is 401", async () => {
        await withServers({ keys: { [KEY_A]: 'tenant-a', [KEY_B]: 'tenant-b' } }, async server => {
            const pointer = await spill(server, 'shared-name', 'k', TRICKY, KEY_A);
            await assert.rejects(connect(server, 'shared-name'), e => /401/.test(String(e.code ?? e.message)));
            const a = await connect(server, 'shared-name', KEY_A);
            const got = await a.callTool({ name: 'reacquire', arguments: { pointer } });
            assert.equal(got.content[0].text, TRICKY);
            const b = await connect(server, 'shared-name', KEY_B);
            const other = await b.callTool({ name: 'reacquire', arguments: { pointer } });
            assert.equal(other.isError, true);
            assert.match(other.content[0].text, /^NotFound/);
            await a.close();
            await b.close();
        });
    });
});
