// The proxy's cost beside calling the model directly: an agent history of
// about 100 KB growing turn over turn, each turn sent once straight to a
// loopback model and once through compactd's /proxy/openai/v1/chat/completions
// (compacted to the budget on the way, then forwarded to the same model),
// whole answers and streamed ones, and streamed with the reads not declared
// read-only (pointers in the compacted history, so that compactd reads the
// stream as it relays it); the model answers at once (streamed: its first
// event at once, the rest after a pause), so that what is measured is what
// compactd adds. Prints one JSON document: per mode the p50 and p99 in
// ms, direct and proxied, and their ratios.
// With compactd's pid, also the CPU time its threads spent per proxied call
// (from /proc: a figure the machine's other load barely moves, unlike the
// latencies).
//   node proxy_bench.mjs COMPACTD_PORT MODEL_PORT TURNS BUDGET [COMPACTD_PID]
import fs from 'node:fs';
import http from 'node:http';

const [cport, mport, turnsArg, budgetArg, cpid] = process.argv.slice(2);

/** The CPU time compactd's threads have spent, in ms (schedstat: ns on a CPU), or null. */
function cpuMs() {
    if (!cpid) return null;
    let ns = 0;
    for (const t of fs.readdirSync(`/proc/${cpid}/task`)) {
        try { ns += Number(fs.readFileSync(`/proc/${cpid}/task/${t}/schedstat`, 'utf8').split(' ')[0]); }
        catch { /* a thread that ended meanwhile */ }
    }
    return ns / 1e6;
}
const TURNS = Number(turnsArg ?? 200), BUDGET = Number(budgetArg ?? 20000);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/**
 * POSTs body; resolves {first, total, pointers}: ms to the first byte of
 * the body and to its end, and compactd's X-Compactd-Pointers.
 */
function post(port, path, body, headers) {
    return new Promise((resolve, reject) => {
        const t0 = process.hrtime.bigint();
        let first = null;
        const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers } }, res => {
            res.on('data', () => { first ??= process.hrtime.bigint(); });
            res.on('end', () => {
                if (res.statusCode !== 200) return reject(new Error(`${path}: ${res.statusCode}`));
                const ms = t => Number(t - t0) / 1e6;
                resolve({ first: ms(first ?? process.hrtime.bigint()), total: ms(process.hrtime.bigint()),
                          pointers: Number(res.headers['x-compactd-pointers'] ?? 0) });
            });
        });
        req.on('error', reject);
        req.end(body);
    });
}

// ---- The history ----

const WORDS = 'the parser reads digits until a non digit and the loop returns the value plus one which is wrong'.split(' ');
const prose = (n, k) => Array.from({ length: n }, (_, i) => WORDS[(i * 7 + k) % WORDS.length]).join(' ');

function turn(k) {
    const id = `call_${k}`;
    return [
        { role: 'assistant', content: null, tool_calls: [{ id, type: 'function',
          function: { name: 'read_file', arguments: JSON.stringify({ path: `src/file${k}.c` }) } }] },
        { role: 'tool', tool_call_id: id, content: `/* src/file${k}.c */\n` + prose(300, k) },
        { role: 'assistant', content: `File ${k} read: ${prose(20, k + 1)}.` },
        { role: 'user', content: `Next, check file ${k + 1}.` },
    ];
}

const history = [{ role: 'system', content: 'You are a coding agent. Never push to main.' },
                 { role: 'user', content: 'Fix the parser. Never push to main.' }];
let k = 0;
while (Buffer.byteLength(JSON.stringify(history)) < 100 * 1024) history.push(...turn(k++));
const tools = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object',
    properties: { path: { type: 'string' } }, required: ['path'] } } }];

// ---- The runs ----

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const headers = { 'X-Compactd-Budget': String(BUDGET), 'X-Compactd-Session': 'bench-proxy',
                  'X-Compactd-Policy': JSON.stringify({ read_only_tools: ['read_file'] }), Authorization: 'Bearer sk-bench' };
// The reads not declared read-only: they are kept, verbatim or behind
// pointers, so that compactd adds its reacquire tool and reads the stream's
// events as they pass (the model never calls it here).
const withPointers = { 'X-Compactd-Budget': String(BUDGET), 'X-Compactd-Session': 'bench-proxy-pointers',
                       Authorization: 'Bearer sk-bench' };
const result = { history_bytes: Buffer.byteLength(JSON.stringify(history)), turns: TURNS, budget: BUDGET };
const MODES = [['whole', false, headers], ['stream_first_byte', true, headers],
               ['stream_first_byte_pointers', true, withPointers]];
for (const [m, stream, hdrs] of MODES) {
    const direct = [], proxied = [], pointers = [];
    let cpu0 = null;
    for (let t = 0; t < TURNS + 5; t++) {
        if (t === 5) cpu0 = cpuMs(); // the measured turns' own
        history.push(...turn(k++));
        const body = JSON.stringify({ model: 'gpt-4o', messages: history, tools, stream });
        // Alternate which goes first, so that neither always finds a warmer machine.
        const a = t % 2 === 0 ? await post(mport, '/v1/chat/completions', body, {}) : null;
        const b = await post(cport, '/proxy/openai/v1/chat/completions', body, hdrs);
        const c = a ?? await post(mport, '/v1/chat/completions', body, {});
        if (t < 5) continue; // warm-up
        direct.push(stream ? c.first : c.total);
        proxied.push(stream ? b.first : b.total);
        pointers.push(b.pointers);
        history.splice(2, 4); // stays about 100 KB: the oldest turn goes as a new one comes
    }
    result[m] = { direct_p50_ms: pct(direct, 0.5), direct_p99_ms: pct(direct, 0.99),
                  proxy_p50_ms: pct(proxied, 0.5), proxy_p99_ms: pct(proxied, 0.99),
                  pointers_p50: pct(pointers, 0.5) };
    const cpu1 = cpuMs();
    if (cpu0 !== null) result[m].compactd_cpu_ms_per_call = (cpu1 - cpu0) / TURNS;
    result[m].ratio_p50 = result[m].proxy_p50_ms / result[m].direct_p50_ms;
    result[m].ratio_p99 = result[m].proxy_p99_ms / result[m].direct_p99_ms;
    result[m].added_p50_ms = result[m].proxy_p50_ms - result[m].direct_p50_ms;
}
agent.destroy();
console.log(JSON.stringify(result, null, 1));
