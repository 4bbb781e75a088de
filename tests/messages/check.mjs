// Checks compactd's compacted histories with the providers' own clients:
//   node check.mjs <cases.json>
// cases.json: [{"name", "format", "input": {messages, system?}, "answer", "spills": {key: text}}]
// For each case: an independent pair validator; the exact token count of the
// rendered text (gpt-tokenizer, o200k_base) within used_tokens, and the byte
// count by the README's pricing rule; every protected message verbatim or
// behind a pointer whose spill holds it byte for byte; for OpenAI, LangChain's
// round trip (@langchain/core coercion, @langchain/openai conversion). Then
// one tsc run type-checks every history against the official SDK types.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { coerceMessageLikeToMessage } from "@langchain/core/messages";
import { convertMessagesToCompletionsMessageParams } from "@langchain/openai";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { validate } from "./validate.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const FRAME = 4; // README: framing tokens per message

// ---- Pricing rule (README): every text a message renders, plus framing ----

function texts(format, m) {
  const t = [m.role];
  const content = (c) => {
    if (typeof c === "string") t.push(c);
    else if (Array.isArray(c)) for (const p of c) {
      if (p.type === "text") t.push(p.text);
      else if (p.type === "refusal") t.push(p.refusal);
      else if (p.type === "tool_use") t.push(p.id, p.name, JSON.stringify(p.input));
      else if (p.type === "tool_result") { t.push(p.tool_use_id); if (p.content !== undefined) content(p.content); }
    }
  };
  content(m.content);
  if (format === "openai") {
    if (m.name) t.push(m.name);
    if (m.refusal) t.push(m.refusal);
    if (m.tool_call_id) t.push(m.tool_call_id);
    for (const c of m.tool_calls || []) t.push(c.id, c.function.name, c.function.arguments);
  }
  return t;
}

function priced(format, answer, count) {
  let total = 0;
  for (const m of answer.messages) total += FRAME + texts(format, m).reduce((s, x) => s + count(x), 0);
  if (answer.system !== undefined) {
    const sys = typeof answer.system === "string" ? [answer.system] : answer.system.map((b) => b.text);
    total += FRAME + sys.reduce((s, x) => s + count(x), 0);
  }
  return total;
}

// ---- LangChain round trip ----

function normalizeOpenAI(m) {
  const text = (c) => (c === null || c === undefined ? "" : typeof c === "string" ? c
    : c.map((p) => p.text ?? "").join(""));
  const out = { role: m.role, content: text(m.content) };
  if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
  if (m.tool_calls && m.tool_calls.length)
    out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name,
      args: JSON.parse(c.function.arguments) }));
  return out;
}

function langchainRoundTrip(messages) {
  const base = messages.map((m) => coerceMessageLikeToMessage(m));
  const back = convertMessagesToCompletionsMessageParams({ messages: base, model: "gpt-4o" });
  const problems = [];
  if (back.length !== messages.length) problems.push(`round trip has ${back.length} messages, not ${messages.length}`);
  messages.forEach((m, i) => {
    if (!isDeepStrictEqual(normalizeOpenAI(m), normalizeOpenAI(back[i] || {})))
      problems.push(`[${i}] changed by the round trip: ${JSON.stringify(m).slice(0, 200)} -> ${JSON.stringify(back[i]).slice(0, 200)}`);
  });
  return problems;
}

// ---- Protected messages ----

function allText(m) {
  return JSON.stringify(m); // pointers are plain ASCII: found in any serialization
}

// Narration whose calls went with their results: the message without its
// calls (docs/chat.md, Narration).
function withoutCalls(format, m) {
  if (format === "openai") {
    const { tool_calls, ...rest } = m;
    return rest;
  }
  return { ...m, content: m.content.filter((b) => b.type !== "tool_use") };
}

function callsOf(m) {
  return (m.tool_calls ?? []).length + (Array.isArray(m.content) ? m.content.filter((b) => b.type === "tool_use").length : 0);
}

// A message as the model reads it: where Anthropic cache_control breakpoints
// sit is no part of it (compactd moves them to blocks that are kept), and a
// string content is one text block.
function uncached(format, m) {
  if (format !== "anthropic") return m;
  const strip = (b) => {
    const { cache_control, ...rest } = b;
    return Array.isArray(rest.content) ? { ...rest, content: rest.content.map(strip) } : rest;
  };
  const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content.map(strip);
  return { ...m, content };
}

