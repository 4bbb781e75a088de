// The packaged artifact: `npm pack`, the tarball installed into a fresh
// temporary project, and the README's quick starts run there (extracted from
// the README, not copied) against compactd and the loopback mock provider.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis, CompactdServer } from './servers.mjs';
import { startMockProvider } from '../../../tests/clients/mock_provider.mjs';

const PKG = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const README = fs.readFileSync(path.join(PKG, 'README.md'), 'utf8');
const LOG = 'ld: undefined reference to `retry_limit\' — é ✓ 🚀\r\n\tat invoice.o\n'.repeat(50);
let redis, server, mock, project;

/** The commands of the ```sh block right after `<!-- install -->` in the README, comments cut. */
export function installLines(readme) {
    const m = /<!-- install -->\s*```sh\n([\s\S]*?)```/.exec(readme);
    assert.ok(m, 'no install block in the README');
    return m[1].split('\n').map(l => l.replace(/\s+#.*$/, '').trim()).filter(Boolean);
}

/** The ```js block right after `<!-- quickstart:NAME -->` in the README. */
export function quickStart(readme, name) {
    const m = new RegExp(`<!-- quickstart:${name} -->\\s*\`\`\`js\\n([\\s\\S]*?)\`\`\``).exec(readme);
    assert.ok(m, `no quick start ${name} in the README`);
    return m[1];
}

before(async () => {
    redis = await Redis.start();
    server = await CompactdServer.start(redis);
    mock = await startMockProvider();
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-npm-'));
    // prepack builds (types generated from openapi.yaml, then tsc) before packing.
    execFileSync('npm', ['pack', '--loglevel=error', '--pack-destination', project], { cwd: PKG, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarballs = fs.readdirSync(project).filter(f => f.endsWith('.tgz'));
    assert.deepEqual(tarballs, ['compactd-0.1.0.tgz']);
    const tarball = path.join(project, tarballs[0]);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'quick-start', private: true, type: 'module' }));
    // The README's install line, the tarball's path for its own, with no
    // registry within reach and an empty cache: it must need neither.
    const [pack, install] = installLines(README);
    assert.match(pack, /^\(cd clients\/typescript && npm ci && npm pack\)$/);
    const words = install.split(/\s+/);
    assert.equal(path.basename(words.at(-1)), tarballs[0]);
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-npm-cache-'));
    try {
        execFileSync(words[0], [...words.slice(1, -1), '--no-audit', '--no-fund', '--loglevel=error', tarball],
            { cwd: project, stdio: 'inherit', env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_cache: cache } });
    } finally {
        fs.rmSync(cache, { recursive: true, force: true });
    }
    // The provider SDKs the quick starts import, from this package's locked devDependencies.
    for (const sdk of ['openai', '@anthropic-ai/sdk', 'langchain', '@langchain/core', '@langchain/openai']) {
        fs.mkdirSync(path.dirname(path.join(project, 'node_modules', sdk)), { recursive: true });
        fs.symlinkSync(path.join(PKG, 'node_modules', sdk), path.join(project, 'node_modules', sdk), 'dir');
    }
    fs.writeFileSync(path.join(project, 'build.log'), LOG);
});

after(async () => {
    await mock?.close();
    await server?.stop();
    await redis?.stop();
    if (project) fs.rmSync(project, { recursive: true, force: true });
});

test('the tarball holds the built ESM, its types and the README, and no sources of tests', () => {
    const installed = path.join(project, 'node_modules', 'compactd');
    const meta = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    assert.equal(meta.private, false);
    assert.equal(meta.license, 'MIT');
    assert.deepEqual(meta.dependencies ?? {}, {});
    for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/openai.js', 'dist/anthropic.d.ts', 'dist/langchain.js',
                     'dist/generated/openapi.d.ts', 'README.md'])
        assert.ok(fs.existsSync(path.join(installed, f)), f);
    assert.ok(!fs.existsSync(path.join(installed, 'test')));
    assert.ok(!fs.existsSync(path.join(installed, 'src')));
});

