// Real servers for the node suites (MCP, the inspector page, the TypeScript
// client): a private redis-server (through the suites' one launcher) and a
// compactd on free loopback ports in temporary folders, stopped by pid, and
// killed when the process exits even on an uncaught error.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
export const ROOT = path.resolve(here, '..');
const COMPACTD = process.env.COMPACTD_BIN || path.join(ROOT, 'build', 'compactd');

// A server started here goes with this process even when it is killed (a
// timeout's SIGKILL runs no exit handler): setpriv has the kernel send it
// SIGKILL when the thread that spawned it ends (node spawns from its main
// thread) and execs the command, so the pid spawned is the server's.
const TIED = ['setpriv', '--pdeathsig', 'KILL', '--'];

// Whatever this process started is stopped when it exits, even on an
// uncaught error before a test's own stop() could run.
const started = new Set();
process.on('exit', () => {
    for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

function track(proc) {
    started.add(proc);
    proc.once('exit', () => started.delete(proc));
    return proc;
}

export function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

// A start is seconds on a loaded machine (compactd reads its rank files,
// each look at Redis runs redis-cli twice): the bound only ends a wait for
// a server that will never come.
async function waitFor(predicate, what, timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        if (await predicate()) return;
        await new Promise(r => setTimeout(r, 20));
    }
    throw new Error(`${what} did not start in ${timeoutMs} ms`);
}

function exited(proc) {
    return new Promise(resolve => {
        if (proc.exitCode !== null || proc.signalCode !== null) resolve(proc.exitCode);
        else proc.once('exit', code => resolve(code));
    });
}

export class Redis {
    // A free port is free only until somebody binds it: a start counts once
    // PING answers and INFO names the process spawned here, and a server that
    // exits first (its port taken meanwhile) is started again on another.
    static async start() {
        const r = new Redis();
        r.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-test-redis-'));
        for (let attempt = 0; attempt < 20; attempt++) {
            r.port = await freePort();
            // The suites' one way to start a test Redis.
            r.proc = track(spawn(TIED[0], [...TIED.slice(1), path.join(ROOT, 'tests', 'redis', 'launch.sh'),
                r.dir, String(r.port)], { stdio: 'ignore' }));
            const proc = r.proc;
            await waitFor(() => proc.exitCode !== null || proc.signalCode !== null || r.ours(),
                'redis-server');
            if (proc.exitCode === null && proc.signalCode === null) return r;
        }
        throw new Error('redis-server found no free port in 20 attempts');
    }

    ours() {
        try {
            return this.cli('PING') === 'PONG' &&
                this.cli('INFO', 'server').includes(`process_id:${this.proc.pid}\r`);
        } catch {
            return false;
        }
    }

    cli(...args) {
        return execFileSync('redis-cli', ['-p', String(this.port), '--raw', ...args], { stdio: ['ignore', 'pipe', 'ignore'] })
            .toString().replace(/\n$/, '');
    }

    url() {
        return `redis://127.0.0.1:${this.port}/0`;
    }

    async stop() {
        this.proc.kill('SIGTERM');
        await exited(this.proc);
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

export class Compactd {
    // env: extra environment; keys: {apiKey: tenant} written to an API keys file.
    static async start(redis, { env = {}, keys = null } = {}) {
        const c = new Compactd();
        c.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-test-'));
        c.logPath = path.join(c.dir, 'stderr.log');
        const fullEnv = { ...process.env, COMPACTD_LISTEN: '127.0.0.1:0', COMPACTD_REDIS_URL: redis.url(),
            COMPACTD_LOG_LEVEL: 'info', ...env };
        if (keys) {
            const file = path.join(c.dir, 'keys');
            fs.writeFileSync(file, Object.entries(keys).map(([k, t]) => `${k} ${t}\n`).join(''));
            fullEnv.COMPACTD_API_KEYS_FILE = file;
        }
        c.key = keys ? Object.keys(keys)[0] : null;
        const log = fs.openSync(c.logPath, 'w');
        c.proc = track(spawn(TIED[0], [...TIED.slice(1), COMPACTD],
            { env: fullEnv, stdio: ['ignore', 'ignore', log] }));
        fs.closeSync(log);
        await waitFor(() => {
            const m = /listening on \S+:(\d+)/.exec(c.stderr());
            if (m) c.port = Number(m[1]);
            if (c.proc.exitCode !== null) throw new Error('compactd exited:\n' + c.stderr());
            return Boolean(m);
        }, 'compactd');
        c.base = `http://127.0.0.1:${c.port}`;
        return c;
    }

    stderr() {
        return fs.readFileSync(this.logPath, 'utf8');
    }

    // fetch() against this compactd, with its first API key when it has keys.
    async request(method, route, body, headers = {}) {
        const h = { ...headers };
        if (this.key && !('Authorization' in h)) h.Authorization = 'Bearer ' + this.key;
        if (body !== undefined) h['Content-Type'] = 'application/json';
        const r = await fetch(this.base + route, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        return { status: r.status, headers: r.headers, text, json };
    }

    get(route, headers) { return this.request('GET', route, undefined, headers); }
    post(route, body, headers) { return this.request('POST', route, body, headers); }

    // Stops compactd with SIGTERM; it must exit 0.
    async stop() {
        this.proc.kill('SIGTERM');
        const code = await exited(this.proc);
        const log = this.stderr();
        fs.rmSync(this.dir, { recursive: true, force: true });
        if (code !== 0) throw new Error(`compactd exited ${code} on SIGTERM:\n${log.slice(-5000)}`);
    }
}

// Runs compactd with env until it exits (a start-up refusal); returns its
// exit code and stderr.
export function runCompactd(env) {
    try {
        execFileSync(COMPACTD, [], { env: { ...process.env, COMPACTD_LISTEN: '127.0.0.1:0', ...env },
            stdio: ['ignore', 'ignore', 'pipe'], timeout: 10000 });
        return { code: 0, stderr: '' };
    } catch (e) {
        return { code: e.status, stderr: String(e.stderr) };
    }
}
