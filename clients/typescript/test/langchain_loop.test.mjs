// The LangChain.js middleware in long createAgent loops: 40 model calls of
// ChatOpenAI and of ChatAnthropic (thinking enabled, a block of 1-4k tokens
// with a signature at each user turn), at budgets of 12,000 and 6,000
// o200k_base tokens, against a real compactd and redis-server and the
// loopback reasoning model (tests/clients/mock_reasoning.mjs), which holds
// the providers' rules and bills each request as the provider does: the
// system prompt, the tool definitions, an image in the first task, the
// thinking of the loop in flight. Every request must be within the budget
// as billed, taken by the model, and keep the facts planted in the first
// task (a constraint and a path stated once, a value a read returned) or
// the way back to them (a pointer whose spill holds them, a marker naming
// the read).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAgent, tool } from 'langchain';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage } from '@langchain/core/messages';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Compactd, parsePointer } from '../dist/index.js';
import { compactdMiddleware } from '../dist/langchain.js';
import { Redis, CompactdServer } from './servers.mjs';
import { AGENT, pngBase64, startReasoningModel } from '../../../tests/clients/mock_reasoning.mjs';

const CALLS = 40;
const { CONSTRAINT, PLANTED, FACT, SYSTEM, callsOf, fileText, userTask } = AGENT;
const IMAGE = pngBase64(640, 480); // the screenshot of the failing run, in the first task
const POINTERS = /\[externalized [^[\]]+ sha256:[0-9a-f]{16}\]/g;
let redis, server, client;

before(async () => {
    redis = await Redis.start();
    server = await CompactdServer.start(redis);
    client = new Compactd({ baseUrl: server.base });
});

after(async () => {
    await server?.stop();
    await redis?.stop();
});

const readFile = tool(({ path }) => fileText(path), {
    name: 'read_file', description: 'Reads a file of the repository and returns its text.',
    schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
});

const MODELS = {
    ChatOpenAI: {
        mock: () => ({ format: 'openai' }),
        model: url => new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test-key', configuration: { baseURL: url + '/v1' }, maxRetries: 0 }),
    },
    ChatAnthropic: {
        mock: budget => ({ format: 'anthropic', style: 'once', signatureBytes: [200, 500],
                           thinkingTokens: budget >= 12000 ? [1000, 4000] : [1000, 3000] }),
        model: url => new ChatAnthropic({ model: 'claude-sonnet-4-5', apiKey: 'test-key', anthropicApiUrl: url, maxRetries: 0,
                                          maxTokens: 16000, thinking: { type: 'enabled', budget_tokens: 8000 } }),
    },
};

/** Every string in v, deeply. */
function strings(v, out = []) {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(x => strings(x, out));
    else if (v && typeof v === 'object') Object.values(v).forEach(x => strings(x, out));
    return out;
}

/** Whether a request's messages hold fact, or the way back to it: a pointer whose spill holds it, or `hint`. */
async function keeps(session, body, fact, hint) {
    const texts = strings([body.system, body.messages]);
    if (texts.some(t => t.includes(fact) || (hint && t.includes(hint)))) return true;
    for (const t of texts)
        for (const [p] of t.matchAll(POINTERS)) {
            const { key, sha256 } = parsePointer(p);
            if ((await client.getSpill(session, key, sha256)).text.includes(fact)) return true;
        }
    return false;
}

for (const [name, setup] of Object.entries(MODELS))
    for (const budget of [12000, 6000])
        test(`createAgent with ${name} and compactdMiddleware at ${budget}: ${CALLS} of ${CALLS} calls within the budget as billed`, async () => {
            const model = await startReasoningModel({ ...setup.mock(budget), count: countTokens, seed: budget + name.length,
                                                      callsOf, planted: PLANTED });
            const session = `lc-loop-${name}-${budget}`;
            try {
                const agent = createAgent({ model: setup.model(model.url), tools: [readFile], systemPrompt: SYSTEM,
                    middleware: [compactdMiddleware({ client, session, budget, request: { tokenizer: 'o200k_base' } })] });
                let task = 1;
                let messages = [new HumanMessage({ content: [{ type: 'text', text: userTask(1) },
                    { type: 'image_url', image_url: { url: `data:image/png;base64,${IMAGE}` } }] })];
                while (model.requests.length < CALLS) {
                    messages = (await agent.invoke({ messages }, { recursionLimit: 50 })).messages;
                    messages.push(new HumanMessage(userTask(++task)));
                }
                assert.ok(task > 10, `only ${task} user turns`);
                const hint = `read_file ${JSON.stringify({ path: PLANTED })}`;
                let factFrom = -1;
                for (const [k, r] of model.requests.entries()) {
                    assert.equal(r.error, null, `call ${k + 1}: the model refused it: ${r.error}`);
                    assert.ok(r.billed <= budget, `call ${k + 1}: billed ${r.billed} over ${budget}`);
                    // What the budget holds besides the messages was sent: the system prompt, the tools.
                    assert.ok(strings(r.body.system ?? r.body.messages[0]).some(t => t.includes(SYSTEM)), `call ${k + 1}: no system prompt`);
                    assert.deepEqual((r.body.tools ?? []).map(t => t.name ?? t.function.name).sort(), ['reacquire', 'read_file']);
                    for (const fact of [CONSTRAINT, PLANTED])
                        assert.ok(await keeps(session, r.body, fact), `call ${k + 1}: ${fact} and its way back are gone`);
                    if (factFrom < 0 && strings(r.body.messages).some(t => t.includes(FACT))) factFrom = k;
                    if (factFrom >= 0)
                        assert.ok(await keeps(session, r.body, FACT, hint), `call ${k + 1}: ${FACT} and its way back are gone`);
                }
                assert.ok(factFrom >= 0, 'the planted file was never read');
                // The image went to the model in the first task, and the thinking of each loop in flight.
                assert.ok(JSON.stringify(model.requests[0].body).includes(IMAGE.slice(0, 64)));
                if (name === 'ChatAnthropic')
                    assert.ok(model.requests.some(r => r.body.messages.some(m => Array.isArray(m.content) && m.content.some(b => b.type === 'thinking'))));
            } finally {
                await model.close();
            }
        });
