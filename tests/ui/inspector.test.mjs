// The inspector page (/ui) in Debian's chromium against a real compactd and
// redis-server: what it shows must be what the API answered, spills byte for
// byte, hostile keys and texts as inert text, nothing before an API key, and
// no request anywhere but the page's own origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis, Compactd, runCompactd, launchBrowser, watchedPage } from './servers.mjs';
import { writeHistory, turn, CHAT } from './history.mjs';

const OUT = process.env.UI_TEST_OUTPUT || fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-ui-out-'));
fs.mkdirSync(OUT, { recursive: true });

let redis, open, chrome;
before(async () => {
    redis = await Redis.start();
    open = await Compactd.start(redis);
    chrome = await launchBrowser();
});
after(async () => {
    if (chrome) await chrome.close();
    if (open) await open.stop();
    if (redis) await redis.stop();
});

const fmt = n => Number(n).toLocaleString('en-US');

// Every request the page made went to its own origin.
function assertSameOrigin(seen, base) {
    assert.ok(seen.requests.length > 0, 'the page made no request at all');
    for (const url of seen.requests)
        assert.equal(new URL(url).origin, base, `request to another origin: ${url}`);
}

function assertQuiet(seen) {
    assert.deepEqual(seen.dialogs, [], 'a dialog opened');
    assert.deepEqual(seen.errors, [], 'the console logged errors');
}

async function openSession(page, base, session) {
    await page.goto(`${base}/ui#/sessions/${session}`);
    await page.waitForSelector('#session-view:not([hidden])');
}

// What the page shows of the selected compaction.
function shown(page) {
    return page.evaluate(() => {
        const fig = {};
        for (const e of document.querySelectorAll('[data-figure]'))
            fig[e.dataset.figure] = { value: Number(e.dataset.value), text: e.textContent };
        const seg = {};
        for (const e of document.querySelectorAll('[data-tokens]')) seg[e.dataset.tokens] = Number(e.dataset.value);
        const rows = [...document.querySelectorAll('#units tr.unit')].map(r => ({
            key: r.dataset.key,
            decision: r.dataset.decision,
            keyText: r.querySelector('td.key').textContent,
            before: r.querySelector('[data-col=before]').textContent,
            after: r.querySelector('[data-col=after]').textContent,
            why: r.querySelector('td.why').textContent,
        }));
        return { fig, seg, rows, outcome: document.querySelector('[data-outcome]')?.dataset.outcome };
    });
}

async function selectEntry(page, i) {
    await page.click(`.tick[data-index="${i}"]`);
    await page.waitForSelector(`.tick[data-index="${i}"].selected`);
}

// ---- The server side of /ui ----

// docs/ui.md's examples: the headers every file under /ui carries, and the
// body of /ui when it is switched off.
const DOC = fs.readFileSync(new URL('../../docs/ui.md', import.meta.url), 'utf8');
const DOC_HEADERS = [...DOC.matchAll(/^ {4}([A-Za-z-]+): (.+)$/gm)].map(m => [m[1].toLowerCase(), m[2]]);
const DOC_OFF = /^ {4}(\{"error".*\})$/m.exec(DOC)[1];

