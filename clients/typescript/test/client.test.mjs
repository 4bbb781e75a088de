// The TypeScript client against a real compactd and redis-server: every
// operation, every error class, the reacquire tools byte for byte, the MCP
// arguments with the official MCP client. Run by tests/clients/run_typescript.sh (after tsc builds dist/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    Ambiguous, Compactd, CompactdError, CompactionFailure, Forbidden, InvalidRequest, InvalidPointer, NotFound, Overloaded, PayloadTooLarge,
    StoreUnavailable, Timeout, TransportError, Unauthorized, REACQUIRE_TOOL_NAME, encodeKey, parsePointer,
    runReacquire, CHAT_FORMATS, ERROR_STATUS, reacquireToolFor,
} from '../dist/index.js';
import { Compactd as OpenAICompactd, RESPONSES_REACQUIRE_TOOL } from '../dist/openai.js';
import { Compactd as AnthropicCompactd } from '../dist/anthropic.js';
import { Redis, CompactdServer, recordingFetch, writeExchanges, freePort } from './servers.mjs';
import { checkAnthropic, checkOpenAI } from '../../../tests/clients/mock_provider.mjs';

// client: the core entry's; withOpenAI and withAnthropic: compactd/openai's and compactd/anthropic's.
let redis, server, client, withOpenAI, withAnthropic;
// Text with what a careless client would mangle: CRLF, tabs, non-ASCII, an astral character, JSON-looking bytes.
const LOG = 'make: *** [Makefile:42: billing.o] Error 1\r\n\tsrc/billing/invoice.c:88: é ✓ 🚀 "quoted" \\ {"a":1}\n'.repeat(40);

before(async () => {
    redis = await Redis.start();
    server = await CompactdServer.start(redis);
    client = new Compactd({ baseUrl: server.base, fetch: recordingFetch });
    withOpenAI = new OpenAICompactd({ baseUrl: server.base, fetch: recordingFetch });
    withAnthropic = new AnthropicCompactd({ baseUrl: server.base, fetch: recordingFetch });
});

after(async () => {
    writeExchanges();
    await server?.stop();
    await redis?.stop();
});

function expectError(cls, check) {
    return e => {
        assert.ok(e instanceof cls, `expected ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`);
        assert.ok(e instanceof CompactdError);
        // An answer's status is the one the shared error table gives its type.
        if (e.detail) assert.equal(e.status, ERROR_STATUS[e.type], e.type);
        check?.(e);
        return true;
    };
}

test("spec/shared.json's pointer examples read as the server reads them", async () => {
    const examples = JSON.parse(fs.readFileSync(new URL('../../../spec/shared.json', import.meta.url), 'utf8')).pointer.examples;
    assert.ok(examples.length > 10);
    for (const e of examples) {
        const label = JSON.stringify(e.text.slice(0, 60));
        assert.deepEqual(parsePointer(e.text), e.key === null ? null : { key: e.key, sha256: '0123456789abcdef' }, label);
        if (e.key === null) {
            // The client refuses it before sending; the server, sent it, refuses it too.
            await assert.rejects(client.reacquire('grammar', e.text), expectError(InvalidPointer), label);
            await assert.rejects(client.reacquireCall('grammar', { pointer: e.text }),
                expectError(InvalidRequest, err => assert.equal(err.path, '$.pointer', label)));
        } else {
            // A pointer both read: looked up, and nothing is spilled in this session.
            await assert.rejects(client.reacquire('grammar', e.text), expectError(NotFound), label);
        }
    }
});

test('compactUnits externalizes a protected unit; getSpill and reacquire return it byte for byte', async () => {
    const r = await client.compactUnits('units-1', [
        { key: 'task', class: 'protected', text: 'Never push to main.' },
        { key: 'notes/build [x] 100%', class: 'protected', text: LOG, metadata: { role: 'tool' } },
        { key: 'ls', class: 'derivable', tokens: 300, reacquire: 'ls -la /srv' },
        { key: 'old', class: 'redundant', tokens: 50 },
    ], 200);
    assert.equal(r.session, 'units-1');
    assert.ok(r.used_tokens <= 200);
    assert.deepEqual(r.decisions.map(d => d.decision), ['preserved', 'externalized', 'dropped', 'dropped']);
    const ext = r.externalized[0];
    assert.equal(ext.key, 'notes/build [x] 100%');
    assert.deepEqual(parsePointer(ext.pointer), { key: ext.key, sha256: ext.sha256.slice(0, 16) });
    const byPointer = await client.reacquire('units-1', ext.pointer);
    assert.equal(byPointer.text, LOG);
    assert.deepEqual(byPointer.metadata, { role: 'tool' });
    const byDigest = await client.getSpill('units-1', ext.key, ext.sha256);
    assert.equal(byDigest.text, LOG);
    const latest = await client.getSpill('units-1', ext.key);
    assert.equal(latest.sha256, ext.sha256);
    // The href compactd gives is the path the client builds.
    assert.equal(ext.href, `/v1/sessions/units-1/spills/${encodeKey(ext.key)}?sha256=${ext.sha256}`);
    const list = await client.listSpills('units-1');
    assert.deepEqual(list.spills.map(s => [s.key, s.sha256]), [[ext.key, ext.sha256]]);
});

