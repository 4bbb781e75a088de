// Checks compactd's answers to the SDKs' own histories (sdk_histories.mjs):
//   node sdk_check.mjs <cases.json>
// cases.json: [{"name", "history": {format, messages, origin, system?},
//               "answer", "spills": {key: text}}]
// For each: the providers' pairing rules (validate.mjs); every message kept
// is its input byte for byte, pass-through fields and all; every spill holds
// its input byte for byte (a finished turn less the thinking the API strips);
// every thinking block is in a message that is its input unchanged, in input
// order, and the thinking of the tool-use loop in flight is there; then one tsc run over every answer, response messages
// typed as the SDKs' response types (as an agent pushes them back) and the
// rest as request params.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { validate } from "./validate.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const isThinking = (b) => b && (b.type === "thinking" || b.type === "redacted_thinking");
const thinks = (m) => Array.isArray(m.content) && m.content.some(isThinking);

// The assistant turns after the last user turn that is not tool results
// alone: the loop whose thinking must go back unchanged.
function inFlight(messages) {
  let i = messages.length;
  const resultsOnly = (m) => Array.isArray(m.content) && m.content.every((b) => b.type === "tool_result");
  while (i > 0 && !(messages[i - 1].role === "user" && !resultsOnly(messages[i - 1]))) i--;
  return messages.map((m, j) => j >= i && m.role === "assistant" && thinks(m));
}

function problemsOf(c) {
  const { history: h, answer: a } = c;
  const problems = validate(h.format, a.messages);
  const pinned = inFlight(h.messages);
  // A finished turn's thinking goes (the API strips it unread): such a turn
  // is its input less the thinking blocks that opened it, and only those.
  const sent = h.messages.map((m, i) => {
    const n = a.decisions[i]?.thinking_dropped ?? 0;
    if (n === 0) return JSON.stringify(m);
    if (pinned[i] || !m.content.slice(0, n).every(isThinking) || isThinking(m.content[n]))
      problems.push(`message ${i}: thinking_dropped ${n} is not the thinking of a finished turn`);
    return JSON.stringify({ ...m, content: m.content.slice(n) });
  });
  h.messages.forEach((m, i) => {
    if (!pinned[i] && m.role === "assistant" && thinks(m) && a.decisions[i]?.decision === "preserved" &&
        !a.decisions[i].thinking_dropped && m.content.some((b) => !isThinking(b)))
      problems.push(`message ${i}: a finished turn's thinking was sent back`);
  });
  if (a.decisions.length !== h.messages.length) problems.push("not one decision per message");
  let lastThinking = -1;
  a.messages.forEach((m, j) => {
    const s = JSON.stringify(m);
    const from = sent.indexOf(s);
    if (thinks(m)) {
      if (from < 0) problems.push(`[${j}] a message with thinking that is no input message unchanged`);
      else if (from <= lastThinking) problems.push(`[${j}] thinking out of order`);
      else lastThinking = from;
    }
  });
  a.decisions.forEach((d) => {
    if (d.decision === "preserved" && !a.messages.some((m) => JSON.stringify(m) === sent[d.index]) &&
        !(h.format === "anthropic" && h.messages[d.index].role === "user"))
      problems.push(`message ${d.index} preserved but not in the answer byte for byte`);
    if (d.decision === "externalized" && c.spills[d.key] !== sent[d.index])
      problems.push(`spill ${d.key} of message ${d.index} is not its input byte for byte`);
    if (pinned[d.index] && d.decision !== "preserved")
      problems.push(`message ${d.index}, thinking of the loop in flight, was ${d.decision}`);
  });
  if (h.format === "anthropic" && a.system !== undefined &&
      JSON.stringify(a.system) !== JSON.stringify(h.system)) problems.push("system changed");
  return problems;
}

// ---- tsc ----

function tsOf(c, k) {
  const { history: h, answer: a } = c;
  const sent = h.messages.map((m) => JSON.stringify(m));
  const out = [];
  const items = a.messages.map((m, j) => {
    const from = sent.indexOf(JSON.stringify(m));
    if (from >= 0 && h.origin[from] === "response") {
      const v = `r${k}_${j}`;
      if (h.format === "openai") out.push(`const ${v}: ChatCompletionMessage = ${JSON.stringify(m)};`);
      else out.push(`const ${v}: { role: "assistant"; content: ContentBlock[] } = ${JSON.stringify(m)};`);
      return v;
    }
    if (h.format === "openai" && m.role === "tool" && "name" in m) {
      // LangChain writes a tool message's name, which the API ignores and
      // the SDK's param type does not list: that one member, and no other.
      const v = `t${k}_${j}`;
      out.push(`const ${v}: ChatCompletionToolMessageParam & { name: string } = ${JSON.stringify(m)};`);
      return v;
    }
    return JSON.stringify(m);
  });
  const type = h.format === "openai" ? "ChatCompletionMessageParam[]" : "MessageParam[]";
  out.push(`export const c${k}: ${type} = [${items.join(",\n  ")}];`);
  return out.join("\n");
}

function typeCheck(cases) {
  const ts = [
    'import type { ChatCompletionMessage, ChatCompletionMessageParam, ChatCompletionToolMessageParam } from "openai/resources/chat/completions";',
    'import type { ContentBlock, MessageParam } from "@anthropic-ai/sdk/resources/messages";',
    ...cases.map(tsOf)];
  const dir = mkdtempSync(join(here, ".tsc-"));
  try {
    writeFileSync(join(dir, "histories.ts"), ts.join("\n") + "\n");
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: {
      strict: true, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext",
      skipLibCheck: true, types: [] }, files: ["histories.ts"] }));
    execFileSync(process.execPath, [join(here, "node_modules/typescript/bin/tsc"), "-p", dir], { stdio: "inherit" });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failed = 0;
for (const c of cases) {
  const problems = problemsOf(c);
  const kinds = [...new Set(c.answer.decisions.map((d) => d.decision))].join(",");
  console.log(`${problems.length ? "FAIL" : "ok  "} ${c.name} budget ${c.answer.budget}: ${c.answer.messages.length} messages (${kinds})`);
  for (const p of problems) console.log(`     ${p}`);
  if (problems.length) failed++;
}
if (typeCheck(cases)) console.log(`ok   tsc: ${cases.length} answers against the openai and @anthropic-ai/sdk types`);
else { console.log("FAIL tsc"); failed++; }
process.exit(failed ? 1 : 0);
