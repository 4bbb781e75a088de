// The inspector tests' browser, beside the shared servers (tests/servers.mjs):
// Debian's chromium driven by puppeteer-core with a fresh profile that
// reaches nothing but what the page asks for.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export { Redis, Compactd, runCompactd, ROOT } from '../servers.mjs';

export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

// The system chromium, headless, with a profile of its own: no sync, no
// component updates, no background requests, nothing downloaded.
export async function launchBrowser() {
    const { default: puppeteer } = await import('puppeteer-core');
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-ui-chromium-'));
    const browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        userDataDir: profile,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
            '--disable-background-networking', '--disable-component-update', '--disable-sync',
            `--user-data-dir=${profile}`],
        defaultViewport: { width: 1280, height: 900 },
    });
    return {
        browser,
        async close() {
            await browser.close();
            fs.rmSync(profile, { recursive: true, force: true });
        },
    };
}

// A page that records what it does that a test must be able to see: every
// request, dialogs (dismissed), console errors and uncaught exceptions.
export async function watchedPage(browser) {
    const page = await browser.newPage();
    const seen = { requests: [], dialogs: [], errors: [] };
    page.on('request', r => seen.requests.push(r.url()));
    page.on('dialog', d => { seen.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    page.on('console', m => { if (m.type() === 'error') seen.errors.push(m.text()); });
    page.on('pageerror', e => seen.errors.push(String(e)));
    return { page, seen };
}
