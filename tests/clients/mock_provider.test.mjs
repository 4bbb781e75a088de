// The mock provider's rules refuse what the real providers refuse, so a test
// that passes through it could have failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkAnthropic, checkOpenAI, checkResponses } from './mock_provider.mjs';

const call = (id, name = 'f') => ({ id, type: 'function', function: { name, arguments: '{}' } });

test('OpenAI: a tool message must answer a pending call, and every call is answered before the next message', () => {
    assert.doesNotThrow(() => checkOpenAI({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: null, tool_calls: [call('1'), call('2')] },
        { role: 'tool', tool_call_id: '2', content: 'x' }, { role: 'tool', tool_call_id: '1', content: 'y' },
        { role: 'system', content: 'marker' }, { role: 'user', content: 'b' }] }));
    assert.throws(() => checkOpenAI({ messages: [{ role: 'user', content: 'a' }, { role: 'tool', tool_call_id: '1', content: 'x' }] }), /answers no pending/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null, tool_calls: [call('1')] }, { role: 'user', content: 'a' }] }), /must be answered first/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null, tool_calls: [call('1')] }] }), /never answered/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null }] }), /content is required/);
    // Images in a user message only.
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
    assert.doesNotThrow(() => checkOpenAI({ messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, image] }] }));
    assert.throws(() => checkOpenAI({ messages: [{ role: 'system', content: [image] }] }), /must be a text part/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }), /image_url is required/);
    // A reply pushed back as it came: annotations, its audio by id, custom tool calls.
    assert.doesNotThrow(() => checkOpenAI({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: null, refusal: null, annotations: [{ type: 'url_citation' }], audio: { id: 'audio_1' } },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'custom', custom: { name: 'patch', input: 'raw' } }] },
        { role: 'tool', tool_call_id: 'c', content: 'ok' }] }));
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: 'x', reasoning_content: 'y' }] }), /unknown field reasoning_content/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'user', content: 'x', annotations: [] }] }), /unknown field annotations/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null, audio: { id: 'a', data: 'UklG' } }] }), /audio must be/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null,
        tool_calls: [{ id: 'c', type: 'custom', function: { name: 'f', arguments: '{}' } }] }] }), /malformed/);
});

test('Anthropic: turns alternate from user, tool_use is answered in the next turn, first', () => {
    const use = { type: 'tool_use', id: 't1', name: 'f', input: {} };
    const result = { type: 'tool_result', tool_use_id: 't1', content: 'x' };
    assert.doesNotThrow(() => checkAnthropic({ system: 's', messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'text', text: 'r' }, use] }, { role: 'user', content: [result, { type: 'text', text: 'n' }] }] }));
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] }), /alternate/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'assistant', content: 'a' }] }), /alternate/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [use] }, { role: 'user', content: 'b' }] }), /no tool_result/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [use] }, { role: 'user', content: [{ type: 'text', text: 'n' }, result] }] }), /must come first/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: [result] }] }), /answers no tool_use/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'made_up', text: 'x' }] }, { role: 'user', content: 'b' }] }), /unknown block/);
    // Thinking goes back signed, in the assistant turn, before the tool use it led to.
    const thinking = { type: 'thinking', thinking: 'x', signature: 'sig' };
    assert.doesNotThrow(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: [thinking, { type: 'redacted_thinking', data: 'ZW5j' }, use] }, { role: 'user', content: [result] }] }));
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 'x' }] }, { role: 'user', content: 'b' }] }), /signature/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: [thinking, { type: 'text', text: 'a' }] }] }), /thinking in a user turn/);
    // A server tool's call and its result come back in the assistant turn that made them.
    const search = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } };
    const found = { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] };
    const cited = { type: 'text', text: 'r', citations: [{ type: 'web_search_result_location', url: 'u' }] };
    assert.doesNotThrow(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: [search, found, cited] }, { role: 'user', content: 'b' }] }));
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: [search, cited] }, { role: 'user', content: 'b' }] }), /without its result/);
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: [found, cited] }, { role: 'user', content: 'b' }] }), /answers no server_tool_use/);
});

test('Responses: every call answered by its call_id, reasoning followed by its items and sent with its calls', () => {
    const user = { role: 'user', content: 'a' };
    const rs = { id: 'rs_1', type: 'reasoning', summary: [] };
    const fc = { id: 'fc_1', type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', status: 'completed' };
    const out = { type: 'function_call_output', call_id: 'c1', output: 'x' };
    const said = { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'r', annotations: [] }] };
    const issued = new Map([['fc_1', 'rs_1']]);
    const marker = { type: 'message', role: 'developer', content: '[compactd: ...]' };
    const tool = { type: 'function', name: 'f', parameters: { type: 'object' }, strict: true };
    assert.doesNotThrow(() => checkResponses({ instructions: 's', tools: [tool], input: [user, rs, fc, out, marker, said, user] }, issued));
    assert.doesNotThrow(() => checkResponses({ input: [user, rs, said, user] }));
    assert.throws(() => checkResponses({ input: [user, fc] }), /No tool output found for function_call c1/);
    assert.throws(() => checkResponses({ input: [user, out] }), /No tool call found for function_call_output with call_id c1/);
    assert.throws(() => checkResponses({ input: [user, fc, out, out] }), /No tool call found/);
    assert.throws(() => checkResponses({ input: [user, fc, out, { ...fc, id: 'fc_2' }, out] }), /duplicate call_id c1/);
    assert.throws(() => checkResponses({ input: [user, { ...out, type: 'custom_tool_call_output' }, fc, out] }), /No tool call found for custom_tool_call_output/);
    assert.throws(() => checkResponses({ input: [user, rs] }), /'rs_1' of type 'reasoning' was provided without its required following item/);
    assert.throws(() => checkResponses({ input: [user, rs, user] }), /without its required following item/);
    assert.throws(() => checkResponses({ input: [user, fc, rs, out] }), /without its required following item/);
    assert.throws(() => checkResponses({ input: [user, fc, out] }, issued), /'fc_1' of type 'function_call' was provided without its required 'reasoning' item: 'rs_1'/);
    assert.throws(() => checkResponses({ input: [user, { ...rs, summary: undefined }, said] }), /rs_1|summary/);
    assert.throws(() => checkResponses({ input: [{ role: 'user', content: [{ type: 'output_text', text: 'a' }] }] }), /output_text is not allowed in a user message/);
    assert.throws(() => checkResponses({ input: [{ ...said, annotations: [] }] }), /Unknown parameter: 'input\[0\]\.annotations'/);
    assert.throws(() => checkResponses({ input: [user, { ...fc, arguments: 'not json' }, out] }), /arguments is not JSON/);
    assert.throws(() => checkResponses({ input: [user, { type: 'web_search_result' }] }), /unknown item type/);
    assert.throws(() => checkResponses({ input: [] }), /non-empty/);
    // The Chat Completions tool shape is not the Responses API's.
    assert.throws(() => checkResponses({ tools: [{ type: 'function', function: { name: 'f', parameters: {} } }], input: [user] }),
        /Missing required parameter: 'tools\[0\]\.name'/);
});