test('compactMessages (openai) answers a Chat Completions history the message spill restores', async () => {
    const history = [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: 'Why does it fail?\n' + LOG },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.c"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'int main(void) { return 1; }'.repeat(30) },
        { role: 'assistant', content: 'The return value is wrong.' },
        { role: 'user', content: 'Fix it.' },
    ];
    const { messages, system, result } = await client.compactMessages('msgs-openai', history, 400,
        { format: 'openai', tokenizer: 'bytes', policy: { read_only_tools: ['read_file'] } });
    assert.equal(system, undefined);
    assert.equal(result.format, 'openai');
    assert.ok(result.used_tokens <= 400);
    const ext = result.decisions.find(d => d.decision === 'externalized');
    assert.ok(ext, JSON.stringify(result.decisions));
    assert.equal(ext.index, 1);
    assert.equal(messages[1].content, ext.pointer);
    const spill = await client.reacquire('msgs-openai', ext.pointer);
    assert.equal(spill.text, JSON.stringify(history[1]));
    assert.deepEqual(JSON.parse(spill.text), history[1]);
    assert.ok(result.marker_count >= 1);
});

test('compactMessages (anthropic) keeps the system prompt and the alternation', async () => {
    const history = [
        { role: 'user', content: 'Why does it fail?\n' + LOG },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.c' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'int main(void) { return 1; }'.repeat(30) }] },
        { role: 'assistant', content: 'The return value is wrong.' },
        { role: 'user', content: 'Fix it.' },
    ];
    const { messages, system, result } = await client.compactMessages('msgs-anthropic', history, 500,
        { format: 'anthropic', system: 'You fix builds.' });
    assert.equal(system, 'You fix builds.');
    assert.ok(result.used_tokens <= 500);
    assert.ok(result.system_tokens > 0);
    messages.forEach((m, i) => assert.equal(m.role, i % 2 === 0 ? 'user' : 'assistant', JSON.stringify(messages)));
});

test('compactMessages (openai-responses) keeps the reasoning of the turn in flight in place and externalizes an output', async () => {
    const reasoning = { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Read the file.' }],
                        encrypted_content: 'gAAAAB' + 'q'.repeat(200) };
    const history = [
        { role: 'user', content: 'Why does it fail?' },
        reasoning,
        { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'read_file', arguments: '{"path":"a.c"}', status: 'completed' },
        { type: 'function_call_output', call_id: 'call_1', output: LOG },
    ];
    const { messages, instructions, result } = await client.compactMessages('msgs-responses', history, 800,
        { format: 'openai-responses', instructions: 'You fix builds.', mode: 'discovery' });
    assert.equal(instructions, 'You fix builds.');
    assert.equal(result.format, 'openai-responses');
    assert.equal(result.tokenizer, 'o200k_base');
    assert.equal(result.budget_basis.encrypted_state, 'decoded_bytes');
    assert.ok(result.used_tokens <= 800);
    assert.deepEqual(messages[1], reasoning);
    assert.equal(messages[2].call_id, 'call_1');
    const ext = result.decisions.find(d => d.decision === 'externalized');
    assert.equal(ext?.index, 3, JSON.stringify(result.decisions));
    assert.deepEqual(messages[3], { type: 'function_call_output', call_id: 'call_1', output: ext.pointer });
    const spill = await client.reacquire('msgs-responses', ext.pointer);
    assert.equal(spill.text, JSON.stringify(history[3]));
    // Once the user speaks again the turn is finished: the API discards its
    // reasoning, and so does compactd, first and without a marker.
    const next = [...history, { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text: 'The return value is wrong.', annotations: [] }] },
        { role: 'user', content: 'Fix it.' }];
    const later = await client.compactMessages('msgs-responses', next, 800, { format: 'openai-responses', mode: 'discovery' });
    assert.ok(!later.messages.some(m => m.type === 'reasoning'));
    assert.equal(later.result.decisions[1].reason, 'redundant');
    assert.equal(later.result.marker_count, 0);
    // A call without its output is the provider's error, with its path.
    await assert.rejects(client.compactMessages('bad-rs', history.slice(0, 3), 400, { format: 'openai-responses' }),
        expectError(InvalidRequest, e => assert.equal(e.path, '$.messages[2].call_id')));
});

test('compactMessages (anthropic) sends a finished turn back without the thinking the API strips', async () => {
    const think = t => ({ type: 'thinking', thinking: t, signature: 'EqQBCkYIBxgCKkB' + t.length });
    const use = id => ({ type: 'tool_use', id, name: 'read_file', input: { path: 'a.c' } });
    const result = id => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'int x;' }] });
    const history = [
        { role: 'user', content: 'Why does it fail?' },
        { role: 'assistant', content: [think('Read a.c first.'), use('toolu_1')] }, result('toolu_1'),
        { role: 'assistant', content: 'x is never set.' },
        { role: 'user', content: 'Fix it.' },
        { role: 'assistant', content: [think('Edit a.c.'), use('toolu_2')] }, result('toolu_2'),
    ];
    const { messages, result: r } = await client.compactMessages('ts-think', history, 100000,
        { format: 'anthropic', tokenizer: 'o200k_base' });
    assert.equal(r.decisions[1].thinking_dropped, 1);
    assert.deepEqual(messages[1], { role: 'assistant', content: [use('toolu_1')] });
    // The loop in flight keeps its thinking as it was returned.
    assert.deepEqual(messages[5], history[5]);
    assert.equal(r.decisions[5].thinking_dropped, undefined);
    assert.equal(r.budget_basis.encrypted_state, 'decoded_bytes');
});

