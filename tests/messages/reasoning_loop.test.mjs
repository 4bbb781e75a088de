// Agent loops of reasoning models through compactd: 40 model calls each,
// compacted before every call at a budget of 12,000 and of 6,000 o200k_base
// tokens, against a real compactd and redis-server and a loopback model that
// holds the providers' rules for reasoning state (tests/clients/
// mock_reasoning.mjs). Three setups: Responses with store: false and
// encrypted reasoning, Anthropic thinking once per user turn, Anthropic
// interleaved thinking. Every call must go through: compactd answers within
// the budget, the model takes the request (its rules held) and bills no more
// than the budget nor than compactd's price, and the facts planted in the
// first task (a constraint and an exact path stated once, a value a read
// returned) are in every request or can be had back.
//
//   node --test reasoning_loop.test.mjs
// (COMPACTD_BIN: the compactd to run; REASONING_LOOP_REPORT=1 prints the
// calls each loop reached instead of failing, for comparing builds;
// REASONING_LOOP_TRACE=1 prints each call's price and decisions.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Redis, Compactd } from '../servers.mjs';
import { fileText as readFileText, pathOf, startReasoningModel, userTask as taskText } from '../clients/mock_reasoning.mjs';

const CALLS = 40;
const BUDGETS = [12000, 6000];
const CONSTRAINT = 'Never run git push --force, on any branch.';
const PLANTED = 'src/net/retry_policy.c';
const FACT = 'RETRY_LIMIT=17';
const SYSTEM = 'You are a coding agent working in a C repository. Use read_file to read files.';
const REPORT = process.env.REASONING_LOOP_REPORT === '1';
const count = text => countTokens(text);
// Reads per task: 1 or 2, so that a turn's own reasoning, which must go
// back whole, fits the budget the loop runs at.
const callsOf = n => [2, 1, 2, 2, 1][n % 5];

// The setups, with reasoning of realistic size scaled so that the turn in
// flight (whose reasoning the provider needs back verbatim) fits the budget.
const SETUPS = {
    'openai-responses store:false': budget => ({
        format: 'openai-responses',
        sealedBytes: budget >= 12000 ? [1800, 2600] : [1500, 2000], // encrypted_content of 2.0-3.5 KB
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

const fileText = path => readFileText(path, PLANTED, FACT);
const userTask = n => taskText(n, PLANTED, CONSTRAINT);

/** Every string in v, deeply. */
function strings(v, out = []) {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(x => strings(x, out));
    else if (v && typeof v === 'object') Object.values(v).forEach(x => strings(x, out));
    return out;
}

async function runLoop(compactd, name, budget) {
    const setup = SETUPS[name](budget);
    const anthropic = setup.format === 'anthropic';
    const model = await startReasoningModel({ ...setup, count, seed: budget + name.length, callsOf, planted: PLANTED });
    const session = `loop-${name.replace(/[^a-z]+/g, '-')}-${budget}`;
    const history = [];
    const user = text => history.push({ role: 'user', content: text });
    let task = 1, reached = 0, failure = null, factAt = -1, maxUsed = 0, maxBilled = 0, reasoningSent = 0;
    user(userTask(task));
    try {
        for (let call = 1; call <= CALLS; call++) {
            const r = await compactd.post(`/v1/sessions/${session}/messages/compact`, {
                format: setup.format, budget, tokenizer: 'o200k_base',
                policy: { read_only_tools: ['read_file'] }, messages: history,
                ...(anthropic ? { system: SYSTEM } : { instructions: SYSTEM }) });
            if (r.status !== 200) {
                failure = `call ${call}: compactd answered ${r.status}: ${r.json?.error?.message ?? r.text}`;
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
            for (const [fact, at] of [[CONSTRAINT, 0], [PLANTED, 0], [FACT, factAt]]) {
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
            const req = anthropic
                ? { model: 'claude-sonnet-4-5', max_tokens: 16000, thinking: { type: 'enabled', budget_tokens: 8000 },
                    system: a.system, messages: a.messages }
                : { model: 'gpt-5', store: false, include: ['reasoning.encrypted_content'],
                    reasoning: { effort: 'medium' }, instructions: a.instructions, input: a.messages };
            const res = await fetch(model.url + (anthropic ? '/v1/messages' : '/v1/responses'),
                { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(req) });
            const out = await res.json();
            if (res.status !== 200) {
                failure = `call ${call}: the model refused the request: ${out.error.message}`;
                break;
            }
            const billed = out.usage.input_tokens;
            maxUsed = Math.max(maxUsed, a.used_tokens);
            maxBilled = Math.max(maxBilled, billed);
            reasoningSent += a.messages.filter(m => m.type === 'reasoning' ||
                (Array.isArray(m.content) && m.content.some(b => b.type === 'thinking'))).length;
            assert.ok(billed <= budget, `call ${call}: billed ${billed} over ${budget}`);
            assert.ok(billed <= a.used_tokens, `call ${call}: billed ${billed} over compactd's price ${a.used_tokens}`);
            reached = call;
            // The caller keeps the full history and runs the tools.
            if (anthropic) {
                history.push({ role: 'assistant', content: out.content });
                const uses = out.content.filter(b => b.type === 'tool_use');
                if (uses.length > 0) {
                    history.push({ role: 'user', content: uses.map(u => ({ type: 'tool_result', tool_use_id: u.id, content: fileText(u.input.path) })) });
                    if (uses.some(u => u.input.path === PLANTED) && factAt < 0) factAt = history.length - 1;
                } else user(userTask(++task));
            } else {
                history.push(...out.output);
                const calls = out.output.filter(i => i.type === 'function_call');
                for (const c of calls) {
                    const path = JSON.parse(c.arguments).path;
                    history.push({ type: 'function_call_output', call_id: c.call_id, output: fileText(path) });
                    if (path === PLANTED && factAt < 0) factAt = history.length - 1;
                }
                if (calls.length === 0) user(userTask(++task));
            }
        }
    } finally {
        await model.close();
    }
    return { reached, failure, tasks: task, maxUsed, maxBilled, reasoningSent };
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

for (const name of Object.keys(SETUPS))
    for (const budget of BUDGETS)
        test(`${name} at ${budget}: ${CALLS} of ${CALLS} calls`, async () => {
            let r;
            try {
                r = await runLoop(compactd, name, budget);
            } catch (e) {
                if (!REPORT) throw e;
                r = { reached: 'n/a', failure: e.message };
            }
            if (REPORT) {
                console.log(`REACHED ${name} @ ${budget}: ${r.reached} of ${CALLS}, ${r.tasks} user turns, ` +
                            `max used ${r.maxUsed}, max billed ${r.maxBilled}, reasoning sent back ${r.reasoningSent} times` +
                            (r.failure ? ' (' + r.failure + ')' : ''));
                return;
            }
            assert.equal(r.failure, null, r.failure ?? '');
            assert.equal(r.reached, CALLS);
            assert.ok(r.tasks > 10, `only ${r.tasks} user turns`);
        });

// The path a task reads is the planted one only where the loop starts.
test('the agent reads the planted file first', () => {
    assert.equal(pathOf(1, 0, PLANTED), PLANTED);
    assert.notEqual(pathOf(2, 0, PLANTED), PLANTED);
});