test('/ui and its assets are served with a strict policy', async () => {
    const r = await open.get('/ui');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
    const csp = r.headers.get('content-security-policy');
    for (const d of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"])
        assert.ok(csp.includes(d), `policy lacks ${d}: ${csp}`);
    assert.ok(!/unsafe-inline|unsafe-eval|\*/.test(csp), csp);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(DOC_HEADERS.length, 4);
    for (const [name, value] of DOC_HEADERS) assert.equal(r.headers.get(name), value, name);
    assert.ok(!/<script>|\son[a-z]+=|style=/i.test(r.text), 'the page carries inline script or style');
    for (const [asset, type] of [['inspector.js', 'text/javascript; charset=utf-8'],
        ['inspector-units.js', 'text/javascript; charset=utf-8'],
        ['inspector.css', 'text/css; charset=utf-8'], ['favicon.svg', 'image/svg+xml']]) {
        const a = await open.get('/ui/' + asset);
        assert.equal(a.status, 200, asset);
        assert.equal(a.headers.get('content-type'), type);
        for (const [name, value] of DOC_HEADERS) assert.equal(a.headers.get(name), value, `${asset}: ${name}`);
        assert.equal(a.text, fs.readFileSync(new URL('../../api/rest/ui/' + asset, import.meta.url), 'utf8'));
    }
    const js = (await open.get('/ui/inspector.js')).text + (await open.get('/ui/inspector-units.js')).text;
    assert.ok(!/\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|\beval\(|new Function/.test(js),
        'the script builds markup from strings');
    const missing = await open.get('/ui/nope.js');
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.type, 'NotFound');
    const post = await open.post('/ui', {});
    assert.equal(post.status, 405);
});

test('COMPACTD_UI=off answers 404 and a bad value refuses to start', async () => {
    const off = await Compactd.start(redis, { env: { COMPACTD_UI: 'off' } });
    try {
        for (const p of ['/ui', '/ui/inspector.js']) {
            const r = await off.get(p);
            assert.equal(r.status, 404, p);
            assert.equal(r.text, DOC_OFF);
        }
        assert.equal((await off.get('/healthz')).status, 200);
    } finally {
        await off.stop();
    }
    const bad = runCompactd({ COMPACTD_UI: 'yes', COMPACTD_REDIS_URL: redis.url() });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /COMPACTD_UI: 'yes' is not on or off/);
});

test('the decision log carries each unit and message with its tokens before and after', async () => {
    const s = 'log-fields';
    const [first, second, refused, chat] = await writeHistory(open, s);
    const ev = (await open.get(`/v1/sessions/${s}/events`)).json.events;
    assert.deepEqual(ev.map(e => e.kind), ['compact', 'compact', 'compact', 'compact', 'reacquire', 'verify']);
    const req = turn(400, [{ key: 'notes', class: 'derivable', tokens: 120 }]).units;
    assert.equal(ev[1].format, 'units');
    assert.deepEqual(ev[1].units.map(u => [u.key, u.class, u.decision, u.tokens_before, u.tokens_after]),
        second.decisions.map((d, i) => [d.key, d.class, d.decision, req[i].tokens, d.tokens]));
    assert.equal(ev[1].units.find(u => u.key === 'build.log').sha256, second.externalized[0].sha256);
    assert.equal(ev[0].units.find(u => u.key === 'old-plan').reason, 'redundant');
    assert.equal(first.used_tokens, ev[0].used_tokens);
    // The refusal logs what its 422 named, with the 422's figures.
    assert.deepEqual([ev[2].failed_key, ev[2].failed_tokens, ev[2].failed_pointer_tokens, ev[2].required_budget],
        [refused.error.key, refused.error.tokens, refused.error.pointer_tokens, refused.error.required_budget]);
    assert.equal(ev[2].units[ev[2].failed_index].key, refused.error.key);
    // A refusal decided nothing: its units carry only what was asked.
    assert.equal(refused.error.type, 'CompactionFailure');
    assert.deepEqual(ev[2].units.map(u => Object.keys(u).sort()), ev[2].units.map(() => ['class', 'key', 'tokens_before']));
    // A chat compaction: its format, each message's index, and the window
    // it answered (markers included).
    assert.equal(ev[3].format, 'openai');
    assert.equal(ev[3].used_tokens, chat.used_tokens);
    assert.equal(ev[3].marker_count, chat.marker_count);
    assert.equal(ev[3].system_tokens, chat.system_tokens);
    assert.deepEqual(ev[3].units.map(u => [u.message, u.decision, u.tokens_before, u.tokens_after]),
        chat.decisions.map(d => [d.index, d.decision, d.tokens, d.used_tokens]));
    const msgs = ev[3].units.filter(u => u.decision !== 'dropped').reduce((a, u) => a + u.tokens_after, 0);
    assert.equal(ev[3].marker_tokens, chat.used_tokens - chat.system_tokens - msgs);
    assert.ok(ev[3].marker_tokens > 0);
    assert.equal(CHAT.messages.length, ev[3].units.length);
    // Each message's role, a dropped one's hint as its decision gave it,
    // and no text of any message.
    assert.deepEqual(ev[3].units.map(u => u.role), CHAT.messages.map(m => m.role));
    assert.deepEqual(ev[3].units.map(u => u.reacquire), chat.decisions.map(d => d.reacquire));
    assert.ok(chat.decisions.some(d => d.reacquire), 'no dropped message carries a hint');
    const entry = JSON.stringify(ev[3]);
    for (const m of CHAT.messages) if (m.content) assert.ok(!entry.includes(m.content.slice(0, 20)), m.content);

    // Anthropic's top-level system prompt takes tokens outside the messages.
    const anth = await open.post(`/v1/sessions/${s}/messages/compact`, {
        format: 'anthropic', budget: 1000, system: 'You are a careful coding agent.',
        messages: [{ role: 'user', content: 'Fix the test.' }, { role: 'assistant', content: 'Done.' },
            { role: 'user', content: 'Thanks.' }],
    });
    assert.equal(anth.status, 200, anth.text);
    const a = (await open.get(`/v1/sessions/${s}/events?after=${ev[5].id}`)).json.events[0];
    assert.equal(a.format, 'anthropic');
    assert.ok(a.system_tokens > 0);
    assert.equal(a.system_tokens, anth.json.system_tokens);
    assert.equal(a.used_tokens, anth.json.used_tokens);
    assert.equal(a.used_tokens, a.system_tokens + a.marker_tokens + a.units.reduce((x, u) => x + u.tokens_after, 0));
});

