// The inspector at scale and on chat sessions, in Debian's chromium against
// a real compactd and redis-server: a filter over 600 units, a spill opened
// where the user is (and closed with Escape), each message's role and first
// words, a dropped unit's re-run hint, REST and MCP re-acquisitions told
// apart, and a refusal banner that says what its 422 said.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Redis, Compactd, launchBrowser, watchedPage } from './servers.mjs';

let redis, c, chrome;
before(async () => {
    redis = await Redis.start();
    c = await Compactd.start(redis);
    chrome = await launchBrowser();
});
after(async () => {
    if (chrome) await chrome.close();
    if (c) await c.stop();
    if (redis) await redis.stop();
});

async function openSession(page, session) {
    await page.goto(`${c.base}/ui#/sessions/${session}`);
    await page.waitForSelector('#session-view:not([hidden])');
}

const visibleKeys = page => page.$$eval('#units tr.unit', rows => rows.filter(r => !r.hidden).map(r => r.dataset.key));

test('600 units: a filter by key, class and decision, and a spill opened where the user is', async () => {
    const s = 'big';
    const units = [];
    for (let i = 0; i < 600; i++) {
        const key = `unit-${String(i).padStart(4, '0')}`;
        if (i % 3 === 0) units.push({ key, class: 'protected', tokens: 400, text: `log ${i}\n` + 'y'.repeat(300) });
        else if (i % 3 === 1) units.push({ key, class: 'derivable', tokens: 200, reacquire: `cat ${key}.txt` });
        else units.push({ key, class: 'redundant', tokens: 50 });
    }
    const plan = await c.post(`/v1/sessions/${s}/compact`, { budget: 20000, units });
    assert.equal(plan.status, 200, plan.text);
    assert.ok(plan.json.externalized.length > 100);
    const { page, seen } = await watchedPage(chrome.browser);
    try {
        await openSession(page, s);
        assert.equal((await visibleKeys(page)).length, 600);
        // The key box, reached from the keyboard with "/".
        await page.keyboard.press('/');
        assert.equal(await page.evaluate(() => document.activeElement.id), 'unit-filter-key');
        await page.keyboard.type('unit-0417');
        assert.deepEqual(await visibleKeys(page), ['unit-0417']);
        assert.equal(await page.$eval('#unit-filter-count', e => e.textContent), '1 of 600 shown');
        await page.keyboard.press('Escape'); // clears the box
        assert.equal((await visibleKeys(page)).length, 600);
        // Class and decision.
        await page.select('#unit-filter-class', 'derivable');
        await page.select('#unit-filter-decision', 'dropped');
        const dropped = plan.json.dropped.filter(d => d.class === 'derivable').map(d => d.key).sort();
        assert.deepEqual((await visibleKeys(page)).sort(), dropped);
        // A dropped unit shows how to get it back.
        const hint = await page.$eval(`tr[data-key="${dropped[0]}"] [data-hint]`, e => e.textContent);
        assert.equal(hint, ' · to get it back: ' + units.find(u => u.key === dropped[0]).reacquire);
        await page.select('#unit-filter-class', '');
        await page.select('#unit-filter-decision', '');

        // A spill far down the list opens in the viewport, the list stays
        // where it was, and Escape closes it.
        const ext = plan.json.externalized[plan.json.externalized.length - 1];
        const button = `.open-spill[data-key="${ext.key}"]`;
        await page.$eval(button, b => b.scrollIntoView({ block: 'center' }));
        const scrollBefore = await page.evaluate(() => window.scrollY);
        assert.ok(scrollBefore > 5000, `the page is short: ${scrollBefore}`);
        await page.click(button);
        await page.waitForFunction(() => document.getElementById('spill-text').textContent.length > 0);
        const where = await page.evaluate(() => {
            const r = document.getElementById('spill-panel').getBoundingClientRect();
            return { top: r.top, bottom: r.bottom, h: window.innerHeight, y: window.scrollY };
        });
        assert.ok(where.top >= 0 && where.bottom <= where.h && where.bottom > where.top, JSON.stringify(where));
        assert.equal(where.y, scrollBefore, 'opening the spill moved the page');
        assert.equal(await page.$eval('#spill-key', e => e.textContent), ext.key);
        await page.keyboard.press('Escape');
        await page.waitForFunction(() => !document.getElementById('spill-panel').open);
        assert.equal(await page.evaluate(() => document.activeElement.dataset.key), ext.key);
        assert.deepEqual(seen.errors, []);
    } finally {
        await page.close();
    }
});

