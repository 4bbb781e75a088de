// compactd's /mcp endpoint driven by the official MCP TypeScript SDK client
// (StreamableHTTPClientTransport), against a real compactd and redis-server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

import { Compactd, Redis } from './servers.mjs';

const KEY_A = 'key-of-tenant-a-0123456789';
const KEY_B = 'key-of-tenant-b-0123456789';

// A text no escaping can hide a difference in: multi-byte UTF-8, an emoji
// (a surrogate pair in JavaScript), NUL and every other control character,
// DEL, a lone backslash and quotes.
const TRICKY = 'é ü 中文 🚀 \u0000' + Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('') +
    '\u007f \\ " \' </script> \r\n end';

const sha256 = text => crypto.createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

async function connect(server, { key = null, name = 'compactd-test' } = {}) {
    const headers = key ? { Authorization: `Bearer ${key}` } : {};
    const transport = new StreamableHTTPClientTransport(new URL(server.base + '/mcp'), { requestInit: { headers } });
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
}

// One JSON-RPC POST outside the SDK, for what the SDK never sends.
async function rpc(server, body, { headers = {}, raw = false } = {}) {
    const res = await fetch(server.base + '/mcp', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: raw ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { /* left null */ }
    return { status: res.status, headers: res.headers, text, json };
}

async function rest(server, method, path, body, key = null) {
    const headers = { 'Content-Type': 'application/json' };
    if (key) headers.Authorization = `Bearer ${key}`;
    const res = await fetch(server.base + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
}

// A compaction that must externalize `big`: the budget leaves no room for it.
function spillRequest(key, text) {
    return {
        budget: 200,
        units: [
            { key: 'task', class: 'protected', tokens: 10, text: 'Never push to main.' },
            { key, class: 'protected', tokens: 100000, text },
        ],
    };
}

function textOf(result) {
    assert.equal(result.content[0].type, 'text');
    return result.content.map(c => c.text).join('\n');
}

describe('compactd over MCP, open tenant', () => {
    let redis, server;
    before(async () => {
        redis = await Redis.start();
        server = await Compactd.start(redis);
    });
    after(async () => {
        // Whatever started is stopped, even when starting the other failed.
        try {
            await server?.stop();
        } finally {
            await redis?.stop();
        }
    });

    test('the SDK client connects at its latest version and lists the tools', async () => {
        const { client, transport } = await connect(server);
        assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);
        assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');
        assert.equal(client.getServerVersion().name, 'compactd');
        assert.ok(client.getServerCapabilities().tools);
        assert.match(client.getInstructions(), /reacquire/);
        assert.equal(transport.sessionId, undefined, 'compactd issues no Mcp-Session-Id');
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map(t => t.name).sort(), ['compact', 'compact_messages', 'list_spills', 'reacquire', 'verify']);
        for (const t of tools) {
            assert.equal(t.inputSchema.type, 'object', t.name);
            assert.ok(t.inputSchema.required.includes('session'), t.name);
            assert.ok(t.description.length > 80, t.name);
        }
        const reacquire = tools.find(t => t.name === 'reacquire');
        assert.match(reacquire.description, /\[externalized build\.log sha256:[0-9a-f]{16}\]/);
        assert.match(reacquire.description, /before you act/);
        assert.equal(await client.ping().then(r => JSON.stringify(r)), '{}');
        await client.close();
    });

    test('every protocol version the SDK lists is accepted; an unknown one gets the latest', async () => {
        assert.ok(SUPPORTED_PROTOCOL_VERSIONS.length >= 5);
        for (const v of [...SUPPORTED_PROTOCOL_VERSIONS, '1999-01-01']) {
            const r = await rpc(server, { jsonrpc: '2.0', id: 1, method: 'initialize',
                params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
            assert.equal(r.status, 200);
            assert.equal(r.headers.get('content-type'), 'application/json');
            const want = SUPPORTED_PROTOCOL_VERSIONS.includes(v) ? v : LATEST_PROTOCOL_VERSION;
            assert.equal(r.json.result.protocolVersion, want);
            // Each version can then be named in the header.
            const list = await rpc(server, { jsonrpc: '2.0', id: 2, method: 'tools/list' },
                { headers: { 'MCP-Protocol-Version': want } });
            assert.equal(list.status, 200);
            assert.equal(list.json.result.tools.length, 5);
        }
        const bad = await rpc(server, { jsonrpc: '2.0', id: 3, method: 'ping' },
            { headers: { 'MCP-Protocol-Version': '2099-01-01' } });
        assert.equal(bad.status, 400);
        assert.equal(bad.json.id, null);
        assert.match(bad.json.error.message, /MCP-Protocol-Version/);
    });

    test('a spill made over REST is re-acquired from its pointer text, byte for byte', async () => {
        const planned = await rest(server, 'POST', '/v1/sessions/rest-1/compact', spillRequest('build log', TRICKY));
        assert.equal(planned.status, 200);
        const ext = planned.json.externalized[0];
        assert.equal(ext.key, 'build log');
        const { client } = await connect(server);
        const r = await client.callTool({ name: 'reacquire', arguments: { session: 'rest-1', pointer: ext.pointer } });
        assert.equal(r.isError, undefined);
        assert.equal(r.content.length, 1);
        assert.equal(r.content[0].text, TRICKY);
        assert.equal(sha256(r.content[0].text), ext.sha256);
        assert.equal(r.structuredContent.text, undefined, "the text is carried once, as the text content");
        assert.equal(r.structuredContent.sha256, ext.sha256);
        assert.equal(r.structuredContent.key, 'build log');
        // Surrounding white space, as a model may quote it, is ignored.
        const spaced = await client.callTool({ name: 'reacquire', arguments: { session: 'rest-1', pointer: `  ${ext.pointer}\n` } });
        assert.equal(spaced.content[0].text, TRICKY);
        // The same by key and a prefix: 16 digits, 40, all 64.
        for (const n of [16, 40, 64]) {
            const k = await client.callTool({ name: 'reacquire',
                arguments: { session: 'rest-1', key: 'build log', sha256: ext.sha256.slice(0, n) } });
            assert.equal(k.content[0].text, TRICKY, `prefix of ${n}`);
        }
        // REST reads with the pointer's 16 digits too.
        const read = await rest(server, 'GET', `/v1/sessions/rest-1/spills/build%20log?sha256=${ext.sha256.slice(0, 16)}`);
        assert.equal(read.status, 200);
        assert.equal(read.json.text, TRICKY);
        await client.close();
    });

    test('a key that holds " sha256:" and brackets still parses', async () => {
        const key = 'odd ] key sha256:0123456789abcdef [externalized x';
        const planned = await rest(server, 'POST', '/v1/sessions/odd/compact', spillRequest(key, 'odd text'));
        assert.equal(planned.status, 200);
        const { client } = await connect(server);
        const r = await client.callTool({ name: 'reacquire',
            arguments: { session: 'odd', pointer: planned.json.externalized[0].pointer } });
        assert.equal(r.content[0].text, 'odd text');
        await client.close();
    });

    test('compact over MCP gives the REST answer, and its pointer is followed', async () => {
        const { client } = await connect(server);
        const req = spillRequest('tool.out', TRICKY + ' via mcp');
        const viaRest = await rest(server, 'POST', '/v1/sessions/twin-rest/compact', req);
        const r = await client.callTool({ name: 'compact', arguments: { session: 'twin-mcp', ...req } });
        assert.equal(r.isError, undefined);
        const answer = r.structuredContent;
        assert.deepEqual(JSON.parse(r.content[0].text), answer);
        const normalized = JSON.parse(JSON.stringify(viaRest.json).replaceAll('twin-rest', 'twin-mcp'));
        assert.deepEqual(answer, normalized);
        assert.equal(answer.externalized.length, 1);
        const back = await client.callTool({ name: 'reacquire',
            arguments: { session: 'twin-mcp', pointer: answer.externalized[0].pointer } });
        assert.equal(back.content[0].text, TRICKY + ' via mcp');

        const listed = await client.callTool({ name: 'list_spills', arguments: { session: 'twin-mcp' } });
        assert.deepEqual(listed.structuredContent.spills.map(s => s.sha256), [answer.externalized[0].sha256]);
        const restList = await rest(server, 'GET', '/v1/sessions/twin-mcp/spills');
        assert.deepEqual(listed.structuredContent, restList.json);

        // Arguments are passed on as sent; a member name written with
        // escapes is still read (the arguments are then written out again).
        const escaped = await rpc(server, '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"compact",' +
            '"arguments":{"\\u0073ession":"twin-esc","bud\\u0067et":200,"units":' + JSON.stringify(req.units) + '}}}', { raw: true });
        assert.equal(escaped.json.result.isError, undefined, escaped.text);
        assert.deepEqual(escaped.json.result.structuredContent,
            JSON.parse(JSON.stringify(viaRest.json).replaceAll('twin-rest', 'twin-esc')));
        const verified = await client.callTool({ name: 'verify', arguments: { session: 'twin-mcp',
            context: 'Never push to main. ' + answer.externalized[0].pointer,
            units: req.units } });
        assert.equal(verified.structuredContent.verdict, 'safe');
        await client.close();
    });

    test('compact_messages over MCP gives the REST answer; an externalized message is re-acquired', async () => {
        const { client } = await connect(server);
        const big = { role: 'user', content: 'the whole build log: ' + TRICKY + ' '.repeat(2000) + 'end' };
        const req = { format: 'openai', tokenizer: 'bytes', budget: 300, messages: [
            { role: 'system', content: 'Never push to main.' }, big,
            { role: 'assistant', content: 'ok' }, { role: 'user', content: 'go on' }] };
        const viaRest = await rest(server, 'POST', '/v1/sessions/chat-rest/messages/compact', req);
        assert.equal(viaRest.status, 200);
        const r = await client.callTool({ name: 'compact_messages', arguments: { session: 'chat-mcp', ...req } });
        assert.equal(r.isError, undefined, textOf(r));
        assert.deepEqual(r.structuredContent,
            JSON.parse(JSON.stringify(viaRest.json).replaceAll('chat-rest', 'chat-mcp')));
        const pointer = r.structuredContent.messages[1].content;
        assert.match(pointer, /^\[externalized \S+ sha256:[0-9a-f]{16}\]$/);
        const back = await client.callTool({ name: 'reacquire', arguments: { session: 'chat-mcp', pointer } });
        assert.deepEqual(JSON.parse(back.content[0].text), big);
        const bad = await client.callTool({ name: 'compact_messages', arguments: { session: 'chat-mcp', format: 'openai',
            budget: 100, messages: [{ role: 'tool', tool_call_id: 'nope', content: 'orphan' }] } });
        assert.equal(bad.isError, true);
        assert.match(textOf(bad), /InvalidRequest.*\$\.messages\[0\]/);
        await client.close();
    });

    test('every reacquire is in the decision log, the metrics and the access log', async () => {
        await rest(server, 'POST', '/v1/sessions/logged/compact', spillRequest('notes', 'logged text'));
        const before = await rest(server, 'GET', '/v1/sessions/logged/events');
        const { client } = await connect(server);
        const sha = before.json.events[0].externalized[0].sha256;
        await client.callTool({ name: 'reacquire', arguments: { session: 'logged', key: 'notes', sha256: sha.slice(0, 16) } });
        await client.callTool({ name: 'reacquire', arguments: { session: 'logged', key: 'notes', sha256: 'f'.repeat(16) } });
        const events = (await rest(server, 'GET', '/v1/sessions/logged/events')).json.events;
        const re = events.filter(e => e.kind === 'reacquire');
        assert.equal(re.length, 1, 'one found, one not: only the found one is logged');
        assert.deepEqual([re[0].key, re[0].sha256, re[0].via, re[0].outcome], ['notes', sha, 'mcp', 'ok']);
        const metrics = await (await fetch(server.base + '/metrics')).text();
        assert.match(metrics, /compactd_mcp_messages_total\{method="tools\/call",tool="reacquire",outcome="ok"\} [1-9]/);
        assert.match(metrics, /compactd_mcp_messages_total\{method="tools\/call",tool="reacquire",outcome="tool_error"\} [1-9]/);
        assert.match(metrics, /compactd_http_requests_total\{route="\/mcp",status="200"\} [1-9]/);
        const lines = server.stderr().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l));
        assert.ok(lines.some(l => l.route === '/mcp' && l.mcp_method === 'tools/call' && l.mcp_tool === 'reacquire'));
        assert.ok(lines.some(l => l.route === '/mcp' && l.mcp_method === 'initialize'));
        await client.close();
    });

    test('an ambiguous prefix is a tool error that lists the full digests (409 over REST)', async () => {
        await rest(server, 'POST', '/v1/sessions/amb/compact', spillRequest('dup', 'first text'));
        const real = (await rest(server, 'GET', '/v1/sessions/amb/spills')).json.spills[0];
        // A second version whose digest shares the first 16 digits: no text
        // makes one on purpose, so it is written into Redis directly.
        const twin = real.sha256.slice(0, 16) + '0'.repeat(48);
        redis.cli('HSET', 'compactd:{default:amb}:meta', `${twin}:dup`, `protected 5 ${real.created_at}`);
        redis.cli('HSET', 'compactd:{default:amb}:text', `${twin}:dup`, 'twin');
        const r409 = await rest(server, 'GET', `/v1/sessions/amb/spills/dup?sha256=${real.sha256.slice(0, 16)}`);
        assert.equal(r409.status, 409);
        assert.equal(r409.json.error.type, 'Ambiguous');
        assert.deepEqual([...r409.json.error.candidates].sort(), [real.sha256, twin].sort());
        const { client } = await connect(server);
        const r = await client.callTool({ name: 'reacquire',
            arguments: { session: 'amb', pointer: `[externalized dup sha256:${real.sha256.slice(0, 16)}]` } });
        assert.equal(r.isError, true);
        assert.ok(r.content[0].text.includes(real.sha256) && r.content[0].text.includes(twin));
        const full = await client.callTool({ name: 'reacquire', arguments: { session: 'amb', key: 'dup', sha256: real.sha256 } });
        assert.equal(full.content[0].text, 'first text');
        await client.close();
    });

    test('malformed JSON-RPC gets the right JSON-RPC error', async () => {
        const parse = await rpc(server, '{"jsonrpc": "2.0", "id": 1, "method": ', { raw: true });
        assert.equal(parse.status, 400);
        assert.equal(parse.json.error.code, -32700);
        assert.equal(parse.json.id, null);
        for (const body of [{ jsonrpc: '2.0', id: 1 }, { jsonrpc: '1.0', id: 1, method: 'ping' },
            { jsonrpc: '2.0', id: 1, method: 7 }, { jsonrpc: '2.0', id: { x: 1 }, method: 'ping' },
            { jsonrpc: '2.0', id: null, method: 'ping' }, { jsonrpc: '2.0', id: 1, method: 'ping', params: 'x' }, 42]) {
            const r = await rpc(server, body);
            assert.equal(r.status, 400, JSON.stringify(body));
            assert.equal(r.json.error.code, -32600, JSON.stringify(body));
        }
        const idKept = await rpc(server, { jsonrpc: '1.0', id: 'abc', method: 'ping' });
        assert.equal(idKept.json.id, 'abc');
        const unknown = await rpc(server, { jsonrpc: '2.0', id: 9, method: 'resources/list' });
        assert.equal(unknown.status, 200);
        assert.equal(unknown.json.id, 9);
        assert.equal(unknown.json.error.code, -32601);
        const noVersion = await rpc(server, { jsonrpc: '2.0', id: 10, method: 'initialize', params: {} });
        assert.equal(noVersion.json.error.code, -32602);

        const { client } = await connect(server);
        await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
            e => e.code === -32602 && /unknown tool/.test(e.message));
        // Wrong argument types are tool errors the model can read (SEP-1303).
        const cases = [
            [{ name: 'compact', arguments: { session: 'w', budget: 'ten', units: [] } }, /InvalidRequest.*\$\.budget/],
            [{ name: 'compact', arguments: { budget: 10, units: [] } }, /session is required/],
            [{ name: 'compact', arguments: { session: 'bad id', budget: 10, units: [] } }, /session must be/],
            [{ name: 'reacquire', arguments: { session: 'w', pointer: 5 } }, /not a compactd pointer/],
            [{ name: 'reacquire', arguments: { session: 'w', pointer: 'build.log' } }, /not a compactd pointer/],
            [{ name: 'reacquire', arguments: { session: 'w', pointer: '[externalized a\u0000b sha256:0123456789abcdef]' } }, /not a compactd pointer/],
            [{ name: 'reacquire', arguments: { session: 'w', key: 'k', sha256: 'abc' } }, /16 to 64/],
            [{ name: 'reacquire', arguments: { session: 'w', key: 'k' } }, /give "pointer"/],
            [{ name: 'reacquire', arguments: { session: 'w', pointer: '[externalized k sha256:0123456789abcdef]', key: 'k' } }, /not both/],
            [{ name: 'list_spills', arguments: { session: 'w', extra: 1 } }, /unknown argument/],
            [{ name: 'verify', arguments: { session: 'w', context: 1, units: [] } }, /InvalidRequest.*\$\.context/],
        ];
        for (const [call, want] of cases) {
            const r = await client.callTool(call);
            assert.equal(r.isError, true, JSON.stringify(call));
            assert.match(textOf(r), want, JSON.stringify(call));
        }
        const refused = await client.callTool({ name: 'compact', arguments: { session: 'w', ...spillRequest('x', 'y'), budget: 5 } });
        assert.equal(refused.isError, true);
        assert.match(textOf(refused), /CompactionFailure/);
        assert.equal(redis.cli('EXISTS', 'compactd:{default:w}:text'), '0', 'an error wrote nothing');
        await client.close();
    });

    test('notifications are 202; batches only at 2025-03-26', async () => {
        const note = await rpc(server, { jsonrpc: '2.0', method: 'notifications/initialized' });
        assert.equal(note.status, 202);
        assert.equal(note.text, '');
        const unknownNote = await rpc(server, { jsonrpc: '2.0', method: 'notifications/whatever', params: {} });
        assert.equal(unknownNote.status, 202);
        const answer = await rpc(server, { jsonrpc: '2.0', id: 5, result: {} });
        assert.equal(answer.status, 202);

        const batch = [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' },
            { jsonrpc: '2.0', id: 'two', method: 'tools/list' }, { jsonrpc: '2.0', id: 3, method: 'nope' }, 17,
            { jsonrpc: '2.0', id: 4, method: 'initialize', params: { protocolVersion: '2025-03-26' } }];
        const old = await rpc(server, batch, { headers: { 'MCP-Protocol-Version': '2025-03-26' } });
        assert.equal(old.status, 200);
        assert.deepEqual(old.json.map(m => m.id), [1, 'two', 3, null, 4]);
        assert.deepEqual(old.json[0].result, {});
        assert.equal(old.json[1].result.tools.length, 5);
        assert.equal(old.json[2].error.code, -32601);
        assert.equal(old.json[3].error.code, -32600);
        assert.equal(old.json[4].error.code, -32600, 'initialize may not be batched');
        const onlyNotes = await rpc(server, [{ jsonrpc: '2.0', method: 'notifications/initialized' }],
            { headers: { 'MCP-Protocol-Version': '2025-03-26' } });
        assert.equal(onlyNotes.status, 202);
        const empty = await rpc(server, [], { headers: { 'MCP-Protocol-Version': '2025-03-26' } });
        assert.equal(empty.status, 400);
        for (const v of ['2025-11-25', '2025-06-18']) {
            const r = await rpc(server, batch.slice(0, 1), { headers: { 'MCP-Protocol-Version': v } });
            assert.equal(r.status, 400, v);
            assert.equal(r.json.error.code, -32600);
        }
    });

    test('GET /mcp is 405; a foreign Origin is 403; loopback origins pass', async () => {
        const get = await fetch(server.base + '/mcp', { headers: { Accept: 'text/event-stream' } });
        assert.equal(get.status, 405);
        await get.text();
        for (const origin of ['http://evil.example', 'http://localhost.evil.example', 'http://127.0.0.1.evil.example',
            'null', 'http://[::2]:80']) {
            const r = await rpc(server, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { Origin: origin } });
            assert.equal(r.status, 403, origin);
        }
        for (const origin of ['http://localhost:3000', 'http://127.0.0.1', 'https://[::1]:8443']) {
            const r = await rpc(server, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { Origin: origin } });
            assert.equal(r.status, 200, origin);
        }
        const ct = await rpc(server, '{}', { raw: true, headers: { 'Content-Type': 'text/plain' } });
        assert.equal(ct.status, 415);
    });

    test('8 SDK clients at once, each with its own spills', async () => {
        const results = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
            const { client } = await connect(server, { name: `agent-${i}` });
            const text = `${TRICKY} #${i} ` + 'x'.repeat(1000 * i);
            const r = await client.callTool({ name: 'compact', arguments: { session: `conc-${i}`, ...spillRequest('out', text) } });
            const pointer = r.structuredContent.externalized[0].pointer;
            const back = [];
            for (let k = 0; k < 5; k++)
                back.push((await client.callTool({ name: 'reacquire', arguments: { session: `conc-${i}`, pointer } })).content[0].text);
            await client.close();
            return back.every(t => t === text);
        }));
        assert.deepEqual(results, Array(8).fill(true));
    });
});