// ---- In the browser ----

test('the page shows what the API answered, step by step', async () => {
    const s = 'agent-42';
    const [first, second, refused, chat, , verify] = await writeHistory(open, s);
    const { page, seen } = await watchedPage(chrome.browser);
    try {
        await openSession(page, open.base, s);
        // Six entries; the last compaction is selected first.
        assert.equal(await page.$$eval('#timeline .tick', t => t.length), 6);
        assert.equal(await page.$$eval('#timeline .tick-failure', t => t.length), 1);
        assert.equal(await page.$$eval('#timeline .tick-reacquire', t => t.length), 1);
        assert.equal(await page.$$eval('#timeline .tick-verify', t => t.length), 1);
        assert.equal(await page.$eval('.tick.selected', t => t.dataset.index), '3');
        await page.screenshot({ path: path.join(OUT, 'timeline.png') });

        // The chat compaction: figures, every message's fate, the bar.
        let v = await shown(page);
        assert.equal(v.fig.budget.value, chat.budget);
        assert.equal(v.fig.budget.text, fmt(chat.budget));
        assert.equal(v.fig.used.value, chat.used_tokens);
        assert.equal(v.fig.required.value, chat.required_budget);
        // Each message's key is the one the decision log recorded (from its
        // call ids or its digest, docs/chat.md).
        const logged = (await open.get(`/v1/sessions/${s}/events`)).json.events[3].units;
        assert.deepEqual(v.rows.map(r => [r.key, r.decision, r.before, r.after]),
            chat.decisions.map(d => [logged.find(u => u.message === d.index).key, d.decision,
                fmt(d.tokens), fmt(d.used_tokens)]));
        assert.ok(v.rows.some(r => r.key === 'call_1'), 'a tool call is keyed by its id');
        assert.equal(v.seg.markers, ev3MarkerTokens(chat));
        assert.equal(v.seg.verbatim + v.seg.summaries + v.seg.pointers + v.seg.markers, chat.used_tokens);
        assert.equal(v.seg.free, chat.budget - chat.used_tokens);

        // The second units compaction: one of each fate, and what changed.
        await selectEntry(page, 1);
        v = await shown(page);
        assert.equal(v.outcome, 'ok');
        assert.equal(v.fig.budget.value, second.budget);
        assert.equal(v.fig.used.value, second.used_tokens);
        assert.equal(v.fig.used.text, fmt(second.used_tokens));
        assert.equal(v.fig.required.value, second.required_budget);
        for (const k of ['preserved', 'summarized', 'externalized', 'dropped'])
            assert.equal(v.fig['count-' + k].value, second[k].length, k);
        const req = turn(400, [{ key: 'notes', class: 'derivable', tokens: 120 }]).units;
        assert.deepEqual(v.rows.map(r => [r.key, r.decision, r.before, r.after]),
            second.decisions.map((d, i) => [d.key, d.decision, fmt(req[i].tokens), fmt(d.tokens)]));
        const drop = second.dropped.find(d => d.reason === 'redundant');
        assert.equal(v.rows.find(r => r.key === drop.key).why, 'redundant');
        assert.equal(v.seg.verbatim + v.seg.summaries + v.seg.pointers, second.used_tokens);
        const changes = await page.$$eval('[data-change-key]', li => li.map(l => [l.dataset.changeKey, l.textContent]));
        const was = new Map(first.decisions.map(d => [d.key, d.decision]));
        const expected = second.decisions.filter(d => was.has(d.key) && was.get(d.key) !== d.decision)
            .map(d => [d.key, `${d.key} ${was.get(d.key)} → ${d.decision}`]);
        assert.ok(expected.length > 0, 'the history changes no fate');
        assert.deepEqual(changes, expected);
        assert.equal(await page.$eval('[data-added]', p => p.textContent), 'New: notes');
        await page.screenshot({ path: path.join(OUT, 'compaction.png'), fullPage: true });

        // The refusal, in red, naming its unit.
        await page.keyboard.press('ArrowRight');
        await page.waitForSelector('.tick[data-index="2"].selected');
        v = await shown(page);
        assert.equal(v.outcome, 'failure');
        assert.equal(v.fig.required.value, refused.error.required_budget);
        assert.equal(v.fig.budget.value, refused.error.budget);
        assert.equal(v.fig.asked.value, turn(40).units.reduce((a, u) => a + u.tokens, 0));
        assert.equal(v.fig.used, undefined);
        assert.equal(await page.$eval('[data-failed-key]', e => e.textContent), refused.error.key);
        assert.deepEqual(v.rows.map(r => r.decision), v.rows.map(() => ''));
        await page.screenshot({ path: path.join(OUT, 'refusal.png'), fullPage: true });

        // The verify names what the context lost.
        await selectEntry(page, 5);
        assert.deepEqual(await page.$$eval('.missing-list li code', c => c.map(x => x.textContent)),
            verify.missing.map(m => m.key));
        await selectEntry(page, 2);

        // The entry's address is in the URL: a reload lands on it again.
        await page.reload();
        await page.waitForSelector('.tick[data-index="2"].selected');
        assert.equal(await page.$eval('[data-failed-key]', e => e.textContent), refused.error.key);
        assert.equal(first.used_tokens, (await open.get(`/v1/sessions/${s}/events?limit=1`)).json.events[0].used_tokens);
        assertSameOrigin(seen, open.base);
        assertQuiet(seen);
    } finally {
        await page.close();
    }
});