test('a chat session: roles, first words, hints, REST and MCP re-acquisitions', async () => {
    const s = 'chat-big';
    const result = 'commit 4c1d2e9 on fix/parse: parse returns n, not n + 1. ' + 'ok '.repeat(200);
    const body = {
        format: 'openai', tokenizer: 'bytes', budget: 500,
        policy: { read_only_tools: ['read_*'], keep_last: 1 },
        messages: [
            { role: 'user', content: 'Commit the fix on a branch, then read the changelog.' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
                function: { name: 'run_shell', arguments: '{"cmd":"git commit -am fix"}' } }] },
            { role: 'tool', tool_call_id: 'call_1', content: result },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_2', type: 'function',
                function: { name: 'read_file', arguments: '{"path":"CHANGELOG.md"}' } }] },
            { role: 'tool', tool_call_id: 'call_2', content: '## 1.4.0\n' + '- an entry\n'.repeat(40) },
            { role: 'user', content: 'Add an entry for the fix.' },
        ],
    };
    const r = await c.post(`/v1/sessions/${s}/messages/compact`, body);
    assert.equal(r.status, 200, r.text);
    const ext = r.json.decisions.find(d => d.decision === 'externalized');
    const drop = r.json.decisions.find(d => d.decision === 'dropped' && d.reacquire);
    assert.ok(ext && drop, JSON.stringify(r.json.decisions));
    // One read through REST's reacquire route, one through MCP's tool.
    const rest = await c.post(`/v1/sessions/${s}/reacquire`, { pointer: ext.pointer });
    assert.equal(rest.status, 200, rest.text);
    const mcp = await c.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call',
        params: { name: 'reacquire', arguments: { session: s, pointer: ext.pointer } } },
    { Accept: 'application/json, text/event-stream' });
    assert.equal(mcp.status, 200, mcp.text);
    const ev = (await c.get(`/v1/sessions/${s}/events`)).json.events;
    assert.deepEqual(ev.map(e => e.via), [undefined, 'tool', 'mcp']);

    const { page, seen } = await watchedPage(chrome.browser);
    try {
        await openSession(page, s);
        await page.click('.tick[data-index="0"]');
        // Every message's role; the spilled one's first words, read from its spill.
        assert.deepEqual(await page.$$eval('#units tr.unit [data-role-text]', c => c.map(x => x.textContent)),
            body.messages.map(m => m.role));
        const cell = `#units tr.unit:nth-child(${ext.index + 1}) [data-first-words]`;
        await page.waitForFunction(sel => !document.querySelector(sel).textContent.startsWith('…'), {}, cell);
        assert.ok((await page.$eval(cell, e => e.textContent)).startsWith('commit 4c1d2e9 on fix/parse'));
        // The dropped message's hint is its decision's.
        assert.equal(await page.$eval(`#units tr.unit:nth-child(${drop.index + 1}) [data-hint] code`, e => e.textContent),
            drop.reacquire);
        // The two re-acquisitions are labelled by their front.
        const labels = [];
        for (const i of [1, 2]) {
            await page.click(`.tick[data-index="${i}"]`);
            await page.waitForSelector(`.tick[data-index="${i}"].selected`);
            labels.push(await page.$eval('[data-via-text]', e => e.textContent));
        }
        assert.match(labels[0], /through REST \(POST \/v1\/sessions\/\{session\}\/reacquire/);
        assert.match(labels[1], /through the MCP reacquire tool/);
        assert.deepEqual(await page.$$eval('#timeline .tick-reacquire', t => t.map(x => x.dataset.via)), ['tool', 'mcp']);
        assert.deepEqual(seen.errors, []);
    } finally {
        await page.close();
    }
});

test('a refusal whose named unit would fit as a pointer says so', async () => {
    const s = 'refusal';
    const units = [{ key: 'task', class: 'protected', tokens: 60, text: 'Goal' },
        { key: 'build.log', class: 'protected', tokens: 900, text: 'x'.repeat(900) }];
    const r = await c.post(`/v1/sessions/${s}/compact`, { budget: 80, units });
    assert.equal(r.status, 422, r.text);
    assert.ok(r.json.error.pointer_tokens <= r.json.error.budget, 'the named pointer does not fit alone');
    const { page } = await watchedPage(chrome.browser);
    try {
        await openSession(page, s);
        const text = await page.$eval('.failure-box', e => e.textContent);
        assert.equal(await page.$eval('[data-failed-key]', e => e.textContent), r.json.error.key);
        assert.ok(!/cannot fit even|could not fit even/.test(text), text);
        assert.ok(text.includes(`${r.json.error.pointer_tokens}-token pointer alone would fit`), text);
        assert.ok(text.includes(`needs a budget of ${r.json.error.required_budget} tokens`), text);
    } finally {
        await page.close();
    }
});