test('compactMessages: narration kept while its read goes, the plan extended then recompacted, Anthropic breakpoints moved and placed', async () => {
    const read = (i, text) => [
        { role: 'assistant', content: `Reading f${i}.c first.`, tool_calls: [{ id: `call_${i}`, type: 'function',
            function: { name: 'read_file', arguments: `{"path":"f${i}.c"}` } }] },
        { role: 'tool', tool_call_id: `call_${i}`, content: text }];
    const opts = { format: 'openai', tokenizer: 'bytes', policy: { read_only_tools: ['read_*'], keep_last: 1 } };
    let history = [{ role: 'user', content: 'Fix the build.' }, ...read(1, LOG.slice(0, 900)),
        { role: 'user', content: 'Go on.' }];
    const first = await client.compactMessages('ts-sticky', history, 700, opts);
    assert.equal(first.result.plan, 'fresh');
    assert.equal(first.result.decisions[1].calls_dropped, 1);
    assert.deepEqual(first.messages[1], { role: 'assistant', content: 'Reading f1.c first.' });
    assert.ok(first.result.used_tokens <= first.result.low_water);
    history = [...history, { role: 'assistant', content: 'The build needs f2.c.' }];
    const again = await client.compactMessages('ts-sticky', history, 700, opts);
    assert.equal(again.result.plan, 'extended');
    assert.deepEqual(again.messages.slice(0, first.messages.length), first.messages);
    history = [...history, { role: 'user', content: 'Read it.' }, ...read(2, LOG.slice(0, 400))];
    const later = await client.compactMessages('ts-sticky', history, 700, opts);
    assert.equal(later.result.plan, 'recompacted');
    assert.ok(later.result.used_tokens <= later.result.low_water);
    // Anthropic: the dropped result's breakpoint moves back to the prose that
    // stayed; cache_prefix puts one on the last block.
    const turns = [
        { role: 'user', content: 'Fix the build.' },
        { role: 'assistant', content: [{ type: 'text', text: 'Reading f1.c first.' },
            { type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'f1.c' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: LOG.slice(0, 900),
            cache_control: { type: 'ephemeral' } }] },
        { role: 'assistant', content: 'Found it.' },
        { role: 'user', content: 'Fix it.' }];
    const out = await client.compactMessages('ts-cache', turns, 500,
        { ...opts, format: 'anthropic', cache_prefix: true });
    assert.deepEqual(out.result.cache_breakpoints, [
        { from: { index: 2, block: 0 }, to: { message: 1, block: 0 } },
        { from: null, to: { message: out.messages.length - 1, block: 0 } }]);
    assert.deepEqual(out.messages[1].content,
        [{ type: 'text', text: 'Reading f1.c first.', cache_control: { type: 'ephemeral' } }]);
});

test('verify and verifyMessages find a missing protected unit and repair it', async () => {
    const units = [{ key: 'rule', class: 'protected', text: 'Never push to main.' },
                   { key: 'ledger', class: 'protected', text: 'migration 0042 applied' }];
    const v = await client.verify('verify-1', { context: 'Goal: ship. Never push to main.', units, budget: 1000, context_tokens: 100, dry_run: true });
    assert.equal(v.verdict, 'silent_truncation');
    assert.deepEqual(v.present.map(p => p.key), ['rule']);
    assert.deepEqual(v.missing.map(m => m.key), ['ledger']);
    assert.deepEqual(v.repair.append.map(a => a.text), ['migration 0042 applied']);
    const vm = await client.verifyMessages('verify-1', { format: 'openai', units, budget: 1000, context_tokens: 100, dry_run: true,
        messages: [{ role: 'system', content: 'Never push to main.' }, { role: 'user', content: 'Ship it.' }] });
    assert.equal(vm.verdict, 'silent_truncation');
    assert.deepEqual(vm.repair_into, { message: 1, as: 'text_blocks_at_end' });
    const safe = await client.verify('verify-1', { context: 'Never push to main. migration 0042 applied', units });
    assert.equal(safe.verdict, 'safe');
});

test('countTokens counts exactly under o200k_base and by bytes by default', async () => {
    const r = await client.countTokens(['hello world', '<|endoftext|>'], 'o200k_base');
    assert.deepEqual(r, { tokenizer: 'o200k_base', counts: [2, 7], total: 9 });
    const b = await client.countTokens(['é✓']);
    assert.deepEqual(b, { tokenizer: 'bytes', counts: [5], total: 5 });
});

test('deleteSession removes the spills: the pointer then answers NotFound', async () => {
    const r = await client.compactUnits('gone-1', [{ key: 'k', class: 'protected', text: LOG }], 60);
    const pointer = r.externalized[0].pointer;
    assert.equal((await client.reacquire('gone-1', pointer)).text, LOG);
    assert.equal(await client.deleteSession('gone-1'), undefined);
    await assert.rejects(client.reacquire('gone-1', pointer), expectError(NotFound, e => assert.equal(e.status, 404)));
    assert.deepEqual((await client.listSpills('gone-1')).spills, []);
});

test('400 is InvalidRequest with the JSON path', async () => {
    await assert.rejects(client.compactUnits('bad-1', [{ key: 'a', class: 'protected', tokens: -1, text: 'x' }], 10),
        expectError(InvalidRequest, e => { assert.equal(e.status, 400); assert.equal(e.path, '$.units[0].tokens'); }));
    await assert.rejects(client.compactMessages('bad-1', [{ role: 'tool', tool_call_id: 'nope', content: 'x' }], 100, { format: 'openai' }),
        expectError(InvalidRequest, e => assert.match(e.path, /^\$\.messages\[0\]/)));
    await assert.rejects(client.countTokens(['x'], 'p50k_base'), expectError(InvalidRequest, e => assert.equal(e.path, '$.tokenizer')));
});

