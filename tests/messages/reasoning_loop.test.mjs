// Agent loops through compactd: 40 model calls each, compacted before every
// call at a budget of 12,000 and of 6,000 o200k_base tokens, against a real
// compactd and redis-server and a loopback model that holds the providers'
// rules (tests/clients/mock_reasoning.mjs). Five setups: OpenAI Chat
// Completions, Responses with store: false and encrypted reasoning,
// Responses with reasoning the provider stored (its tokens, from each
// response's usage, given as annotations), Anthropic thinking once per user
// turn, Anthropic interleaved thinking (the LangChain setups are in
// clients/typescript/test/langchain_loop.test.mjs). Every call must go
// through: compactd answers within the budget, the model takes the request
// (its rules held) and bills no more than the budget nor than compactd's
// price (the system prompt and the tool definitions included), and the
// facts planted in the first task (a constraint and an exact path stated
// once, a value a read returned) are in every request or can be had back.
// Each loop runs as a new user would, no tool declared read-only; at
// tighter budgets, where 422s come, each must carry its breakdown by kind,
// and the loop run again as that breakdown's advice says (the policies it
// names, or the least budget) must finish.
//
//   node --test reasoning_loop.test.mjs
// (COMPACTD_BIN: the compactd to run; REASONING_LOOP_REPORT=1 prints the
// calls each loop reached instead of failing, for comparing builds;
// REASONING_LOOP_TRACE=1 prints each call's price and decisions.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Redis, Compactd } from '../servers.mjs';
import { AGENT, startReasoningModel, pathOf } from '../clients/mock_reasoning.mjs';

const CALLS = 40;
const BUDGETS = [12000, 6000];
const { CONSTRAINT, PLANTED, FACT, SYSTEM, callsOf, fileText, userTask } = AGENT;
const REPORT = process.env.REASONING_LOOP_REPORT === '1';
const count = text => countTokens(text);

const READ_FILE = { name: 'read_file', description: 'Reads a file of the repository and returns its text.',
                    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };
const TOOLS = {
    openai: [{ type: 'function', function: READ_FILE }],
    'openai-responses': [{ type: 'function', name: READ_FILE.name, description: READ_FILE.description,
                           parameters: READ_FILE.parameters, strict: false }],
    anthropic: [{ name: READ_FILE.name, description: READ_FILE.description, input_schema: READ_FILE.parameters }],
};

// The setups, with reasoning of realistic size scaled so that the turn in
// flight (whose reasoning the provider needs back verbatim) fits the budget.
const SETUPS = {
    'openai chat completions': () => ({ format: 'openai' }),
    'openai-responses store:false': budget => ({
        format: 'openai-responses',
        sealedBytes: budget >= 12000 ? [1800, 2600] : [1500, 2000], // encrypted_content of 2.0-3.5 KB
    }),
    'openai-responses stored': budget => ({
        format: 'openai-responses', store: true,
        sealedBytes: budget >= 12000 ? [1800, 2600] : [1500, 2000], // 375-650 reasoning tokens a response
    }),
    'anthropic thinking once per turn': budget => ({
        format: 'anthropic', style: 'once',
        thinkingTokens: budget >= 12000 ? [1000, 4000] : [1000, 3000], signatureBytes: [200, 500],
    }),
    'anthropic interleaved thinking': budget => ({
        format: 'anthropic', style: 'interleaved',
        thinkingTokens: budget >= 12000 ? [1000, 3000] : [1000, 1500], signatureBytes: [200, 500],
    }),
};

/** Every string in v, deeply. */
function strings(v, out = []) {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(x => strings(x, out));
    else if (v && typeof v === 'object') Object.values(v).forEach(x => strings(x, out));
    return out;
}

/** The request the model is sent for compactd's answer a. */
function modelRequest(setup, a) {
    const tools = TOOLS[setup.format];
    if (setup.format === 'anthropic')
        return { model: 'claude-sonnet-4-5', max_tokens: 16000, thinking: { type: 'enabled', budget_tokens: 8000 },
                 system: a.system, messages: a.messages, tools };
    if (setup.format === 'openai') return { model: 'gpt-4o', messages: a.messages, tools };
    return setup.store
        ? { model: 'gpt-5', reasoning: { effort: 'medium' }, instructions: a.instructions, input: a.messages, tools }
        : { model: 'gpt-5', store: false, include: ['reasoning.encrypted_content'], reasoning: { effort: 'medium' },
            instructions: a.instructions, input: a.messages, tools };
}

