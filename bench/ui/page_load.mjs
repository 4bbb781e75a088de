// Page load of the inspector for one long session: a session of N
// compactions (default 1,000) is written through the API, then /ui for it
// is opened in Debian's chromium (fresh page each round) until the last
// compaction's units are on screen, by the page's own clock (navigation
// start to its "inspector-drawn" mark). Prints the median and worst round,
// beside the same page for a session of one compaction in the same rounds
// (what the machine's load costs any page) and the /events fetches alone,
// and writes them to bench/results/ui.json.
import fs from 'node:fs';
import path from 'node:path';
import { Redis, Compactd, launchBrowser, ROOT } from '../../tests/ui/servers.mjs';

const N = Number(process.env.BENCH_UI_COMPACTIONS || 1000);
const UNITS = Number(process.env.BENCH_UI_UNITS || 30);
const ROUNDS = Number(process.env.BENCH_UI_ROUNDS || 10);
const SESSION = 'bench-ui';

// Turn t of a growing agent context: the task, logs that get externalized,
// tool results that are summarized or dropped as the budget tightens.
function turn(t) {
    const units = [{ key: 'task', class: 'protected', tokens: 80, text: 'Goal: keep invoices stable.' }];
    for (let i = 1; i < UNITS; i++) {
        const k = (t + i) % 5;
        if (k === 0) units.push({ key: `log-${i}`, class: 'protected', tokens: 400 + i, text: `build log ${i} `.repeat(20) });
        else if (k === 4) units.push({ key: `stale-${i}`, class: 'redundant', tokens: 100 });
        else units.push({ key: `tool-${i}`, class: 'derivable', tokens: 200 + i, priority: i % 3,
            summary: { text: `summary of tool result ${i}`, tokens: 20 } });
    }
    return { budget: 2500 + (t % 7) * 300, units };
}

const median = a => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

const redis = await Redis.start();
const c = await Compactd.start(redis);
let chrome;
try {
    for (let t = 0; t < N; t++) {
        const r = await c.post(`/v1/sessions/${SESSION}/compact`, turn(t));
        if (r.status !== 200) throw new Error(`turn ${t}: ${r.status} ${r.text}`);
    }
    // The same page for a session of one compaction, measured in turns with
    // the long one: what the machine's load costs any page, whatever the log.
    if ((await c.post(`/v1/sessions/${SESSION}-one/compact`, turn(0))).status !== 200)
        throw new Error('the one-compaction session was refused');
    const floor = [];
    let bytes = 0;
    for (let i = 0; i < ROUNDS; i++) {
        const t0 = performance.now();
        let after = null, n = 0;
        do {
            const r = await c.get(`/v1/sessions/${SESSION}/events?limit=1000${after ? '&after=' + after : ''}`);
            n += r.json.events.length;
            bytes = i === 0 ? bytes + r.text.length : bytes;
            after = r.json.next_after;
        } while (after);
        floor.push(performance.now() - t0);
        if (n !== N) throw new Error(`the log holds ${n} entries, not ${N}`);
    }

    chrome = await launchBrowser();
    const load = [], splits = [], small = [];
    for (let i = 0; i <= ROUNDS; i++) {
        const one = await chrome.browser.newPage();
        await one.goto(`${c.base}/ui#/sessions/${SESSION}-one`);
        await one.waitForSelector('#units tr.unit', { polling: 'mutation' });
        const drawnOne = await one.evaluate(() => performance.getEntriesByName('inspector-drawn')[0].startTime);
        if (i > 0) small.push(drawnOne);
        await one.close();

        const page = await chrome.browser.newPage();
        const t0 = performance.now();
        await page.goto(`${c.base}/ui#/sessions/${SESSION}`);
        await page.waitForSelector('#units tr.unit', { polling: 'mutation' });
        const ms = performance.now() - t0;
        // Where the time went, by the page's own clock.
        const split = await page.evaluate(() => {
            const ev = performance.getEntriesByType('resource').filter(r => r.name.includes('/events'));
            const first = ev[0], last = ev[ev.length - 1];
            const drawn = performance.getEntriesByName('inspector-drawn')[0].startTime;
            return { fetch: last.responseEnd - first.startTime, first_byte: first.responseStart - first.startTime,
                started: first.startTime, render: drawn - last.responseEnd, drawn };
        });
        if (i > 0) splits.push(split);
        const ticks = await page.$$eval('#timeline .tick', t => t.length);
        if (ticks !== N) throw new Error(`the timeline shows ${ticks} entries, not ${N}`);
        await page.close();
        if (i > 0) load.push(ms); // round 0 warms the browser's caches of its own
    }
    const result = {
        compactions: N, units_per_compaction: UNITS, rounds: ROUNDS, events_bytes: bytes,
        page_load_ms: { median: median(splits.map(x => x.drawn)), max: Math.max(...splits.map(x => x.drawn)),
            all: splits.map(x => x.drawn) },
        wall_clock_ms: { median: median(load), max: Math.max(...load), all: load },
        one_compaction_ms: { median: median(small), all: small },
        ratio_to_one_compaction: median(splits.map(x => x.drawn)) / median(small),
        events_fetch_ms: { median: median(floor), all: floor },
        ratio_to_fetch: median(splits.map(x => x.drawn)) / median(floor),
        in_page_ms: {
            until_first_fetch: median(splits.map(x => x.started)),
            events_first_byte: median(splits.map(x => x.first_byte)),
            events_fetch: median(splits.map(x => x.fetch)),
            parse_and_render: median(splits.map(x => x.render)),
        },
        target_ms: 200,
    };
    fs.mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'bench', 'results', 'ui.json'), JSON.stringify(result, null, 2) + '\n');
    console.log(`inspector page, ${N} compactions of ${UNITS} units (${(bytes / 1e6).toFixed(1)} MB of log), ${ROUNDS} rounds:`);
    console.log(`  page load (navigation start to the session drawn, by the page's clock): median ${result.page_load_ms.median.toFixed(0)} ms, worst ${result.page_load_ms.max.toFixed(0)} ms (target < 200 ms)`);
    console.log(`  the same page for a session of 1 compaction, in the same rounds: median ${result.one_compaction_ms.median.toFixed(0)} ms; ${N} / 1 = ${result.ratio_to_one_compaction.toFixed(2)}x`);
    console.log(`  from the driver (goto to the units seen over the DevTools protocol): median ${result.wall_clock_ms.median.toFixed(0)} ms, worst ${result.wall_clock_ms.max.toFixed(0)} ms`);
    const p = result.in_page_ms;
    console.log(`  in the page (medians): script starts the fetch at ${p.until_first_fetch.toFixed(0)} ms, first byte after ${p.events_first_byte.toFixed(0)} ms, whole log after ${p.events_fetch.toFixed(0)} ms, parse and draw ${p.parse_and_render.toFixed(0)} ms`);
    console.log(`  /events fetches alone, from node: median ${result.events_fetch_ms.median.toFixed(0)} ms; page / fetch = ${result.ratio_to_fetch.toFixed(2)}x`);
} finally {
    if (chrome) await chrome.close();
    await c.stop();
    await redis.stop();
}