function ev3MarkerTokens(chat) {
    const msgs = chat.decisions.reduce((a, d) => a + d.used_tokens, 0);
    return chat.used_tokens - chat.system_tokens - msgs;
}

test('a spill opens with the exact text the spill route serves', async () => {
    const s = 'spills';
    const [, second] = await writeHistory(open, s);
    const ext = second.externalized[0];
    const spill = (await open.get(`/v1/sessions/${s}/spills/${encodeURIComponent(ext.key)}?sha256=${ext.sha256}`)).json;
    const { page, seen } = await watchedPage(chrome.browser);
    try {
        await openSession(page, open.base, s);
        await selectEntry(page, 1);
        await page.click(`.open-spill[data-key="${ext.key}"]`);
        await page.waitForFunction(() => document.getElementById('spill-text').textContent.length > 0);
        const got = await page.evaluate(() => ({
            text: document.getElementById('spill-text').textContent,
            sha: document.getElementById('spill-sha256').textContent,
            created: document.getElementById('spill-created').textContent,
        }));
        assert.ok(Buffer.from(got.text, 'utf8').equals(Buffer.from(spill.text, 'utf8')), 'spill text differs');
        assert.equal(got.sha, spill.sha256);
        assert.equal(got.created, spill.created_at);
        await page.screenshot({ path: path.join(OUT, 'spill.png'), fullPage: true });

        // The re-acquisition entry opens the same version.
        await page.keyboard.press('Escape');
        await page.waitForFunction(() => !document.getElementById('spill-panel').open);
        await selectEntry(page, 4);
        await page.click('.open-spill');
        await page.waitForFunction(() => document.getElementById('spill-text').textContent.length > 0);
        assert.equal(await page.$eval('#spill-text', e => e.textContent), spill.text);
        assertSameOrigin(seen, open.base);
        assertQuiet(seen);
    } finally {
        await page.close();
    }
});

