// The mock provider's rules refuse what the real providers refuse, so a test
// that passes through it could have failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkAnthropic, checkOpenAI } from './mock_provider.mjs';

const call = (id, name = 'f') => ({ id, type: 'function', function: { name, arguments: '{}' } });

test('OpenAI: a tool message must answer a pending call, and every call is answered before the next message', () => {
    assert.doesNotThrow(() => checkOpenAI({ messages: [{ role: 'user', content: 'a' },
        { role: 'assistant', content: null, tool_calls: [call('1'), call('2')] },
        { role: 'tool', tool_call_id: '2', content: 'x' }, { role: 'tool', tool_call_id: '1', content: 'y' },
        { role: 'system', content: 'marker' }, { role: 'user', content: 'b' }] }));
    assert.throws(() => checkOpenAI({ messages: [{ role: 'user', content: 'a' }, { role: 'tool', tool_call_id: '1', content: 'x' }] }), /answers no pending/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null, tool_calls: [call('1')] }, { role: 'user', content: 'a' }] }), /must be answered first/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null, tool_calls: [call('1')] }] }), /never answered/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: 'x', refusal: null, annotations: [] }] }), /unknown field annotations/);
    assert.throws(() => checkOpenAI({ messages: [{ role: 'assistant', content: null }] }), /content is required/);
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
    assert.throws(() => checkAnthropic({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 'x' }] }, { role: 'user', content: 'b' }] }), /unknown block/);
});
