// The LangChain.js v1 middleware inside a real createAgent loop: ChatOpenAI
// talks to the loopback mock provider (which refuses any history that breaks
// OpenAI's tool-call pairing), compactd compacts before every model call.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAgent } from 'langchain';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Compactd, REACQUIRE_TOOL_NAME } from '../dist/index.js';
import { compactdMiddleware, compactdTrimMessages } from '../dist/langchain.js';
import { Redis, CompactdServer, recordingFetch, writeExchanges } from './servers.mjs';
import { startMockProvider } from '../../../tests/clients/mock_provider.mjs';

let redis, server, mock, client;
const LOG = 'src/billing/invoice.c:88:5: error: \'retry_limit\' undeclared — é ✓\r\n'.repeat(60);

before(async () => {
    redis = await Redis.start();
    server = await CompactdServer.start(redis);
    mock = await startMockProvider();
    client = new Compactd({ baseUrl: server.base, fetch: recordingFetch });
});

after(async () => {
    writeExchanges();
    await mock?.close();
    await server?.stop();
    await redis?.stop();
});

const readFile = tool(async () => LOG, {
    name: 'read_file',
    description: 'Reads a file of the workspace.',
    schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
});

test('createAgent with compactdMiddleware: compacted calls, the reacquire tool, the full history kept', async () => {
    const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test-key', configuration: { baseURL: mock.url + '/v1' }, maxRetries: 0 });
    const agent = createAgent({ model, tools: [readFile],
        middleware: [compactdMiddleware({ client, session: 'lc-agent', budget: 4000, request: { tokenizer: 'bytes' } })] });
    const before = mock.requests.length;
    const state = await agent.invoke({ messages: [new HumanMessage('Why does the build fail? Read build.log.')] });
    const calls = mock.requests.slice(before);
    assert.deepEqual(calls.map(c => c.error), calls.map(() => null), 'the mock refused a history');
    // read_file, then reacquire of the pointer compactd put in its place, then the answer.
    assert.equal(calls.length, 3, JSON.stringify(calls.map(c => c.body.messages)));
    for (const c of calls) assert.ok(c.body.tools.some(t => t.function.name === REACQUIRE_TOOL_NAME));
    // What the model saw after read_file is compacted: the log is a pointer, not its bytes.
    const second = JSON.stringify(calls[1].body.messages);
    assert.ok(!second.includes('retry_limit'), second.slice(0, 500));
    assert.match(second, /\[externalized call_1\.result sha256:[0-9a-f]{16}\]/);
    // The agent's state keeps the whole history, the reacquired spill byte for byte (the tool message's JSON).
    const msgs = state.messages;
    const readResult = msgs.find(m => ToolMessage.isInstance(m) && m.name === 'read_file');
    assert.equal(readResult.content, LOG);
    const reacquired = msgs.find(m => ToolMessage.isInstance(m) && m.name === REACQUIRE_TOOL_NAME);
    assert.ok(reacquired, 'no reacquire result in the state');
    const spilled = JSON.parse(reacquired.content);
    // The tool message as ChatOpenAI sends it (its name too).
    assert.deepEqual(spilled, { role: 'tool', tool_call_id: readResult.tool_call_id, content: LOG, name: 'read_file' });
    assert.equal(msgs.at(-1).content, 'done; called reacquire, read_file');
});

test('compactdTrimMessages: a Runnable and a direct call, preserved messages are the caller\'s own objects', async () => {
    const human = new HumanMessage('Fix the build.');
    const messages = [
        new SystemMessage('You are a coding agent.'),
        human,
        new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'read_file', args: { path: 'a.c' }, type: 'tool_call' }] }),
        new ToolMessage({ content: LOG, tool_call_id: 'c1' }),
        new AIMessage('The return value is wrong.'),
        new HumanMessage('Go on.'),
    ];
    const options = { client, session: 'lc-trim', budget: 300,
        request: { policy: { read_only_tools: ['read_file'] } } };
    const direct = await compactdTrimMessages(messages, options);
    const piped = await compactdTrimMessages(options).invoke(messages);
    assert.deepEqual(piped.map(m => [m.type, m.content]), direct.map(m => [m.type, m.content]));
    assert.equal(direct[1], human, 'a preserved message is the same object');
    // The dropped exchange became one loss marker naming the call that re-acquires it.
    assert.deepEqual(direct.map(m => m.type), ['system', 'human', 'system', 'ai', 'human']);
    assert.match(direct[2].content, /^\[compactd: messages 2-3 were dropped.*read_file/);
});
