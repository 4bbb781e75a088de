// Draws docs/inspector.png: a session of an agent whose context grows under
// a fixed budget, compacted turn after turn (tool results summarized, then
// logs spilled, then old results dropped; one refusal; two re-acquisitions),
// opened in the inspector on its busiest compaction.
// Usage: node tests/ui/screenshot.mjs [out.png]   (COMPACTD_BIN: the compactd)
import path from 'node:path';
import { Redis, Compactd, launchBrowser, ROOT } from './servers.mjs';

const out = process.argv[2] || path.join(ROOT, 'docs', 'inspector.png');
const S = 'agent-42';

function context(t) {
    const units = [
        { key: 'task', class: 'protected', tokens: 120, text: 'Goal: migrate billing to API v2. Keep invoice ids stable.' },
        { key: 'user: never touch tax.c', class: 'protected', tokens: 40, text: 'Do not modify src/billing/tax.c.' },
    ];
    for (let i = 0; i <= t; i++) {
        if (i % 4 === 1)
            units.push({ key: `make #${i}`, class: 'protected', tokens: 700 + 37 * i,
                text: `make: *** [Makefile:42: billing.o] Error 1\nsrc/billing/invoice.c:${80 + i}:5: error: 'retry_limit' undeclared\n`.repeat(6) });
        else if (i % 4 === 3)
            units.push({ key: `ls src/billing #${i}`, class: 'redundant', tokens: 90 });
        else
            units.push({ key: `read_file invoice.c #${i}`, class: 'derivable', tokens: 380 + 11 * i, priority: i % 3,
                summary: { text: `invoice.c: retry loop at line ${80 + i}`, tokens: 24 } });
    }
    return { budget: 2400, units };
}

const redis = await Redis.start();
const c = await Compactd.start(redis);
let chrome;
try {
    let busiest = 0, ext = null;
    for (let t = 0; t < 22; t++) {
        const body = t === 15 ? { ...context(t), budget: 150 } : context(t);
        const r = await c.post(`/v1/sessions/${S}/compact`, body);
        if (r.status === 200 && r.json.externalized.length) {
            ext = r.json.externalized[0];
            if (t === 13 || t === 19) {
                await c.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call',
                    params: { name: 'reacquire', arguments: { session: S, pointer: ext.pointer } } },
                { Accept: 'application/json, text/event-stream' });
            }
            if (t === 17) busiest = t;
        }
    }
    chrome = await launchBrowser();
    const page = await chrome.browser.newPage();
    await page.setViewport({ width: 1280, height: 900, deviceScaleFactor: 1 });
    await page.goto(`${c.base}/ui#/sessions/${S}`);
    await page.waitForSelector('#units tr.unit');
    // The compaction of turn `busiest` (re-acquisitions sit between turns).
    const idx = await page.$$eval('#timeline .tick-ok, #timeline .tick-failure',
        (ticks, n) => ticks[n].dataset.index, busiest);
    await page.click(`.tick[data-index="${idx}"]`);
    await page.screenshot({ path: out, fullPage: true });
    console.log('wrote ' + out);
} finally {
    if (chrome) await chrome.close();
    await c.stop();
    await redis.stop();
}
