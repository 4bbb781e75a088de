// A known session history for the inspector's tests and bench: units
// compactions that change fate from turn to turn, a refusal, a chat
// history compacted with a loss marker, a re-acquisition over MCP, and a
// verify that finds a unit missing.

// Bytes a spill must give back exactly: CRLF, a tab, trailing blanks,
// non-ASCII and an astral character.
export const BUILD_LOG = 'make: *** [Makefile:42: billing.o] Error 1\r\n' +
    '\tsrc/billing/invoice.c:88:5: error: ‘retry_limit’ undeclared — ünïcødé 🚀\n' +
    '  two trailing blanks  \n' + 'x'.repeat(600);

export function turn(budget, extra = []) {
    return {
        budget,
        units: [
            { key: 'task', class: 'protected', tokens: 60, text: 'Goal: migrate billing to API v2. Keep invoice ids stable.' },
            { key: 'build.log', class: 'protected', tokens: 900, text: BUILD_LOG },
            { key: 'grep#1', class: 'derivable', tokens: 300, priority: 1, text: 'Matches in invoice.c and tax.c',
                summary: { text: '2 matches in src/billing/invoice.c', tokens: 12 } },
            { key: 'ls', class: 'derivable', tokens: 50 },
            { key: 'old-plan', class: 'redundant', tokens: 200 },
            ...extra,
        ],
    };
}

export const CHAT = {
    format: 'openai',
    tokenizer: 'bytes',
    budget: 330,
    policy: { read_only_tools: ['read_file'] },
    messages: [
        { role: 'system', content: 'You are a coding agent. Never push to main.' },
        { role: 'user', content: 'Fix the failing test in src/a.c' },
        { role: 'assistant', content: null, tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/a.c"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'int main(void) { return 1; }\n'.repeat(12) },
        { role: 'assistant', content: 'The bug is the return value.' },
        { role: 'user', content: 'Go ahead.' },
    ],
};

// Writes the history into session s of compactd c; returns the API's
// answers in order (units, units, refusal, chat, reacquire, verify).
export async function writeHistory(c, s) {
    const out = [];
    const check = (r, status) => {
        if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
        out.push(r.json);
        return r.json;
    };
    check(await c.post(`/v1/sessions/${s}/compact`, turn(2000)), 200);
    const second = check(await c.post(`/v1/sessions/${s}/compact`,
        turn(400, [{ key: 'notes', class: 'derivable', tokens: 120 }])), 200);
    check(await c.post(`/v1/sessions/${s}/compact`, turn(40)), 422);
    check(await c.post(`/v1/sessions/${s}/messages/compact`, CHAT), 200);
    const ext = second.externalized[0];
    const r = await c.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call',
        params: { name: 'reacquire', arguments: { session: s, pointer: ext.pointer } } },
    { Accept: 'application/json, text/event-stream' });
    if (r.status !== 200 || r.json.result.isError) throw new Error('reacquire failed: ' + r.text);
    out.push(r.json);
    // A context that lost build.log and its pointer: a silent truncation.
    const [task, log] = turn(0).units;
    const v = check(await c.post(`/v1/sessions/${s}/verify`, {
        context: task.text + '\nNext: run make.',
        units: [task, log].map(u => ({ key: u.key, class: u.class, text: u.text })),
    }), 200);
    if (v.verdict !== 'silent_truncation') throw new Error('verify found nothing missing: ' + JSON.stringify(v));
    return out;
}