test('Anthropic with signed thinking: the loop in flight sends its thinking back unchanged, finished turns may leave theirs out', () => {
    const block = t => ({ type: 'thinking', thinking: t, signature: `sig:${t}` });
    const signed = { verify: b => b.signature === `sig:${b.thinking}`, issued: new Map([['t1', [block('a')]], ['t2', [block('b')]]]) };
    const use = id => ({ type: 'tool_use', id, name: 'f', input: {} });
    const result = id => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'x' }] });
    const history = (first, second) => ({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: [...first, use('t1')] }, result('t1'), { role: 'assistant', content: 'done' },
        { role: 'user', content: 'b' }, { role: 'assistant', content: [...second, use('t2')] }, result('t2')] });
    assert.doesNotThrow(() => checkAnthropic(history([block('a')], [block('b')]), signed));
    assert.doesNotThrow(() => checkAnthropic(history([], [block('b')]), signed));
    assert.throws(() => checkAnthropic(history([block('a')], []), signed), /turn in flight must be passed back/);
    assert.throws(() => checkAnthropic(history([], [{ ...block('b'), thinking: 'edited' }]), signed), /Invalid `signature`/);
    assert.throws(() => checkAnthropic(history([{ ...block('a'), thinking: 'edited' }], [block('b')]), signed), /Invalid `signature`/);
});

test('Responses with store: false: reasoning comes back with its encrypted_content and with the calls of the current turn', () => {
    const user = { role: 'user', content: 'a' };
    const rs = n => ({ id: `rs_${n}`, type: 'reasoning', summary: [], encrypted_content: `enc${n}` });
    const fc = n => ({ id: `fc_${n}`, type: 'function_call', call_id: `c${n}`, name: 'f', arguments: '{}' });
    const out = n => ({ type: 'function_call_output', call_id: `c${n}`, output: 'x' });
    const issued = new Map([['fc_1', 'rs_1'], ['fc_2', 'rs_2']]);
    const sealed = new Map([['rs_1', 'enc1'], ['rs_2', 'enc2']]);
    const body = (...input) => ({ store: false, input });
    assert.doesNotThrow(() => checkResponses(body(user, rs(1), fc(1), out(1), user, rs(2), fc(2), out(2)), issued, sealed));
    // A finished turn's reasoning may go; the current turn's may not.
    assert.doesNotThrow(() => checkResponses(body(user, fc(1), out(1), user, rs(2), fc(2), out(2)), issued, sealed));
    assert.throws(() => checkResponses(body(user, rs(1), fc(1), out(1), user, fc(2), out(2)), issued, sealed),
        /'fc_2' of type 'function_call' was provided without its required 'reasoning' item: 'rs_2'/);
    // A message is linked to its reasoning by its id, finished turn or not;
    // without the id it is an input message of its own.
    const msg = (n, id) => ({ ...(id ? { id: `msg_${n}`, status: 'completed' } : {}), type: 'message', role: 'assistant',
        content: id ? [{ type: 'output_text', text: 'done', annotations: [] }] : 'done' });
    issued.set('msg_3', 'rs_3');
    sealed.set('rs_3', 'enc3');
    assert.doesNotThrow(() => checkResponses(body(user, rs(3), msg(3, true), user, rs(2), fc(2), out(2)), issued, sealed));
    assert.doesNotThrow(() => checkResponses(body(user, msg(3, false), user, rs(2), fc(2), out(2)), issued, sealed));
    assert.throws(() => checkResponses(body(user, msg(3, true), user, rs(2), fc(2), out(2)), issued, sealed),
        /'msg_3' of type 'message' was provided without its required 'reasoning' item: 'rs_3'/);
    assert.throws(() => checkResponses({ input: [user, msg(3, true)] }, issued),
        /'msg_3' of type 'message' was provided without its required 'reasoning' item: 'rs_3'/);
    assert.throws(() => checkResponses(body(user, { ...rs(1), encrypted_content: undefined }, fc(1), out(1)), issued, sealed),
        /not persisted when `store` is set to false/);
    assert.throws(() => checkResponses(body(user, { ...rs(1), encrypted_content: 'enc1x' }, fc(1), out(1)), issued, sealed),
        /could not be verified/);
});
