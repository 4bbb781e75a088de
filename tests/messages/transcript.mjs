// A realistic tool-using agent transcript from a fixed seed, in both
// provider formats: a coding agent fixing a failing build, with file reads,
// searches, test runs, parallel calls, a repeated identical read (superseded),
// directory listings (redundant by policy), an applied migration (protected
// by policy) and user follow-ups that state constraints.
//
//   node transcript.mjs <out-dir> [steps] [seed] [outputs]
// writes openai.json and anthropic.json ({"messages", "system"?}). steps is
// a count of agent steps, or a size such as 1000k: steps until the
// transcript holds about that many bytes (k = 1000). outputs is short (the
// default: a few dozen lines per tool result) or long (whole files read,
// full test logs: tool_outputs.mjs).

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { toolOutputs } from "./tool_outputs.mjs";

export function rng(seed) {
  // mulberry32: small, fast, and the same on every machine.
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILES = ["src/server.c", "src/plan.c", "src/store.c", "include/plan.h", "tests/test_plan.py",
  "docs/README.md", "src/i18n/messages_fr.po", "src/i18n/messages_zh.po", "migrations/0042_add_index.sql"];
const WORDS = ["budget", "token", "spill", "pointer", "planner", "redis", "session", "unit", "fixture",
  "assert", "résumé", "naïve", "café", "数据", "压缩", "🙂", "retry", "timeout=30s", "0x7fffdeadbeef",
  "/var/log/app.log", "https://example.com/ci/run/4411", "PID 48213", "uuid 3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b"];

// opts.bytes: stop once the steps hold about that many bytes of JSON
// (steps is then ignored); opts.outputs: "long" for tool_outputs.mjs's.
export function buildSteps(steps, seed, opts = {}) {
  const r = rng(seed);
  const long = opts.outputs === "long" ? toolOutputs(r) : null;
  let bytes = 0;
  const more = () => (opts.bytes ? bytes < opts.bytes : out.length < steps);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const code = (path, lines) => Array.from({ length: lines }, (_, i) =>
    `${String(i + 1).padStart(4)}  ${pick(["int", "static", "return", "if (", "for (", "/*"])} ${words(4)};`).join("\n");
  const out = [{ kind: "user", text: "Fix the failing build of compactd. Constraints: never push to main; " +
    "do not re-run migration 0042 once applied; keep the public API of include/plan.h unchanged." }];
  let callNo = 0, firstRead = null;
  const call = (name, args) => ({ id: `call_${String(++callNo).padStart(3, "0")}`, name, args });
  for (let s = 0; more(); s++) {
    const roll = r();
    const prev = out[out.length - 1];
    if (prev.kind === "say" && roll < 0.35) {
      out.push({ kind: "user", text: `Also: ${words(6)}. Keep the output of run_tests under 200 lines.` });
      continue;
    }
    if (roll < 0.15) {
      out.push({ kind: "say", text: `Status: ${words(12)}. Next I will look at ${pick(FILES)}.` });
      continue;
    }
    let calls;
    if (s === 6) {
      calls = [call("apply_migration", { name: "0042_add_index", dry_run: false })];
    } else if (roll < 0.25) {
      calls = [call("list_dir", { path: pick(["src", "tests", "include"]) })];
    } else if (roll < 0.32 && firstRead) {
      calls = [call("read_file", firstRead)]; // the same read again: supersedes the first
    } else if (roll < 0.6) {
      const n = 2 + Math.floor(r() * 2); // parallel calls
      calls = Array.from({ length: n }, () =>
        call("read_file", { path: pick(FILES), start_line: 1 + 40 * Math.floor(r() * 6) }));
    } else if (roll < 0.8) {
      calls = [call("grep", { pattern: pick(["plan_run", "store_commit", "TODO", "budget"]), path: "src" })];
    } else {
      calls = [call("run_tests", { suite: pick(["unit", "integration"]), verbose: r() < 0.5 })];
    }
    if (!firstRead && calls[0].name === "read_file") firstRead = calls[0].args;
    const results = calls.map((c) => {
      let text;
      if (long && long[c.name]) text = long[c.name](c.args);
      else if (c.name === "read_file") text = code(c.args.path, 8 + Math.floor(r() * 40));
      else if (c.name === "list_dir") text = FILES.filter((f) => f.startsWith(c.args.path)).join("\n");
      else if (c.name === "grep") text = Array.from({ length: 3 + Math.floor(r() * 10) },
        () => `${pick(FILES)}:${1 + Math.floor(r() * 400)}: ${words(5)}`).join("\n");
      else if (c.name === "apply_migration") text = "migration 0042_add_index applied at 2026-11-30T09:12:44Z (1 index created)";
      else text = `collected 42 items\n${words(20)}\nFAILED tests/test_plan.py::test_budget - assert 120 <= 100\n1 failed, 41 passed`;
      return { id: c.id, text, error: c.name === "run_tests" && r() < 0.5, parts: r() < 0.3 };
    });
    out.push({ kind: "tools", text: r() < 0.5 ? `Let me check ${words(3)}.` : null, calls, results });
    bytes += Buffer.byteLength(JSON.stringify(out[out.length - 1]));
  }
  out.push({ kind: "say", text: "The budget check was off by one; fixed in src/plan.c. All 42 tests pass." });
  out.push({ kind: "user", text: "Good. Summarize what changed and what is left." });
  return out;
}

export function toOpenAI(steps) {
  const messages = [{ role: "system", content: "You are a careful coding agent working in a git checkout." }];
  for (const st of steps) {
    if (st.kind === "user") messages.push({ role: "user", content: st.text });
    else if (st.kind === "say") messages.push({ role: "assistant", content: st.text });
    else {
      messages.push({ role: "assistant", content: st.text, tool_calls: st.calls.map((c) => ({
        id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } })) });
      for (const res of st.results)
        messages.push({ role: "tool", tool_call_id: res.id,
          content: res.parts ? [{ type: "text", text: res.text }] : res.text });
    }
  }
  return { messages };
}

