// Small histories and model answers in each provider's format, for the
// focused proxy suites: a constraint, two runs of a tool with side effects
// whose long outputs must be kept (verbatim or spilled), and a question.
import { strings } from './harness.mjs';

export const FORMATS = ['openai', 'openai-responses', 'anthropic'];
export const CONSTRAINT = 'Never push to main; open a pull request.';

/** About `lines` lines of a test run's output, distinct per run. */
export function runOutput(run, lines = 60) {
    const out = [];
    for (let i = 0; i < lines; i++) out.push(`run ${run} line ${i}: test_case_${i} ${i % 7 === 3 ? 'FAILED at src/parse.c:' + (40 + i) : 'passed'} in 0.0${i % 10}s`);
    return out.join('\n');
}

export const runTests = {
    openai: { type: 'function', function: { name: 'run_tests', description: 'Runs the tests',
        parameters: { type: 'object', properties: {} } } },
    'openai-responses': { type: 'function', name: 'run_tests', description: 'Runs the tests', strict: false,
        parameters: { type: 'object', properties: {} } },
    anthropic: { name: 'run_tests', description: 'Runs the tests', input_schema: { type: 'object', properties: {} } },
};

/** The request body (less model and stream) of a history with two long runs. */
export function history(format, lines = 60) {
    const question = 'Which tests failed in the first run?';
    if (format === 'openai') return { messages: [
        { role: 'user', content: CONSTRAINT },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'run_tests', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_a', content: runOutput(1, lines) },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_b', type: 'function', function: { name: 'run_tests', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_b', content: runOutput(2, lines) },
        { role: 'user', content: question }], tools: [runTests.openai] };
    if (format === 'anthropic') return { max_tokens: 1024, messages: [
        { role: 'user', content: CONSTRAINT },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_a', name: 'run_tests', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: runOutput(1, lines) }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_b', name: 'run_tests', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_b', content: runOutput(2, lines) },
                                  { type: 'text', text: question }] }], tools: [runTests.anthropic] };
    return { input: [
        { role: 'user', content: CONSTRAINT },
        { type: 'function_call', id: 'fc_a', call_id: 'call_a', name: 'run_tests', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_a', output: runOutput(1, lines) },
        { type: 'function_call', id: 'fc_b', call_id: 'call_b', name: 'run_tests', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_b', output: runOutput(2, lines) },
        { role: 'user', content: question }], tools: [runTests['openai-responses']] };
}

/** A model's answer in format: calls [{name, args}] after an optional text. */
export function answer(format, n, { text = null, calls = [] }) {
    if (format === 'openai') {
        const message = { role: 'assistant', content: text, refusal: null };
        if (calls.length) message.tool_calls = calls.map((c, k) => ({ id: `call_${n}_${k}`, type: 'function',
            function: { name: c.name, arguments: JSON.stringify(c.args) } }));
        return { id: `chatcmpl-${n}`, object: 'chat.completion', created: 1700000000, model: 'gpt-4o',
                 choices: [{ index: 0, message, logprobs: null, finish_reason: calls.length ? 'tool_calls' : 'stop' }],
                 usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
    }
    if (format === 'anthropic') {
        const content = [];
        if (text !== null) content.push({ type: 'text', text });
        calls.forEach((c, k) => content.push({ type: 'tool_use', id: `toolu_${n}_${k}`, name: c.name, input: c.args }));
        return { id: `msg_${n}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', content,
                 stop_reason: calls.length ? 'tool_use' : 'end_turn', stop_sequence: null,
                 usage: { input_tokens: 1, output_tokens: 1 } };
    }
    const output = [];
    if (text !== null) output.push({ id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant',
                                     content: [{ type: 'output_text', text, annotations: [] }] });
    calls.forEach((c, k) => output.push({ id: `fc_${n}_${k}`, type: 'function_call', status: 'completed',
                                          call_id: `call_${n}_${k}`, name: c.name, arguments: JSON.stringify(c.args) }));
    return { id: `resp_${n}`, object: 'response', created_at: 1700000000, status: 'completed', model: 'gpt-5',
             output, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } };
}

/** The results of the reacquire calls in a request's history: [text]. */
export function reacquireResults(format, body) {
    const msgs = body.messages ?? body.input;
    const ids = new Set();
    const out = [];
    for (const m of msgs) {
        for (const c of m.tool_calls ?? []) if (c.function.name === 'reacquire') ids.add(c.id);
        if (Array.isArray(m.content)) for (const b of m.content) if (b.type === 'tool_use' && b.name === 'reacquire') ids.add(b.id);
        if (m.type === 'function_call' && m.name === 'reacquire') ids.add(m.call_id);
        if (m.role === 'tool' && ids.has(m.tool_call_id)) out.push(m.content);
        if (m.type === 'function_call_output' && ids.has(m.call_id)) out.push(m.output);
        if (Array.isArray(m.content)) for (const b of m.content) if (b.type === 'tool_result' && ids.has(b.tool_use_id)) out.push(b.content);
    }
    return out;
}

/** The first pointer a request's history holds. */
export function firstPointer(body) {
    return strings(body.messages ?? body.input).map(s => /\[externalized [^[\]]+ sha256:[0-9a-f]{16}\]/.exec(s)?.[0]).find(Boolean);
}

/** The calls of an answer as a client reads it: [name]. */
export function callNames(format, out) {
    if (format === 'openai') return (out.choices[0].message.tool_calls ?? []).map(c => c.function.name);
    if (format === 'anthropic') return out.content.filter(b => b.type === 'tool_use').map(b => b.name);
    return out.output.filter(i => i.type === 'function_call').map(i => i.name);
}

/** One call through the SDK client, whole or streamed: the answer (put back together when streamed). */
export async function send(client, format, body, stream) {
    if (format === 'openai') {
        if (!stream) return client.chat.completions.create({ model: 'gpt-4o', ...body });
        const s = await client.chat.completions.create({ model: 'gpt-4o', ...body, stream: true });
        const message = { role: 'assistant', content: null };
        const calls = [];
        for await (const chunk of s) {
            const d = chunk.choices[0].delta;
            if (d.content) message.content = (message.content ?? '') + d.content;
            for (const c of d.tool_calls ?? []) {
                const have = calls[c.index] ??= { id: c.id, type: 'function', function: { name: '', arguments: '' } };
                have.function.name += c.function?.name ?? '';
                have.function.arguments += c.function?.arguments ?? '';
            }
        }
        if (calls.length) message.tool_calls = calls;
        return { choices: [{ message }] };
    }
    if (format === 'anthropic') {
        const params = { model: 'claude-sonnet-4-6', ...body };
        return stream ? client.messages.stream(params).finalMessage() : client.messages.create(params);
    }
    if (!stream) return client.responses.create({ model: 'gpt-5', ...body });
    let done = null;
    const seen = [];
    for await (const e of await client.responses.create({ model: 'gpt-5', ...body, stream: true })) {
        seen.push(e);
        if (e.type === 'response.completed') done = e.response;
    }
    // The events' own view of the calls must agree with the final response.
    const added = seen.filter(e => e.type === 'response.output_item.added').map(e => [e.output_index, e.item.name ?? e.item.type]);
    return { ...done, events: added };
}