test('hostile keys and spilled texts render as text and run nothing', async () => {
    const s = 'hostile';
    const key = '"><script>alert(1)</script><b id=pwned-key>';
    const text = '<img src=x onerror="alert(document.domain)"><script>alert(2)</script><b id=pwned-text>';
    const units = [
        { key, class: 'protected', tokens: 900, text },
        { key: '<svg onload=alert(3)>', class: 'derivable', tokens: 5000 },
    ];
    const plan = await open.post(`/v1/sessions/${s}/compact`, { budget: 100, units });
    assert.equal(plan.status, 200, plan.text);
    assert.equal(plan.json.externalized[0].key, key);
    const { page, seen } = await watchedPage(chrome.browser);
    try {
        await openSession(page, open.base, s);
        const v = await shown(page);
        assert.deepEqual(v.rows.map(r => r.keyText), units.map(u => u.key));
        await page.click('.open-spill');
        await page.waitForFunction(() => document.getElementById('spill-text').textContent.length > 0);
        assert.equal(await page.$eval('#spill-text', e => e.textContent), text);
        assert.equal(await page.$eval('#spill-key', e => e.textContent), key);
        // Nothing of it became an element, and nothing ran.
        const dom = await page.evaluate(() => ({
            img: document.querySelectorAll('img, svg').length,
            scripts: document.scripts.length,
            injected: document.querySelectorAll('#pwned-key, #pwned-text').length,
        }));
        assert.deepEqual(dom, { img: 0, scripts: 2, injected: 0 });
        await new Promise(r => setTimeout(r, 300)); // an onerror would have fired by now
        await page.screenshot({ path: path.join(OUT, 'hostile.png'), fullPage: true });
        assertSameOrigin(seen, open.base);
        assertQuiet(seen);
        assert.ok(!seen.requests.some(u => new URL(u).pathname === '/x'), 'the injected image was fetched');
    } finally {
        await page.close();
    }
});

test('with API keys the page shows nothing until a key, and a wrong key shows the 401', async () => {
    const keyed = await Compactd.start(redis, { keys: { 'key-of-acme-7f3a': 'acme' } });
    const { page, seen } = await watchedPage(chrome.browser);
    try {
        const plan = await keyed.post('/v1/sessions/guarded/compact', turn(700));
        assert.equal(plan.status, 200, plan.text);
        const denied = await keyed.get('/v1/sessions/guarded/events', { Authorization: 'Bearer wrong-key' });
        assert.equal(denied.status, 401);

        await page.goto(`${keyed.base}/ui#/sessions/guarded`);
        await page.waitForSelector('#key-panel:not([hidden])');
        const before = await page.evaluate(() => ({
            view: document.getElementById('session-view').hidden,
            ticks: document.querySelectorAll('.tick').length,
            figures: document.querySelectorAll('[data-figure]').length,
            error: document.getElementById('key-error').hidden,
        }));
        assert.deepEqual(before, { view: true, ticks: 0, figures: 0, error: true });

        await page.type('#key-input', 'wrong-key');
        await page.click('#key-form button');
        await page.waitForSelector('#key-error:not([hidden])');
        assert.equal(await page.$eval('#key-error', e => e.textContent), denied.json.error.message);
        assert.equal(await page.$$eval('[data-figure]', f => f.length), 0);
        await page.screenshot({ path: path.join(OUT, 'wrong-key.png') });

        await page.type('#key-input', 'key-of-acme-7f3a');
        await page.click('#key-form button');
        await page.waitForSelector('#session-view:not([hidden])');
        const v = await shown(page);
        assert.equal(v.fig.used.value, plan.json.used_tokens);
        // The key lives in the page's memory only.
        const kept = await page.evaluate(() => ({
            cookie: document.cookie, local: localStorage.length, session: sessionStorage.length,
            url: location.href,
        }));
        assert.deepEqual({ ...kept, url: kept.url.includes('key-of-acme') },
            { cookie: '', local: 0, session: 0, url: false });
        assertSameOrigin(seen, keyed.base);
        // The 401s the page was answered are console errors of the browser's
        // own; nothing else may be.
        assert.deepEqual(seen.errors.filter(e => !/status of 401/.test(e)), []);
        assert.deepEqual(seen.dialogs, []);
    } finally {
        await page.close();
        await keyed.stop();
    }
});
