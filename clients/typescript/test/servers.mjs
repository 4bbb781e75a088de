// Servers and recording for the client tests: a private redis-server and
// compactd (tests/servers.mjs), and a fetch that records every answer so
// the suite can hold them to openapi.yaml afterwards.
import fs from 'node:fs';
export { Redis, Compactd as CompactdServer, ROOT, freePort } from '../../../tests/servers.mjs';

/** Every (method, path, status, content type, body) compactd answered through recordingFetch. */
export const exchanges = [];

export const recordingFetch = async (url, init) => {
    const res = await fetch(url, init);
    const body = await res.clone().text();
    const u = new URL(url);
    exchanges.push({ method: init?.method ?? 'GET', path: u.pathname + u.search, status: res.status,
                     content_type: res.headers.get('content-type'), body });
    return res;
};

/** Writes the recorded exchanges where COMPACTD_EXCHANGES_OUT says (the ctest driver validates them). */
export function writeExchanges() {
    const out = process.env.COMPACTD_EXCHANGES_OUT;
    if (out) fs.writeFileSync(out, JSON.stringify(exchanges));
}
