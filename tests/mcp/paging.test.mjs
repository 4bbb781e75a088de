// Re-acquisition in pages through the official MCP TypeScript SDK client,
// on /mcp and on a session's own endpoint, against a real compactd and
// redis-server: offset (bytes) and max_tokens (counted with the
// tokenizer), each page within max_tokens, the same bytes as the REST read
// of that page, a note after every page but the last, the pages put
// together the text byte for byte; bad page arguments a tool error naming
// the argument, with nothing logged and no session id shown.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Compactd, Redis } from './servers.mjs';

const SESSION = 'paging-agent-x7q';
// Characters of one to four bytes, escapes, and runs a BPE merges.
const TEXT = 'start é ü 中文 🚀\n' + 'warning: unused variable "n" in parse() \\ \t'.repeat(60) +
    '🚀中é'.repeat(40) + ' end of log';
const BYTES = Buffer.from(TEXT, 'utf8');

const sha256 = text => crypto.createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

async function connect(server, path) {
    const transport = new StreamableHTTPClientTransport(new URL(server.base + path));
    const client = new Client({ name: 'compactd-paging-test', version: '1.0.0' });
    await client.connect(transport);
    return client;
}

async function http(server, path, body) {
    const res = await fetch(server.base + path, body === undefined ? {} : {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
}

async function tokens(server, tokenizer, text) {
    const r = await http(server, '/v1/tokens', { tokenizer, texts: [text] });
    assert.equal(r.status, 200);
    return r.json.total;
}

describe('reacquire in pages over MCP', () => {
    let redis, server, pointer;
    before(async () => {
        redis = await Redis.start();
        server = await Compactd.start(redis);
        const r = await http(server, `/v1/sessions/${SESSION}/compact`, {
            budget: 200, units: [
                { key: 'task', class: 'protected', tokens: 10, text: 'Never push to main.' },
                { key: 'build.log', class: 'protected', tokens: 100000, text: TEXT }],
        });
        assert.equal(r.status, 200);
        assert.equal(r.json.externalized[0].sha256, sha256(TEXT));
        pointer = r.json.externalized[0].pointer;
    });
    after(async () => {
        try {
            await server?.stop();
        } finally {
            await redis?.stop();
        }
    });

    const events = async () => (await http(server, `/v1/sessions/${SESSION}/events?limit=1000`)).json.events;

    // Pages the text through call(offset) and checks each page.
    async function pageThrough(call, tokenizer, maxTokens) {
        const total = await tokens(server, tokenizer, TEXT);
        let offset = 0, joined = Buffer.alloc(0), pages = 0;
        while (offset !== null) {
            const r = await call(offset);
            assert.equal(r.isError, undefined, JSON.stringify(r.content));
            const page = r.content[0].text, s = r.structuredContent;
            const bytes = Buffer.from(page, 'utf8');
            assert.equal(s.offset, offset);
            assert.equal(s.tokenizer, tokenizer);
            assert.equal(s.total_tokens, total);
            assert.equal(s.sha256, sha256(TEXT));
            assert.equal(s.text, undefined, 'the text is carried once');
            assert.ok(bytes.equals(BYTES.subarray(offset, offset + bytes.length)), 'the text\'s bytes there');
            const n = await tokens(server, tokenizer, page);
            assert.ok(n <= maxTokens || [...page].length === 1, `page at ${offset}: ${n} tokens > ${maxTokens}`);
            // The REST read of the same page is the same bytes.
            const rest = await http(server, `/v1/sessions/${SESSION}/spills/build.log?offset=${offset}` +
                `&max_tokens=${maxTokens}&tokenizer=${tokenizer}`);
            assert.equal(rest.json.text, page);
            assert.equal(rest.json.next_offset, s.next_offset);
            const end = offset + bytes.length;
            if (s.next_offset === null) {
                assert.equal(end, BYTES.length);
                assert.equal(s.remaining_tokens, 0);
                assert.equal(r.content.length, 1);
            } else {
                assert.equal(s.next_offset, end);
                assert.equal(s.remaining_tokens, await tokens(server, tokenizer, BYTES.subarray(end).toString('utf8')));
                assert.equal(r.content.length, 2);
                assert.match(r.content[1].text, new RegExp(`offset ${end} to read on`));
                assert.match(r.content[1].text, new RegExp(`${s.remaining_tokens} tokens`));
            }
            joined = Buffer.concat([joined, bytes]);
            offset = s.next_offset;
            pages++;
        }
        assert.ok(joined.equals(BYTES), 'the pages put together are the text');
        return pages;
    }

    test('/mcp pages with the tokenizer it names', async () => {
        const client = await connect(server, '/mcp');
        for (const [tokenizer, maxTokens] of [['o200k_base', 40], ['bytes', 100], ['cl100k_base', 7]]) {
            const before = (await events()).length;
            const pages = await pageThrough(offset => client.callTool({ name: 'reacquire', arguments: {
                session: SESSION, pointer, offset, max_tokens: maxTokens, tokenizer } }), tokenizer, maxTokens);
            assert.ok(pages > 2, `${tokenizer}: ${pages} pages`);
            const logged = (await events()).slice(before);
            assert.deepEqual(logged.map(e => [e.kind, e.via]), Array(pages).fill(['reacquire', 'mcp']));
        }
        await client.close();
    });

    test("a session's endpoint pages in its URL's tokenizer, key and sha256 or pointer alike", async () => {
        const client = await connect(server, `/v1/sessions/${SESSION}/mcp?tokenizer=o200k_base`);
        const { tools } = await client.listTools();
        const reacquire = tools.find(t => t.name === 'reacquire');
        assert.deepEqual(Object.keys(reacquire.inputSchema.properties), ['pointer', 'offset', 'max_tokens']);
        assert.match(reacquire.description, /max_tokens/);
        assert.match(reacquire.description, /offset/);
        await pageThrough(offset => client.callTool({ name: 'reacquire', arguments: {
            pointer, offset: offset || null, max_tokens: 25 } }), 'o200k_base', 25);
        const unbound = await connect(server, '/mcp');
        await pageThrough(offset => unbound.callTool({ name: 'reacquire', arguments: {
            session: SESSION, key: 'build.log', sha256: sha256(TEXT), offset, max_tokens: 25,
            tokenizer: 'o200k_base' } }), 'o200k_base', 25);
        await client.close();
        await unbound.close();
    });

    test('without page arguments the whole text is one page', async () => {
        const client = await connect(server, `/v1/sessions/${SESSION}/mcp`);
        const r = await client.callTool({ name: 'reacquire', arguments: { pointer } });
        assert.equal(r.content.length, 1);
        assert.equal(r.content[0].text, TEXT);
        assert.deepEqual([r.structuredContent.offset, r.structuredContent.next_offset,
            r.structuredContent.remaining_tokens, r.structuredContent.total_tokens],
        [0, null, 0, BYTES.length]);
        await client.close();
    });

    test('bad page arguments are tool errors naming them, log nothing and show no session', async () => {
        const inside = Buffer.from('start ', 'utf8').length + 1; // the second byte of "é"
        const before = (await events()).length;
        const bound = await connect(server, `/v1/sessions/${SESSION}/mcp`);
        const unbound = await connect(server, '/mcp');
        const cases = [
            [{ offset: -1 }, /offset/], [{ offset: '5' }, /offset/], [{ offset: 1.5 }, /offset/],
            [{ offset: true }, /offset/], [{ offset: BYTES.length + 1 }, /past the end/],
            [{ offset: inside }, /inside a UTF-8 character/], [{ max_tokens: 0 }, /max_tokens/],
            [{ max_tokens: 2 ** 40 }, /max_tokens/], [{ max_tokens: '10' }, /max_tokens/],
            [{ max_tokens: 3.5 }, /max_tokens/]];
        for (const [args, why] of cases) {
            for (const [client, extra] of [[bound, {}], [unbound, { session: SESSION }]]) {
                const r = await client.callTool({ name: 'reacquire', arguments: { pointer, ...extra, ...args } });
                assert.equal(r.isError, true, JSON.stringify(args));
                assert.match(r.content[0].text, /^InvalidRequest: /);
                assert.match(r.content[0].text, why);
                assert.doesNotMatch(r.content[0].text, new RegExp(SESSION));
            }
        }
        const tk = await unbound.callTool({ name: 'reacquire', arguments: {
            session: SESSION, pointer, tokenizer: 'gpt2' } });
        assert.equal(tk.isError, true);
        assert.match(tk.content[0].text, /tokenizer/);
        const bad = await connect(server, `/v1/sessions/${SESSION}/mcp?tokenizer=gpt2`);
        const url = await bad.callTool({ name: 'reacquire', arguments: { pointer } });
        assert.equal(url.isError, true);
        assert.match(url.content[0].text, /tokenizer/);
        const notFound = await unbound.callTool({ name: 'reacquire', arguments: {
            session: SESSION, pointer: '[externalized nope.log sha256:0123456789abcdef]' } });
        assert.equal(notFound.isError, true);
        assert.doesNotMatch(notFound.content[0].text, new RegExp(SESSION));
        assert.equal((await events()).length, before);
        await bound.close();
        await unbound.close();
        await bad.close();
    });
});