/** The caller keeps the full history and runs the tools: what a reply adds, and whether it ended the task. */
function takeReply(format, out, history, fact) {
    if (format === 'anthropic') {
        history.push({ role: 'assistant', content: out.content });
        const uses = out.content.filter(b => b.type === 'tool_use');
        if (uses.length > 0) {
            history.push({ role: 'user', content: uses.map(u => ({ type: 'tool_result', tool_use_id: u.id, content: fileText(u.input.path) })) });
            if (uses.some(u => u.input.path === PLANTED)) fact(history.length - 1);
        }
        return uses.length === 0;
    }
    if (format === 'openai') {
        const message = out.choices[0].message;
        history.push(message);
        for (const c of message.tool_calls ?? []) {
            const path = JSON.parse(c.function.arguments).path;
            history.push({ role: 'tool', tool_call_id: c.id, content: fileText(path) });
            if (path === PLANTED) fact(history.length - 1);
        }
        return !message.tool_calls?.length;
    }
    history.push(...out.output);
    const calls = out.output.filter(i => i.type === 'function_call');
    for (const c of calls) {
        const path = JSON.parse(c.arguments).path;
        history.push({ type: 'function_call_output', call_id: c.call_id, output: fileText(path) });
        if (path === PLANTED) fact(history.length - 1);
    }
    return calls.length === 0;
}

/**
 * One loop of CALLS model calls. policy: the compaction's policy. Answers
 * {reached, failure, refusal (the 422's error, if one stopped it), tasks, ...}.
 */
async function runLoop(compactd, name, budget, policy, sizes = budget) {
    const setup = SETUPS[name](sizes);
    const anthropic = setup.format === 'anthropic';
    const model = await startReasoningModel({ ...setup, count, seed: budget + name.length, callsOf, planted: PLANTED });
    const session = `loop-${name.replace(/[^a-z]+/g, '-')}-${budget}-${Object.keys(policy).length}`;
    // The Chat Completions history carries its system prompt as a message.
    const history = setup.format === 'openai' ? [{ role: 'system', content: SYSTEM }] : [];
    const taskAt = history.length;
    const reasoningTokens = new Map(); // stored reasoning: its tokens, from the response's usage
    const user = text => history.push({ role: 'user', content: text });
    let task = 1, reached = 0, failure = null, refusal = null, factAt = -1, maxUsed = 0, maxBilled = 0;
    user(userTask(task));
    try {
        for (let call = 1; call <= CALLS; call++) {
            const annotations = setup.store
                ? history.flatMap((m, i) => m.type === 'reasoning' ? [{ index: i, tokens: reasoningTokens.get(m.id) }] : [])
                : undefined;
            const r = await compactd.post(`/v1/sessions/${session}/messages/compact`, {
                format: setup.format, budget, tokenizer: 'o200k_base', policy, messages: history,
                tools: TOOLS[setup.format], ...(annotations?.length ? { annotations } : {}),
                ...(anthropic ? { system: SYSTEM } : setup.format === 'openai' ? {} : { instructions: SYSTEM }) });
            if (r.status !== 200) {
                failure = `call ${call}: compactd answered ${r.status}: ${r.json?.error?.message ?? r.text}`;
                if (r.status === 422) refusal = r.json.error;
                break;
            }
            const a = r.json;
            if (process.env.REASONING_LOOP_TRACE === '1')
                console.log(`TRACE ${name} @ ${budget} call ${call}: used ${a.used_tokens} required ${a.required_budget} ` +
                            a.decisions.map(d => d.decision[0] + (d.reason === 'redundant' ? 'r' : '')).join(''));
            assert.ok(a.used_tokens <= budget, `call ${call}: used_tokens ${a.used_tokens} over ${budget}`);
            // The planted facts: in the request, or to be had back from the
            // message that held them (its spill, or the read its marker names).
            const texts = strings(a.messages).concat(strings(anthropic ? a.system : a.instructions));
            for (const [fact, at] of [[CONSTRAINT, taskAt], [PLANTED, taskAt], [FACT, factAt]]) {
                if (at < 0) continue;
                const d = a.decisions[at];
                if (d.decision === 'externalized') {
                    const spill = await compactd.get(d.href);
                    assert.ok(spill.json.text.includes(fact), `call ${call}: the spill of ${at} lost ${fact}`);
                } else if (d.decision === 'dropped') {
                    const hint = `read_file ${JSON.stringify({ path: PLANTED })}`;
                    assert.ok(d.reacquire?.includes(hint) && texts.some(t => t.includes(hint)),
                              `call ${call}: ${fact} dropped without its way back`);
                } else {
                    assert.ok(texts.some(t => t.includes(fact)), `call ${call}: ${fact} is gone`);
                }
            }
            const res = await fetch(model.url + (anthropic ? '/v1/messages' : setup.format === 'openai' ? '/v1/chat/completions' : '/v1/responses'),
                { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(modelRequest(setup, a)) });
            const out = await res.json();
            if (res.status !== 200) {
                failure = `call ${call}: the model refused the request: ${out.error.message}`;
                break;
            }
            const billed = out.usage.input_tokens;
            maxUsed = Math.max(maxUsed, a.used_tokens);
            maxBilled = Math.max(maxBilled, billed);
            assert.ok(billed <= budget, `call ${call}: billed ${billed} over ${budget}`);
            assert.ok(billed <= a.used_tokens, `call ${call}: billed ${billed} over compactd's price ${a.used_tokens}`);
            reached = call;
            for (const item of out.output ?? [])
                if (item.type === 'reasoning') reasoningTokens.set(item.id, out.usage.output_tokens_details.reasoning_tokens);
            if (takeReply(setup.format, out, history, at => { if (factAt < 0) factAt = at; })) user(userTask(++task));
        }
    } finally {
        await model.close();
    }
    return { reached, failure, refusal, tasks: task, maxUsed, maxBilled };
}