test('422 is CompactionFailure with required_budget and the forcing message', async () => {
    await assert.rejects(client.compactUnits('fail-1', [{ key: 'big', class: 'protected', text: LOG }], 10),
        expectError(CompactionFailure, e => {
            assert.equal(e.status, 422);
            assert.equal(e.budget, 10);
            assert.equal(e.key, 'big');
            assert.ok(e.requiredBudget > 10 && e.requiredBudget === e.pointerTokens, JSON.stringify(e.detail));
        }));
    const history = [{ role: 'user', content: 'short' }, { role: 'user', content: LOG }];
    let required;
    await assert.rejects(client.compactMessages('fail-1', history, 20, { format: 'openai' }),
        expectError(CompactionFailure, e => {
            assert.ok(e.index !== undefined);
            assert.deepEqual(e.forcing, [history[e.index]]);
            required = e.requiredBudget;
            // The least plan, part by part, adds up to the budget it names.
            const by = e.requiredBy;
            assert.ok(by, JSON.stringify(e.detail));
            const sum = by.system_tokens + by.tools_tokens + by.reserve_tokens + by.marker_tokens
                + by.messages.reduce((n, m) => n + m.tokens, 0);
            assert.equal(sum, e.requiredBudget, JSON.stringify(by));
            assert.ok(by.messages.some(m => m.index === e.index));
        }));
    // The least budget it names is enough.
    const ok = await client.compactMessages('fail-1', history, required, { format: 'openai' });
    assert.ok(ok.result.used_tokens <= required);
    assert.deepEqual(await client.listSpills('fail-1').then(l => l.spills.length > 0), true);
});

test('409 is Ambiguous with both candidates when a prefix names two versions', async () => {
    const r = await client.compactUnits('ambiguous-1', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const { sha256 } = r.externalized[0];
    // A second version sharing the first 16 digits, written into Redis directly (no text has such a digest on purpose).
    const twin = sha256.slice(0, 16) + '0'.repeat(48);
    redis.cli('HSET', 'compactd:{default:ambiguous-1}:meta', `${twin}:build.log`, 'protected 3 2024-11-30T12:00:00.000Z');
    redis.cli('HSET', 'compactd:{default:ambiguous-1}:text', `${twin}:build.log`, 'twin');
    await assert.rejects(client.getSpill('ambiguous-1', 'build.log', sha256.slice(0, 16)),
        expectError(Ambiguous, e => { assert.equal(e.status, 409); assert.deepEqual([...e.candidates].sort(), [sha256, twin].sort()); }));
    await assert.rejects(client.reacquire('ambiguous-1', r.externalized[0].pointer), expectError(Ambiguous));
    // The reacquire tool tells the model, rather than throwing.
    const out = await withOpenAI.openai.turn('ambiguous-1', { role: 'assistant', content: null, refusal: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: REACQUIRE_TOOL_NAME, arguments: JSON.stringify({ pointer: r.externalized[0].pointer }) } }] });
    assert.match(out[1].content, /^compactd: /);
    assert.equal((await client.getSpill('ambiguous-1', 'build.log', sha256.slice(0, 17))).text, LOG);
});

test('403 is Forbidden for a foreign Origin; 413 is PayloadTooLarge over the body limit', async () => {
    const foreign = new Compactd({ baseUrl: server.base, fetch: recordingFetch, headers: { Origin: 'https://attacker.example' } });
    await assert.rejects(foreign.countTokens(['x']), expectError(Forbidden, e => assert.equal(e.status, 403)));
    const small = await CompactdServer.start(redis, { env: { COMPACTD_MAX_BODY_BYTES: '4096' } });
    try {
        const cl = new Compactd({ baseUrl: small.base, fetch: recordingFetch });
        await assert.rejects(cl.compactUnits('big-1', [{ key: 'k', class: 'protected', text: LOG.repeat(4) }], 100),
            expectError(PayloadTooLarge, e => assert.equal(e.status, 413)));
        assert.deepEqual((await cl.listSpills('big-1')).spills, []);
    } finally {
        await small.stop();
    }
});

test('401 is Unauthorized when API keys are configured', async () => {
    const keyed = await CompactdServer.start(redis, { keys: { 'key-one-0123456789abcdef': 'tenant-a' } });
    try {
        const anon = new Compactd({ baseUrl: keyed.base, fetch: recordingFetch });
        await assert.rejects(anon.listSpills('s'), expectError(Unauthorized, e => assert.equal(e.status, 401)));
        const wrong = new Compactd({ baseUrl: keyed.base, apiKey: 'key-two-0123456789abcdef', fetch: recordingFetch });
        await assert.rejects(wrong.countTokens(['x']), expectError(Unauthorized));
        const right = new Compactd({ baseUrl: keyed.base, apiKey: 'key-one-0123456789abcdef', fetch: recordingFetch });
        assert.deepEqual((await right.listSpills('s')).spills, []);
    } finally {
        await keyed.stop();
    }
});

test('503 is StoreUnavailable once Redis is gone', async () => {
    const r2 = await Redis.start();
    const c2 = await CompactdServer.start(r2, { env: { COMPACTD_REDIS_TIMEOUT_MS: '500', COMPACTD_REDIS_CONNECT_TIMEOUT_MS: '300' } });
    try {
        const cl = new Compactd({ baseUrl: c2.base, fetch: recordingFetch, maxRetries: 0 });
        const r = await cl.compactUnits('s', [{ key: 'k', class: 'protected', text: LOG }], 60);
        await r2.stop();
        await assert.rejects(cl.reacquire('s', r.externalized[0].pointer), expectError(StoreUnavailable, e => assert.equal(e.status, 503)));
        await assert.rejects(cl.compactUnits('s', [{ key: 'k2', class: 'protected', text: LOG + '!' }], 60), expectError(StoreUnavailable));
        // A plan that spills nothing is answered without Redis, saying its log entry is not kept.
        const plan = await cl.compactUnits('s', [{ key: 'goal', class: 'protected', text: 'ship it' }], 60);
        assert.equal(plan.logged, false);
        const chat = await cl.compactMessages('s', [{ role: 'user', content: 'Go on.' }], 4000, { format: 'openai' });
        assert.equal(chat.result.logged, false);
    } finally {
        await c2.stop();
    }
});

