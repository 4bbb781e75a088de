// Real servers for the MCP tests: a private redis-server and a compactd on
// free loopback ports in a temporary folder, stopped by pid.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
export const ROOT = path.resolve(here, '..', '..');
const COMPACTD = process.env.COMPACTD_BIN || path.join(ROOT, 'build', 'compactd');

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

async function waitFor(predicate, what, timeoutMs = 10000) {
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
    static async start() {
        const r = new Redis();
        r.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-mcp-redis-'));
        r.port = await freePort();
        // The suites' one way to start a test Redis.
        r.proc = spawn(path.join(ROOT, 'tests', 'redis', 'launch.sh'), [r.dir, String(r.port)],
            { stdio: 'ignore' });
        await waitFor(() => { try { return r.cli('PING') === 'PONG'; } catch { return false; } }, 'redis-server');
        return r;
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
        c.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-mcp-'));
        c.logPath = path.join(c.dir, 'stderr.log');
        const fullEnv = { ...process.env, COMPACTD_LISTEN: '127.0.0.1:0', COMPACTD_REDIS_URL: redis.url(),
            COMPACTD_LOG_LEVEL: 'info', ...env };
        if (keys) {
            const file = path.join(c.dir, 'keys');
            fs.writeFileSync(file, Object.entries(keys).map(([k, t]) => `${k} ${t}\n`).join(''));
            fullEnv.COMPACTD_API_KEYS_FILE = file;
        }
        const log = fs.openSync(c.logPath, 'w');
        c.proc = spawn(COMPACTD, [], { env: fullEnv, stdio: ['ignore', 'ignore', log] });
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

    // Stops compactd with SIGTERM; it must exit 0.
    async stop() {
        this.proc.kill('SIGTERM');
        const code = await exited(this.proc);
        const log = this.stderr();
        fs.rmSync(this.dir, { recursive: true, force: true });
        if (code !== 0) throw new Error(`compactd exited ${code} on SIGTERM:\n${log.slice(-5000)}`);
    }
}