test('the README states the Node versions the package and the SDKs it works with declare', () => {
    const floor = v => Number(/>=\s*v?(\d+)/.exec(v ?? '')?.[1]);
    const meta = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));
    const own = floor(meta.engines.node);
    assert.match(README, new RegExp(`Node ${own}\\+ \\(its \`engines\`\\)`));
    // "`openai` 7 and `@langchain/openai` 1 declare Node 22+, `x` 1 ... Node 20+.": each SDK, its major, its Node.
    const sentence = /may ask for more: ([^.]*)\./.exec(README.replace(/\s+/g, ' '))?.[1];
    assert.ok(sentence, 'no sentence on the SDKs\' Node versions');
    const stated = new Map();
    for (const [, group, node] of sentence.matchAll(/(.*?)Node (\d+)\+,? ?/g))
        for (const [, sdk, major] of group.matchAll(/`([^`]+)` (\d+)/g)) stated.set(sdk, [Number(major), Number(node)]);
    const sdks = Object.keys(meta.peerDependencies);
    assert.deepEqual([...stated.keys()].sort(), [...sdks].sort());
    for (const sdk of sdks) {
        const installed = JSON.parse(fs.readFileSync(path.join(PKG, 'node_modules', sdk, 'package.json'), 'utf8'));
        // An SDK that declares no engines takes the package's own floor.
        const node = Math.max(own, floor(installed.engines?.node) || own);
        assert.deepEqual(stated.get(sdk), [Number(installed.version.split('.')[0]), node], sdk);
        const range = meta.peerDependencies[sdk];
        if (range) assert.equal(Number(/\^(\d+)/.exec(range)[1]), stated.get(sdk)[0], `${sdk}: the peer range's major`);
    }
});

test('a strict TypeScript consumer compiles against the installed types', () => {
    fs.writeFileSync(path.join(project, 'consumer.ts'), `
import { CompactionFailure, type CompactResult, type Spill } from 'compactd';
import { Compactd } from 'compactd/openai';
import type OpenAI from 'openai';
const c = new Compactd({ baseUrl: 'http://127.0.0.1:1', fetch });
export async function f(h: OpenAI.Chat.ChatCompletionMessageParam[]): Promise<number> {
  const r: CompactResult = await c.compactUnits('s', [{ key: 'k', class: 'protected', text: 't' }], 10);
  const s: Spill = await c.getSpill('s', 'k');
  const { messages } = await c.compactMessages('s', h, 100, { format: 'openai' });
  const first: OpenAI.Chat.ChatCompletionMessageParam | undefined = messages[0];
  const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'hi' }];
  const compacted = await c.compactMessages('s', input, 100, { format: 'openai-responses', instructions: 'Be brief.' });
  const items: OpenAI.Responses.ResponseInputItem[] = compacted.messages;
  const tool: OpenAI.Responses.FunctionTool = c.responses.tool;
  const response = { output: [] } as unknown as OpenAI.Responses.Response;
  items.push(...await c.responses.turn('s', response, { read_file: () => 'text' }));
  const instructions: string | undefined = compacted.instructions;
  try { await c.compactUnits('s', [], 1); } catch (e) { if (e instanceof CompactionFailure) return e.requiredBudget; }
  return r.used_tokens + s.tokens + (first ? 1 : 0) + items.length + tool.name.length + (instructions ?? '').length;
}
`);
    const tsc = spawnSync(path.join(PKG, 'node_modules', '.bin', 'tsc'),
        ['--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', 'consumer.ts'],
        { cwd: project, encoding: 'utf8' });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});

/** Installs the tarball into a new project as the README says, no registry within reach and an empty cache. */
function installInto(dir) {
    const tarball = path.join(project, 'compactd-0.1.0.tgz');
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'bare', private: true, type: 'module' }));
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-npm-cache-'));
    try {
        execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
            { cwd: dir, stdio: 'inherit', env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_cache: cache } });
    } finally {
        fs.rmSync(cache, { recursive: true, force: true });
    }
}

function tsc(dir, file) {
    // No --skipLibCheck: every declaration the package ships is compiled, and what it imports must be there.
    return spawnSync(path.join(PKG, 'node_modules', '.bin', 'tsc'),
        ['--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
         '--lib', 'es2022,dom', file], { cwd: dir, encoding: 'utf8' });
}