/**
 * What a 422's advice says to do, done: the policies any kind's advice
 * names, added; where the largest kind's advice is to raise the budget,
 * the least budget the 422 gives.
 */
function followAdvice(refusal, { policy, budget }) {
    const next = { ...policy };
    const kinds = refusal.required_by.kinds;
    for (const k of kinds) {
        if (k.advice.includes('policy.read_only_tools')) next.read_only_tools = ['read_file'];
        if (k.advice.includes('policy.assistant_text')) next.assistant_text = 'derivable';
    }
    const raise = kinds[0].advice.includes('raise the budget');
    return { policy: next, budget: raise ? Math.max(budget, refusal.required_budget) : budget };
}

/**
 * A loop as a new user runs it (no policy), then run again with what each
 * 422's advice says, until it finishes: each 422 must carry its breakdown,
 * adding up, its message naming the largest kind, and advice that changes
 * something. Answers the last run and the 422s met.
 */
async function untilFinished(compactd, name, budget) {
    let at = { policy: {}, budget }, r;
    const met = [];
    for (let round = 0; round < 8; round++) {
        r = await runLoop(compactd, name, at.budget, at.policy, budget);
        if (!r.refusal) break;
        const kinds = r.refusal.required_by?.kinds ?? [];
        assert.ok(kinds.length > 0, `${r.failure}: no breakdown by kind`);
        assert.equal(kinds.reduce((n, k) => n + k.tokens, 0), r.refusal.required_budget, 'the kinds add up');
        assert.ok(r.refusal.message.includes(`of it is ${kinds[0].kind}`), r.refusal.message);
        const next = followAdvice(r.refusal, at);
        assert.notDeepEqual(next, at, `${r.failure}: advice with nothing to follow: ` + kinds.map(k => k.advice).join(' / '));
        met.push({ at, refusal: r.refusal });
        at = next;
    }
    return { r, met, at };
}

let redis, compactd;
before(async () => {
    redis = await Redis.start();
    compactd = await Compactd.start(redis);
});
after(async () => {
    await compactd?.stop();
    await redis?.stop();
});

function report(name, budget, r, at) {
    console.log(`REACHED ${name} @ ${budget}: ${r.reached} of ${CALLS}, ${r.tasks} user turns, max used ${r.maxUsed}, ` +
                `max billed ${r.maxBilled}, ${JSON.stringify(at)}` + (r.failure ? ' (' + r.failure + ')' : ''));
}

for (const name of Object.keys(SETUPS))
    for (const budget of BUDGETS)
        test(`${name} at ${budget}: ${CALLS} of ${CALLS} calls, as a new user runs it`, async () => {
            let out;
            try {
                out = await untilFinished(compactd, name, budget);
            } catch (e) {
                if (!REPORT) throw e;
                out = { r: { reached: 'n/a', failure: e.message }, at: {} };
            }
            if (REPORT) return report(name, budget, out.r, out.at);
            assert.equal(out.r.failure, null, out.r.failure ?? '');
            assert.equal(out.r.reached, CALLS);
            assert.ok(out.r.tasks > 10, `only ${out.r.tasks} user turns`);
            // At these budgets the loops need no advice: none was taken.
            assert.deepEqual(out.met.map(m => m.refusal.message), []);
        });

// Tighter budgets, where a new user's loop meets 422s: a Chat Completions
// loop whose pointers and calls outgrow 1,500 (the advice: declare the
// read-only tool, let assistant text go), and reasoning loops at 3,000
// whose turn in flight alone passes it (the advice: the least budget).
const TIGHT = [['openai chat completions', 1500, 'policy'], ['anthropic thinking once per turn', 3000, 'budget'],
               ['openai-responses store:false', 3000, 'budget']];
for (const [name, budget, what] of TIGHT)
    test(`${name} at ${budget}: its 422s carry their breakdown, and following their advice (${what}) the loop finishes`, async () => {
        const { r, met, at } = await untilFinished(compactd, name, budget);
        if (REPORT) return report(name, budget, r, at);
        assert.ok(met.length > 0, 'no 422 met: the advice went untested');
        assert.equal(r.failure, null, r.failure ?? '');
        assert.equal(r.reached, CALLS);
        if (what === 'policy') assert.deepEqual(at, { policy: { read_only_tools: ['read_file'], assistant_text: 'derivable' }, budget });
        else assert.ok(at.budget > budget, JSON.stringify(at));
    });

// The path a task reads is the planted one only where the loop starts.
test('the agent reads the planted file first', () => {
    assert.equal(pathOf(1, 0, PLANTED), PLANTED);
    assert.notEqual(pathOf(2, 0, PLANTED), PLANTED);
});