test('503 Overloaded carries the retry advice', async () => {
    const limit = 4096;
    const c3 = await CompactdServer.start(redis, { env: { COMPACTD_MAX_BODY_BYTES: String(limit), COMPACTD_MAX_INFLIGHT_BYTES: String(limit) } });
    const sock = net.connect(c3.port, '127.0.0.1');
    try {
        await new Promise(resolve => sock.once('connect', resolve));
        // A request whose body is on its way holds most of the in-flight budget.
        sock.write(`POST /v1/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${limit - 100}\r\n\r\n{"texts":["`
                   + 'a'.repeat(3000));
        const deadline = Date.now() + 10000;
        for (;;) {
            const m = /^compactd_inflight_bytes (\d+)/m.exec(await (await fetch(c3.base + '/metrics')).text());
            if (m && Number(m[1]) >= 3000) break;
            if (Date.now() > deadline) throw new Error('the held body never showed in compactd_inflight_bytes');
            await new Promise(r => setTimeout(r, 20));
        }
        const cl = new Compactd({ baseUrl: c3.base, fetch: recordingFetch, maxRetries: 0 });
        // (On a route that declares 503: openapi.yaml lists none for /v1/tokens, though Overloaded can answer there.)
        await assert.rejects(cl.compactUnits('s', [{ key: 'k', class: 'redundant', tokens: 1, reacquire: 'x'.repeat(2000) }], 10),
            expectError(Overloaded, e => { assert.equal(e.status, 503); assert.equal(e.retryAfterSeconds, 1); }));
    } finally {
        sock.destroy();
        await c3.stop();
    }
});

test('no answer is TransportError; a text that is no pointer is InvalidPointer', async () => {
    const port = await freePort();
    const dead = new Compactd({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 });
    await assert.rejects(dead.listSpills('s'), expectError(TransportError, e => assert.equal(e.status, 0)));
    await assert.rejects(client.reacquire('s', 'not a pointer'), expectError(InvalidPointer));
});

test('the fetch is injectable: every call goes through it', async () => {
    const seen = [];
    const c = new Compactd({ baseUrl: server.base, apiKey: 'ignored-without-keys', fetch: (url, init) => { seen.push([init.method, url, init.headers.Authorization]); return fetch(url, init); } });
    await c.countTokens(['x']);
    assert.deepEqual(seen, [['POST', `${server.base}/v1/tokens`, 'Bearer ignored-without-keys']]);
});

test('the OpenAI reacquire tool: turn() answers a call with the spill, byte for byte', async () => {
    const r = await client.compactUnits('tool-openai', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const pointer = r.externalized[0].pointer;
    assert.equal(withOpenAI.openai.tool.function.name, REACQUIRE_TOOL_NAME);
    const reply = { role: 'assistant', content: null, refusal: null, annotations: [],
        tool_calls: [{ id: 'c1', type: 'function', function: { name: REACQUIRE_TOOL_NAME, arguments: JSON.stringify({ pointer }) } },
                     { id: 'c2', type: 'function', function: { name: 'grep', arguments: '{"q":"x"}' } },
                     { id: 'c3', type: 'function', function: { name: REACQUIRE_TOOL_NAME, arguments: '{"pointer":"[externalized nope sha256:0000000000000000]"}' } }] };
    const out = await withOpenAI.openai.turn('tool-openai', reply, { grep: args => `grep ${args.q}` });
    assert.deepEqual(out[0], reply);
    assert.deepEqual(out.slice(1).map(m => [m.role, m.tool_call_id]), [['tool', 'c1'], ['tool', 'c2'], ['tool', 'c3']]);
    assert.equal(out[1].content, LOG);
    assert.equal(out[2].content, 'grep x');
    assert.match(out[3].content, /^compactd: /);
    // A plain answer: the reply as it came.
    assert.deepEqual(await withOpenAI.openai.turn('tool-openai', { role: 'assistant', content: 'ok', refusal: null }), [{ role: 'assistant', content: 'ok', refusal: null }]);
});

test('turn() keeps every member and block the SDK returned, and the history goes through compactd and the provider', async () => {
    // OpenAI: annotations, audio (referred to by id, as a request does), a custom tool call answered with its raw input.
    const reply = { role: 'assistant', content: null, refusal: null,
        annotations: [{ type: 'url_citation', url_citation: { url: 'https://example.com/a', title: 'A', start_index: 0, end_index: 3 } }],
        audio: { id: 'audio_1', data: 'UklGRg==', expires_at: 1700000000, transcript: 'Patching it.' },
        tool_calls: [{ id: 'c1', type: 'custom', custom: { name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' } }] };
    const out = await withOpenAI.openai.turn('keep-openai', reply, { apply_patch: input => `applied ${input.length} bytes` });
    const patched = `applied ${reply.tool_calls[0].custom.input.length} bytes`;
    const { audio, ...rest } = reply;
    assert.deepEqual(out, [{ ...rest, audio: { id: audio.id } },
                           { role: 'tool', tool_call_id: 'c1', content: patched }]);
    const history = [{ role: 'user', content: 'Patch it.' }, ...out];
    const { messages } = await client.compactMessages('keep-openai', history, 100000, { format: 'openai' });
    assert.deepEqual(messages, history);
    assert.doesNotThrow(() => checkOpenAI({ messages }));

    // Anthropic: citations, a server tool's call and result, thinking, in their order.
    const content = [{ type: 'thinking', thinking: 'Search first.', signature: 'EqQBCkYI' },
        { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'retry_limit' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01',
          content: [{ type: 'web_search_result', url: 'https://example.com/r', title: 'R', encrypted_content: 'EuYB', page_age: null }] },
        { type: 'text', text: 'It is 17.', citations: [{ type: 'web_search_result_location', url: 'https://example.com/r',
                                                          title: 'R', encrypted_index: 'Eo8B', cited_text: 'RETRY_LIMIT=17' }] },
        { type: 'tool_use', id: 'toolu_01', name: 'read_file', input: { path: 'a.c' }, caller: { type: 'direct' } }];
    const msg = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content, stop_reason: 'tool_use',
                  stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
    const turn = await withAnthropic.anthropic.turn('keep-anthropic', msg, { read_file: () => 'int x;' });
    assert.deepEqual(turn, [{ role: 'assistant', content },
                            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'int x;' }] }]);
    const back = await client.compactMessages('keep-anthropic', [{ role: 'user', content: 'What is the limit?' }, ...turn], 100000,
                                              { format: 'anthropic' });
    assert.deepEqual(back.messages.slice(1), turn);
    assert.doesNotThrow(() => checkAnthropic({ messages: back.messages }));
});

test('the Anthropic reacquire tool: turn() answers tool_use blocks in one user turn, byte for byte', async () => {
    const r = await client.compactUnits('tool-anthropic', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const pointer = r.externalized[0].pointer;
    assert.equal(withAnthropic.anthropic.tool.name, REACQUIRE_TOOL_NAME);
    const reply = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', stop_reason: 'tool_use', stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
        content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'redacted_thinking', data: 'ZW5j' },
                  { type: 'text', text: 'Reading.', citations: null },
                  { type: 'tool_use', id: 'tu1', name: REACQUIRE_TOOL_NAME, input: { pointer } },
                  { type: 'tool_use', id: 'tu2', name: 'unknown_tool', input: {} }] };
    const out = await withAnthropic.anthropic.turn('tool-anthropic', reply);
    assert.deepEqual(out, [
        { role: 'assistant', content: reply.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: LOG },
                                  { type: 'tool_result', tool_use_id: 'tu2', content: 'no handler for tool unknown_tool', is_error: true }] },
    ]);
    // The turn goes back to compactd as it is: the thinking of the tool-use
    // loop in flight comes back unchanged.
    const history = [{ role: 'user', content: 'Why does the build fail?' }, ...out];
    const { messages } = await client.compactMessages('tool-anthropic-back', history, 100000, { format: 'anthropic', tokenizer: 'bytes' });
    assert.deepEqual(messages[1].content.slice(0, 2), out[0].content.slice(0, 2));
});