function protectedKept(c) {
  const problems = [];
  const out = c.answer.messages.map((m) => uncached(c.format, m));
  c.answer.decisions.forEach((d) => {
    if (d.class !== "protected") return;
    let original = c.input.messages[d.index];
    if (d.calls_dropped !== undefined) {
      if (d.calls_dropped !== callsOf(original)) problems.push(`narration ${d.index}: calls_dropped ${d.calls_dropped} of ${callsOf(original)} calls`);
      if (d.decision === "preserved") original = withoutCalls(c.format, original);
    }
    const sent = original;
    original = uncached(c.format, original);
    if (d.decision === "preserved") {
      const same = out.some((m) => isDeepStrictEqual(m, original) ||
        // Anthropic: a loss marker may end the turn as an extra text block.
        (c.format === "anthropic" && m.role === original.role && Array.isArray(m.content) &&
         isDeepStrictEqual(m.content.slice(0, typeof original.content === "string" ? 1 : original.content.length),
           typeof original.content === "string" ? [{ type: "text", text: original.content }] : original.content)));
      if (!same) problems.push(`protected message ${d.index} is not in the output verbatim`);
    } else if (d.decision === "externalized") {
      if (!out.some((m) => allText(m).includes(d.pointer))) problems.push(`pointer of ${d.index} is not in the output`);
      const spill = c.spills[d.key];
      // The driver sent the history as JSON.stringify writes it.
      if (spill !== JSON.stringify(sent)) problems.push(`spill of ${d.index} does not hold the message byte for byte`);
    } else {
      problems.push(`protected message ${d.index} was ${d.decision}`);
    }
  });
  return problems;
}

// ---- Main ----

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failed = 0, passed = 0;
const ts = ['import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";',
  'import type { MessageParam, TextBlockParam } from "@anthropic-ai/sdk/resources/messages";'];
cases.forEach((c, k) => {
  const a = c.answer;
  const problems = [...validate(c.format, a.messages), ...protectedKept(c)];
  if (a.used_tokens > a.budget) problems.push(`used_tokens ${a.used_tokens} > budget ${a.budget}`);
  if (a.decisions.length !== c.input.messages.length) problems.push("not one decision per message");
  const exact = priced(c.format, a, (s) => countTokens(s));
  if (exact > a.used_tokens) problems.push(`o200k_base count ${exact} exceeds used_tokens ${a.used_tokens}`);
  const bytes = priced(c.format, a, (s) => Buffer.byteLength(s, "utf8"));
  // Under the request's tokenizer the count is exact, except that a marker
  // appended to a turn is priced as a turn of its own (role + framing).
  const own = a.tokenizer === "o200k_base" ? { count: exact, role: countTokens("assistant") }
    : a.tokenizer === "bytes" ? { count: bytes, role: "assistant".length } : null;
  if (!own) problems.push(`no reference count for tokenizer ${a.tokenizer}`);
  else {
    const slack = c.format === "openai" ? 0 : a.marker_count * (FRAME + own.role);
    if (own.count > a.used_tokens || a.used_tokens - own.count > slack)
      problems.push(`${a.tokenizer} count ${own.count} does not match used_tokens ${a.used_tokens} (slack ${slack})`);
  }
  if (c.format === "openai") problems.push(...langchainRoundTrip(a.messages));
  if (c.format === "openai") ts.push(`export const c${k}: ChatCompletionMessageParam[] = ${JSON.stringify(a.messages)};`);
  else {
    ts.push(`export const c${k}: MessageParam[] = ${JSON.stringify(a.messages)};`);
    if (a.system !== undefined) ts.push(`export const s${k}: string | TextBlockParam[] = ${JSON.stringify(a.system)};`);
  }
  console.log(`${problems.length ? "FAIL" : "ok  "} ${c.name}: ${a.messages.length} messages, used ${a.used_tokens}/${a.budget}, o200k ${exact}, bytes ${bytes}`);
  for (const p of problems) console.log(`     ${p}`);
  problems.length ? failed++ : passed++;
});

// Inside this folder, so that the SDKs resolve from its node_modules.
const dir = mkdtempSync(join(here, ".tsc-"));
try {
  writeFileSync(join(dir, "histories.ts"), ts.join("\n") + "\n");
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: {
    strict: true, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext",
    skipLibCheck: true, types: [] }, files: ["histories.ts"] }));
  execFileSync(process.execPath, [join(here, "node_modules/typescript/bin/tsc"), "-p", dir], { stdio: "inherit" });
  console.log(`ok   tsc: ${cases.length} histories type-check against openai and @anthropic-ai/sdk`);
  passed++;
} catch (e) {
  console.log("FAIL tsc");
  failed++;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