test('the core entry point needs no provider SDK: its types compile and it runs where none is installed', async () => {
    const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'compactd-bare-'));
    try {
        installInto(bare);
        for (const sdk of ['openai', '@anthropic-ai/sdk', 'langchain', '@langchain/core'])
            assert.ok(!fs.existsSync(path.join(bare, 'node_modules', sdk)), `${sdk} is installed`);
        fs.writeFileSync(path.join(bare, 'core.ts'), `
import { Compactd, CompactionFailure, reacquireToolFor, type CompactResult, type JsonMessage } from 'compactd';
const c = new Compactd({ baseUrl: 'http://127.0.0.1:1', fetch });
export async function f(h: JsonMessage[]): Promise<number> {
  const r: CompactResult = await c.compactUnits('s', [{ key: 'k', class: 'protected', text: 't' }], 10);
  const { messages, system } = await c.compactMessages('s', h, 100, { format: 'anthropic', system: 'Be brief.' });
  const tool = reacquireToolFor('openai-responses');
  try { await c.compactUnits('s', [], 1); } catch (e) { if (e instanceof CompactionFailure) return e.requiredBudget; }
  return r.used_tokens + messages.length + (typeof system === 'string' ? 1 : 0) + tool.name.length;
}
`);
        const core = tsc(bare, 'core.ts');
        assert.equal(core.status, 0, core.stdout + core.stderr);
        // The SDK's entry point is what needs the SDK: without it, tsc says so.
        fs.writeFileSync(path.join(bare, 'sdk.ts'), "import { Compactd } from 'compactd/openai';\nexport const c = new Compactd();\n");
        const sdk = tsc(bare, 'sdk.ts');
        assert.notEqual(sdk.status, 0);
        assert.match(sdk.stdout + sdk.stderr, /Cannot find module 'openai'/);
        const run = spawnSync(process.execPath, ['--input-type=module', '-e',
            "const m = await import('compactd'); console.log(JSON.stringify(m.reacquireToolFor('anthropic').name));"],
            { cwd: bare, encoding: 'utf8' });
        assert.equal(run.status, 0, run.stderr);
        assert.equal(run.stdout.trim(), '"reacquire"');
    } finally {
        fs.rmSync(bare, { recursive: true, force: true });
    }
});

// Runs a quick start as its own node process (asynchronously: the mock provider answers from this one).
async function runQuickStart(name, env) {
    const file = path.join(project, `quickstart-${name}.mjs`);
    fs.writeFileSync(file, quickStart(README, name));
    const before = mock.requests.length;
    const child = spawn(process.execPath, [file], { cwd: project, env: { ...process.env, COMPACTD_URL: server.base, ...env } });
    let stdout = '', stderr = '';
    child.stdout.on('data', d => { stdout += d; });
    child.stderr.on('data', d => { stderr += d; });
    const code = await new Promise(resolve => child.on('close', resolve));
    assert.equal(code, 0, stdout + stderr);
    assert.equal(stderr, '', 'the quick start wrote to stderr');
    return { history: JSON.parse(stdout), requests: mock.requests.slice(before) };
}

/** The lines of a quick start that mention compactd, the model call's line aside. */
export function glueLines(code, modelCall) {
    const lines = code.split('\n').filter(l => l.trim() !== '');
    const model = lines.filter(l => l.includes(modelCall));
    assert.equal(model.length, 1, `one line calls ${modelCall}`);
    return lines.filter(l => /compactd/i.test(l) && !model.includes(l));
}

test('the glue counter counts what mentions compactd and nothing else', () => {
    const code = "import { Compactd } from 'compactd';\nconst c = new Compactd();\n\nconst r = await m.create({ tools: [c.tool], compactd: 1 });\nlog(r);\n";
    assert.deepEqual(glueLines(code, 'm.create('), ["import { Compactd } from 'compactd';", 'const c = new Compactd();']);
    assert.throws(() => glueLines(code, 'other.create('), /one line calls/);
});

// The provider quick starts: the model call each one makes, and the environment that points its SDK at the mock.
const PROVIDERS = [
    ['openai', 'openai.chat.completions.create(', { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: () => mock.url + '/v1' }],
    ['openai-responses', 'openai.responses.create(', { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: () => mock.url + '/v1' }],
    ['anthropic', 'anthropic.messages.create(', { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: () => mock.url }],
];