test('the Responses reacquire tool: turn() gives back the output items, then an output per call, byte for byte', async () => {
    const r = await client.compactUnits('tool-responses', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const pointer = r.externalized[0].pointer;
    assert.equal(withOpenAI.responses.tool, RESPONSES_REACQUIRE_TOOL);
    const output = [
        { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Read it back.' }], encrypted_content: 'gAAAAB' + 'z'.repeat(40) },
        { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Reading.', annotations: [] }] },
        { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_1', name: REACQUIRE_TOOL_NAME, arguments: JSON.stringify({ pointer }) },
        { id: 'fc_2', type: 'function_call', status: 'completed', call_id: 'call_2', name: 'grep', arguments: '{"q":"x"}' },
        { id: 'ctc_1', type: 'custom_tool_call', status: 'completed', call_id: 'call_3', name: 'patch', input: '*** raw ***' },
        { id: 'fc_3', type: 'function_call', status: 'completed', call_id: 'call_4', name: 'unknown_tool', arguments: '{}' },
    ];
    const out = await withOpenAI.responses.turn('tool-responses', { output }, { grep: args => `grep ${args.q}`, patch: input => `patched ${input}` });
    assert.deepEqual(out, [...output,
        { type: 'function_call_output', call_id: 'call_1', output: LOG },
        { type: 'function_call_output', call_id: 'call_2', output: 'grep x' },
        { type: 'custom_tool_call_output', call_id: 'call_3', output: 'patched *** raw ***' },
        { type: 'function_call_output', call_id: 'call_4', output: 'no handler for tool unknown_tool' }]);
    // The items go back to compactd as they are: the reasoning stays whole and in place.
    const input = [{ role: 'user', content: 'Why does the build fail?' }, ...out];
    const { messages } = await client.compactMessages('tool-responses-back', input, 100000, { format: 'openai-responses' });
    assert.deepEqual(messages, input);
    // A pointer it cannot find is an error result the model reads, not a throw.
    const missing = await withOpenAI.responses.turn('tool-responses', { output: [{ ...output[2], arguments: '{"pointer":"[externalized nope sha256:0000000000000000]"}' }] });
    assert.match(missing[1].output, /^compactd: /);
});

test("the provider tools are the server's definitions of GET /tools, and their calls go through /reacquire", async () => {
    const ours = { openai: withOpenAI.openai.tool, anthropic: withAnthropic.anthropic.tool, 'openai-responses': withOpenAI.responses.tool };
    assert.deepEqual(Object.keys(ours).sort(), [...CHAT_FORMATS].sort());
    for (const [format, tool] of Object.entries(ours)) {
        const answer = await client.tools('any-session', format);
        assert.equal(answer.format, format);
        assert.deepEqual(answer.tools, [tool], format);
        // The core entry's copy, without a provider SDK, is the same definition.
        assert.deepEqual(answer.tools, [reacquireToolFor(format)], format);
    }
    const r = await client.compactUnits('tool-route', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const pointer = r.externalized[0].pointer;
    // OpenAI's arguments string, sent as the model wrote it (spaces included).
    assert.equal((await client.reacquireCall('tool-route', `{ "pointer" : ${JSON.stringify(pointer)} }`)).text, LOG);
    assert.equal((await client.reacquireCall('tool-route', { pointer })).text, LOG);
    await assert.rejects(client.reacquireCall('tool-route', '{"pointer": 1}'),
        expectError(InvalidRequest, e => assert.equal(e.path, '$.pointer')));
    await assert.rejects(client.reacquireCall('other-session', { pointer }), expectError(NotFound));
    const out = await withOpenAI.openai.turn('tool-route', { role: 'assistant', content: null, refusal: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: REACQUIRE_TOOL_NAME, arguments: 'not json' } }] });
    assert.match(out[1].content, /^compactd: malformed JSON/);
    const res = await fetch(`${server.base}/v1/sessions/tool-route/events`);
    const vias = (await res.json()).events.filter(e => e.kind === 'reacquire').map(e => e.via);
    assert.deepEqual(vias, ['tool', 'tool']);
});

test('the reacquire tool pages a long text: each page and the note after it, put together the text', async () => {
    const r = await client.compactUnits('tool-pages', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const pointer = r.externalized[0].pointer;
    let offset = null, joined = '', pages = 0;
    do {
        // As a strict-mode model writes the call: every argument, null where it has none.
        const page = await client.reacquireCall('tool-pages', JSON.stringify({ pointer, offset, max_tokens: 500 }));
        assert.equal(page.offset, offset ?? 0);
        assert.equal(page.note === undefined, page.next_offset === null);
        joined += page.text;
        offset = page.next_offset;
        pages++;
    } while (offset !== null);
    assert.equal(joined, LOG);
    assert.ok(pages > 2, `${pages} pages`);
    // The glue gives the model the page, then the note saying where to read on.
    const first = await runReacquire(client, 'tool-pages', { pointer, offset: null, max_tokens: 500 });
    assert.equal(first.isError, false);
    assert.ok(first.text.startsWith(LOG.slice(0, 100)));
    assert.match(first.text, /\n\n\[compactd: this is bytes 0 to \d+ of \d+; \d+ tokens \(bytes\) remain\. Call reacquire again with the same pointer and offset \d+ to read on\.\]$/);
    const bad = await runReacquire(client, 'tool-pages', { pointer, offset: -1, max_tokens: 500 });
    assert.equal(bad.isError, true);
    assert.match(bad.text, /offset/);
});

test('mcp(session) points the official MCP client at the per-session endpoint: two tools, the pointer text alone', async () => {
    const r = await client.compactUnits('mcp-own', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const { url, options } = client.mcp('mcp-own');
    assert.equal(url.href, `${server.base}/v1/sessions/mcp-own/mcp`);
    const mcp = new McpClient({ name: 'compactd-client-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(url, options));
    try {
        assert.deepEqual((await mcp.listTools()).tools.map(t => t.name), ['reacquire', 'list_spills']);
        const res = await mcp.callTool({ name: 'reacquire', arguments: { pointer: r.externalized[0].pointer } });
        assert.equal(res.isError ?? false, false);
        assert.equal(res.content[0].text, LOG);
    } finally {
        await mcp.close();
    }
    const other = new McpClient({ name: 'compactd-client-test', version: '1.0.0' });
    const o = client.mcp('mcp-other');
    await other.connect(new StreamableHTTPClientTransport(o.url, o.options));
    try {
        const res = await other.callTool({ name: 'reacquire', arguments: { pointer: r.externalized[0].pointer } });
        assert.equal(res.isError, true);
    } finally {
        await other.close();
    }
});

test('mcp() points the official MCP client at compactd; its reacquire returns the same bytes', async () => {
    const r = await client.compactUnits('mcp-1', [{ key: 'build.log', class: 'protected', text: LOG }], 60);
    const { url, options } = client.mcp();
    assert.equal(url.href, `${server.base}/mcp`);
    const mcp = new McpClient({ name: 'compactd-client-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(url, options));
    try {
        const res = await mcp.callTool({ name: 'reacquire', arguments: { session: 'mcp-1', pointer: r.externalized[0].pointer } });
        assert.equal(res.isError ?? false, false);
        assert.equal(res.content[0].text, LOG);
    } finally {
        await mcp.close();
    }
    const keyed = new Compactd({ baseUrl: server.base + '/', apiKey: 'k' }).mcp();
    assert.deepEqual(keyed.options.requestInit.headers, { Authorization: 'Bearer k' });
});

test('a dry run tells each dropped derivable unit its summary_budget; a summarized message lists lost identifiers', async () => {
    const dry = await client.compactUnits('dry-1', [
        { key: 'task', class: 'protected', text: 'Never push to main.' },
        { key: 'grep', class: 'derivable', tokens: 400, reacquire: 'grep -r retry src/' },
    ], 100, { dry_run: true });
    assert.equal(dry.dry_run, true);
    const dropped = dry.dropped.find(d => d.key === 'grep');
    assert.ok(dropped.summary_budget > 0 && dropped.summary_budget < 100, JSON.stringify(dry));
    assert.equal(dry.decisions[1].summary_budget, dropped.summary_budget);
    assert.deepEqual((await client.listSpills('dry-1')).spills, []);
    const history = [
        { role: 'user', content: 'Where is the limit set?' },
        { role: 'assistant', content: 'It is set in src/billing/invoice.c by RETRY_LIMIT_MAX at line 88.' + ' padding'.repeat(40) },
        { role: 'user', content: 'Thanks.' },
        { role: 'assistant', content: 'Anything else?' },
    ];
    const { result } = await client.compactMessages('sum-1', history, 150,
        { format: 'openai', tokenizer: 'bytes', annotations: [{ index: 1, class: 'derivable', summary: { text: 'The limit is set in the billing code.' } }] });
    const d = result.decisions[1];
    assert.equal(d.decision, 'summarized', JSON.stringify(result.decisions));
    assert.ok(d.lost_identifiers.includes('src/billing/invoice.c'), JSON.stringify(d));
});

// Records each attempt's Idempotency-Key and status.
function attemptLog() {
    const attempts = [];
    const f = async (url, init) => {
        const res = await fetch(url, init);
        attempts.push([init.headers['Idempotency-Key'], res.status]);
        return res;
    };
    return { attempts, fetch: f };
}

test('a compaction refused Overloaded is retried with one Idempotency-Key until it runs, and logged once', async () => {
    const limit = 65536;
    const c3 = await CompactdServer.start(redis, { env: { COMPACTD_MAX_BODY_BYTES: String(limit), COMPACTD_MAX_INFLIGHT_BYTES: String(limit) } });
    const sock = net.connect(c3.port, '127.0.0.1');
    try {
        await new Promise(resolve => sock.once('connect', resolve));
        sock.write(`POST /v1/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${limit - 100}\r\n\r\n{"texts":["`
                   + 'a'.repeat(limit - 1000));
        const deadline = Date.now() + 10000;
        for (;;) {
            const m = /^compactd_inflight_bytes (\d+)/m.exec(await (await fetch(c3.base + '/metrics')).text());
            if (m && Number(m[1]) >= limit - 1000) break;
            if (Date.now() > deadline) throw new Error('the held body never showed in compactd_inflight_bytes');
            await new Promise(r => setTimeout(r, 20));
        }
        const log = attemptLog();
        const cl = new Compactd({ baseUrl: c3.base, fetch: log.fetch, maxRetries: 5, backoffMs: 50 });
        const started = Date.now();
        const pending = cl.compactUnits('ts-retry', [{ key: 'k', class: 'protected', text: 'kept' }], 100);
        while (!log.attempts.some(([, s]) => s === 503)) await new Promise(r => setTimeout(r, 10));
        sock.destroy();  // the held body goes: the cause of the 503 is gone
        const r = await pending;
        assert.ok(Date.now() - started >= 950, 'Retry-After: 1 was honoured');
        assert.equal(r.session, 'ts-retry');
        assert.ok(log.attempts.length >= 2);
        assert.equal(log.attempts.at(-1)[1], 200);
        const keys = new Set(log.attempts.map(([k]) => k));
        assert.equal(keys.size, 1);
        assert.match([...keys][0], /^[0-9a-f-]{36}$/);
        const events = await (await fetch(`${server.base}/v1/sessions/ts-retry/events`)).json();
        assert.ok(Array.isArray(events.events), JSON.stringify(events));
        assert.equal(events.events.filter(e => e.kind === 'compact').length, 1);
    } finally {
        sock.destroy();
        await c3.stop();
    }
});

test("retries: none on a 4xx or when turned off; the caller's key is sent, a new one per call", async () => {
    const log = attemptLog();
    const cl = new Compactd({ baseUrl: server.base, fetch: log.fetch, maxRetries: 3, backoffMs: 10 });
    await assert.rejects(cl.compactUnits('ts-keys', [], -1), expectError(InvalidRequest));
    assert.equal(log.attempts.length, 1);
    await cl.compactUnits('ts-keys', [{ key: 'a', class: 'protected', text: 'a' }], 100, {}, { idempotencyKey: 'mine-1' });
    await cl.compactUnits('ts-keys', [{ key: 'b', class: 'protected', text: 'b' }], 100);
    await cl.compactUnits('ts-keys', [{ key: 'c', class: 'protected', text: 'c' }], 100);
    assert.equal(log.attempts[1][0], 'mine-1');
    assert.notEqual(log.attempts[2][0], log.attempts[3][0]);
    const port = await freePort();
    let calls = 0;
    const off = new Compactd({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0, fetch: (u, i) => { calls++; return fetch(u, i); } });
    await assert.rejects(off.listSpills('s'), expectError(TransportError));
    assert.equal(calls, 1);
    calls = 0;
    const on = new Compactd({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 2, backoffMs: 10, fetch: (u, i) => { calls++; return fetch(u, i); } });
    await assert.rejects(on.listSpills('s'), expectError(TransportError));
    assert.equal(calls, 3);
});

test('an answer that does not come within timeoutMs is Timeout', async () => {
    const silent = net.createServer(() => {});  // accepts, never answers
    await new Promise(resolve => silent.listen(0, '127.0.0.1', resolve));
    try {
        const cl = new Compactd({ baseUrl: `http://127.0.0.1:${silent.address().port}`, timeoutMs: 300, maxRetries: 0 });
        const started = Date.now();
        await assert.rejects(cl.countTokens(['x']), expectError(Timeout, e => assert.equal(e.timeoutMs, 300)));
        // Its own 300 ms ended the wait, not the 60 s default; how much later
        // than 300 ms the rejection comes is the machine's load, not the client's.
        assert.ok(Date.now() - started < 30000);
    } finally {
        silent.closeAllConnections?.();
        silent.close();
    }
});

test('compactMessages (anthropic) moves role "system" messages into system instead of being refused', async () => {
    const history = [{ role: 'system', content: 'You are a coding agent.' }, { role: 'user', content: 'Why does it fail?' },
                     { role: 'system', content: 'Answer in one line.' }, { role: 'assistant', content: 'A missing include.' }];
    const out = await client.compactMessages('ts-anth-sys', history, 4000, { format: 'anthropic', system: 'Be terse.' });
    assert.equal(out.system, 'Be terse.\n\nYou are a coding agent.\n\nAnswer in one line.');
    assert.deepEqual(out.messages.map(m => m.role), ['user', 'assistant']);
    const blocks = await client.compactMessages('ts-anth-sys2', [{ role: 'system', content: [{ type: 'text', text: 'Rules.' }] },
                                                                 { role: 'user', content: 'hi' }], 4000, { format: 'anthropic' });
    assert.deepEqual(blocks.system, [{ type: 'text', text: 'Rules.' }]);
    await assert.rejects(client.compactMessages('ts-anth-sys3', [{ role: 'system', content: 's' }, { role: 'user', content: LOG }], 10,
                                                { format: 'anthropic', tokenizer: 'bytes' }),
        expectError(CompactionFailure, e => { assert.equal(e.index, 1); assert.deepEqual(e.forcing, [{ role: 'user', content: LOG }]); }));
});