export function toAnthropic(steps) {
  const messages = [];
  // Turns alternate: what the assistant says and then calls is one turn.
  const push = (role, content) => {
    const last = messages[messages.length - 1];
    if (!last || last.role !== role) return messages.push({ role, content });
    const blocks = (c) => (typeof c === "string" ? [{ type: "text", text: c }] : c);
    last.content = [...blocks(last.content), ...blocks(content)];
  };
  for (const st of steps) {
    if (st.kind === "user") push("user", st.text);
    else if (st.kind === "say") push("assistant", st.text);
    else {
      const blocks = st.text ? [{ type: "text", text: st.text }] : [];
      for (const c of st.calls) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: c.args });
      push("assistant", blocks);
      push("user", st.results.map((res) => {
        const b = { type: "tool_result", tool_use_id: res.id,
          content: res.parts ? [{ type: "text", text: res.text }] : res.text };
        if (res.error) b.is_error = true;
        return b;
      }));
    }
  }
  return { system: "You are a careful coding agent working in a git checkout.", messages };
}

// The command line of this generator and of responses_transcript.mjs.
export function stepsFromArgs(argv) {
  const [dir, steps = "56", seed = "20261201", outputs = "short"] = argv;
  const size = /^([0-9]+)k$/.exec(steps);
  if ((!size && !/^[0-9]+$/.test(steps)) || !["short", "long"].includes(outputs))
    throw new Error(`usage: <out-dir> [steps | <n>k] [seed] [short | long], not ${argv.join(" ")}`);
  const opts = { outputs, bytes: size ? Number(size[1]) * 1000 : 0 };
  return { dir, seed: Number(seed), steps: buildSteps(Number(steps), Number(seed), opts) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { dir, steps: st } = stepsFromArgs(process.argv.slice(2));
  writeFileSync(join(dir, "openai.json"), JSON.stringify(toOpenAI(st)));
  writeFileSync(join(dir, "anthropic.json"), JSON.stringify(toAnthropic(st)));
}