/** The tool results of a quick start's history, in order. */
function toolResults(name, history) {
    if (name === 'openai') return history.filter(m => m.role === 'tool').map(m => m.content);
    if (name === 'openai-responses') return history.filter(i => i.type === 'function_call_output').map(i => i.output);
    return history.flatMap(m => Array.isArray(m.content) ? m.content : []).filter(b => b.type === 'tool_result').map(b => b.content);
}

for (const [name, modelCall, env] of PROVIDERS) {
    test(`the ${name} quick start: at most 5 lines of compactd beyond the model call`, () => {
        const glue = glueLines(quickStart(README, name), modelCall);
        assert.ok(glue.length <= 5, `compactd glue lines: ${glue.length}\n${glue.join('\n')}`);
        // The budget holds the tool definitions too: the compaction is given the model call's tools.
        assert.match(glue.find(l => l.includes('compactMessages(')), /[{,] tools }\);$/);
        assert.match(quickStart(README, name).split('\n').find(l => l.includes(modelCall)), /\btools }\)/);
    });

    test(`the ${name} quick start runs from the installed tarball: the model reacquires the spilled log byte for byte`, async () => {
        const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, typeof v === 'function' ? v() : v]));
        const { history, requests } = await runQuickStart(name, resolved);
        assert.equal(requests.length, 2, JSON.stringify(requests).slice(0, 3000));
        for (const r of requests) {
            assert.equal(r.api, name);
            assert.equal(r.error, null);
        }
        // The first call saw the pointer, not the log.
        const first = JSON.stringify(requests[0].body.messages ?? requests[0].body.input);
        // The first user message, keyed by its digest (docs/chat.md).
        assert.match(first, /\[externalized msg-[0-9a-f]{16} sha256:[0-9a-f]{16}\]/);
        assert.ok(!first.includes('retry_limit'));
        // The reacquire result in the history is the spilled message, byte for byte.
        const results = toolResults(name, history);
        assert.deepEqual(results, [JSON.stringify(history[0])]);
        assert.equal(JSON.parse(results[0]).content, 'Why does the build fail?\n' + LOG);
        if (name === 'openai-responses') {
            // The response's output came back as it was, reasoning first, then the call's output.
            assert.deepEqual(history.slice(1).map(i => i.type), ['reasoning', 'function_call', 'function_call_output', 'message']);
            const second = requests[1].body.input.map(i => i.type ?? 'message');
            assert.deepEqual(second.slice(-3), ['reasoning', 'function_call', 'function_call_output']);
        }
    });
}

test('the LangChain quick start runs from the installed tarball: compacted calls, the reacquired tool message byte for byte', async () => {
    const before = mock.requests.length;
    const file = path.join(project, 'quickstart-langchain.mjs');
    fs.writeFileSync(file, quickStart(README, 'langchain'));
    const child = spawn(process.execPath, [file], { cwd: project,
        env: { ...process.env, COMPACTD_URL: server.base, OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: mock.url + '/v1' } });
    let stdout = '', stderr = '';
    child.stdout.on('data', d => { stdout += d; });
    child.stderr.on('data', d => { stderr += d; });
    const code = await new Promise(resolve => child.on('close', resolve));
    assert.equal(code, 0, stdout + stderr);
    const requests = mock.requests.slice(before);
    assert.deepEqual(requests.map(r => [r.api, r.error]), [['openai', null], ['openai', null], ['openai', null]]);
    assert.match(JSON.stringify(requests[1].body.messages), /\[externalized [A-Za-z0-9_.-]+\.result sha256:[0-9a-f]{16}\]/);
    const messages = JSON.parse(stdout);
    const read = messages.find(m => m.type === 'tool' && m.name === 'read_file');
    assert.equal(read.content, LOG);
    const reacquired = messages.find(m => m.type === 'tool' && m.name === 'reacquire');
    assert.equal(JSON.parse(reacquired.content).content, LOG);
    assert.equal(messages.at(-1).content, 'done; called reacquire, read_file');
});