describe('compactd over MCP with API keys', () => {
    let redis, server;
    before(async () => {
        redis = await Redis.start();
        server = await Compactd.start(redis, { keys: { [KEY_A]: 'tenant-a', [KEY_B]: 'tenant-b' } });
    });
    after(async () => {
        // Whatever started is stopped, even when starting the other failed.
        try {
            await server?.stop();
        } finally {
            await redis?.stop();
        }
    });

    test('no key or a wrong key: 401 before any JSON-RPC', async () => {
        for (const headers of [{}, { Authorization: 'Bearer not-a-key-at-all-0000' }]) {
            const r = await rpc(server, '{not json', { raw: true, headers });
            assert.equal(r.status, 401);
            assert.match(r.headers.get('www-authenticate'), /^Bearer/);
        }
        await assert.rejects(connect(server), e => /401/.test(String(e.code ?? e.message)));
        // Two Authorization headers, each valid alone: refused, as on /v1.
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
        const status = await new Promise((resolve, reject) => {
            const sock = net.connect(server.port, '127.0.0.1', () => sock.write(
                `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
                `Authorization: Bearer ${KEY_A}\r\nAuthorization: Bearer ${KEY_B}\r\n` +
                `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`));
            let got = '';
            sock.setTimeout(10000, () => { sock.destroy(); reject(new Error('no answer: ' + got)); });
            sock.on('data', d => {
                got += d;
                if (got.includes('\r\n')) { // the status line is all this needs
                    sock.destroy();
                    resolve(got.split(' ')[1]);
                }
            });
            sock.on('error', reject);
        });
        assert.equal(status, '401');
        const one = await rpc(server, JSON.parse(body), { headers: { Authorization: `Bearer ${KEY_A}` } });
        assert.equal(one.status, 200);
    });

    test('one tenant never reacquires another tenant\'s or another session\'s spill', async () => {
        const secret = 'tenant A secret: ' + TRICKY;
        const a = await connect(server, { key: KEY_A });
        const planned = await a.client.callTool({ name: 'compact', arguments: { session: 'shared-name', ...spillRequest('creds', secret) } });
        const ext = planned.structuredContent.externalized[0];
        const ok = await a.client.callTool({ name: 'reacquire', arguments: { session: 'shared-name', pointer: ext.pointer } });
        assert.equal(ok.content[0].text, secret);

        const b = await connect(server, { key: KEY_B });
        const attempts = [
            { session: 'shared-name', pointer: ext.pointer },
            { session: 'shared-name', key: 'creds', sha256: ext.sha256 },
        ];
        const otherSession = { session: 'another-session', pointer: ext.pointer };
        const answers = [];
        for (const args of attempts) answers.push(await b.client.callTool({ name: 'reacquire', arguments: args }));
        answers.push(await a.client.callTool({ name: 'reacquire', arguments: otherSession }));
        for (const r of answers) {
            assert.equal(r.isError, true);
            assert.equal(r.structuredContent, undefined);
            assert.match(textOf(r), /^NotFound: no spill/);
            assert.ok(!textOf(r).includes('secret') && !textOf(r).includes('tenant-a'));
        }
        // B's answer reads the same as for a spill that never existed.
        const never = await b.client.callTool({ name: 'reacquire', arguments: { session: 'shared-name', pointer: ext.pointer.replace(/[0-9a-f]{16}\]$/, '0000000000000000]') } });
        assert.equal(textOf(never).replace(/sha256 [0-9a-f]+/, ''), textOf(answers[0]).replace(/sha256 [0-9a-f]+/, ''));
        const listed = await b.client.callTool({ name: 'list_spills', arguments: { session: 'shared-name' } });
        assert.deepEqual(listed.structuredContent.spills, []);
        const restB = await rest(server, 'GET', `/v1/sessions/shared-name/spills/creds?sha256=${ext.sha256.slice(0, 16)}`, null, KEY_B);
        assert.equal(restB.status, 404);
        await a.client.close();
        await b.client.close();
    });
});
