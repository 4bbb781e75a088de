// Checks compactd's compacted Responses API inputs:
//   node responses_check.mjs <cases.json>
// cases.json: [{"name", "input": {instructions, input, responses}, "answer", "spills": {key: text}}]
// For each case: a structural validator written from the API's rules (not
// from compactd); every reasoning item byte-identical and in place, before
// the item that followed it; the exact o200k_base count (gpt-tokenizer) of
// what the answer renders equal to used_tokens under the README's pricing
// rule; protected items verbatim (a call or a message whose response's
// reasoning was dropped without its id), spills byte for byte. Then one tsc run
// type-checks every output as the openai SDK's ResponseInputItem[], and the
// transcript's input and its responses' output items as the SDK's types.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

const here = dirname(fileURLToPath(import.meta.url));
const FRAME = 4; // README: framing tokens per item

const CALLS = new Set(["function_call", "custom_tool_call"]);
const OUTPUTS = new Set(["function_call_output", "custom_tool_call_output"]);
const HOSTED = new Set(["web_search_call", "file_search_call", "code_interpreter_call",
  "image_generation_call", "computer_call", "local_shell_call", "mcp_call", "shell_call"]);
const INPUT_PARTS = new Set(["input_text", "input_image", "input_file"]);
const OUTPUT_PARTS = new Set(["output_text", "refusal"]);

const kind = (it) => it.type ?? "message";
const modelOutput = (it) => (kind(it) === "message" ? it.role === "assistant"
  : CALLS.has(kind(it)) || HOSTED.has(kind(it)) || kind(it) === "reasoning");

// ---- Structural validator ----

export function validate(items) {
  const problems = [];
  const calls = new Map(); // call_id -> answered
  items.forEach((it, i) => {
    const k = kind(it);
    if (k === "message") {
      if (!["user", "assistant", "system", "developer"].includes(it.role)) problems.push(`[${i}] role ${it.role}`);
      if (Array.isArray(it.content)) {
        for (const p of it.content) {
          const ok = it.role === "assistant" ? OUTPUT_PARTS.has(p.type) || p.type === "input_text" : INPUT_PARTS.has(p.type);
          if (!ok) problems.push(`[${i}] part ${p.type} in a ${it.role} message`);
        }
      } else if (typeof it.content !== "string") problems.push(`[${i}] content neither string nor parts`);
    } else if (CALLS.has(k)) {
      if (calls.has(it.call_id)) problems.push(`[${i}] call_id ${it.call_id} repeated`);
      calls.set(it.call_id, false);
      if (typeof it.name !== "string" || !it.name) problems.push(`[${i}] call without a name`);
      if (k === "function_call") {
        if (typeof it.arguments !== "string") problems.push(`[${i}] arguments not a string`);
        else try { JSON.parse(it.arguments); } catch { problems.push(`[${i}] arguments not JSON`); }
      }
    } else if (OUTPUTS.has(k)) {
      if (!calls.has(it.call_id)) problems.push(`[${i}] output of no earlier call: ${it.call_id}`);
      else if (calls.get(it.call_id)) problems.push(`[${i}] call ${it.call_id} answered twice`);
      else calls.set(it.call_id, true);
    } else if (k === "reasoning") {
      if (!Array.isArray(it.summary)) problems.push(`[${i}] reasoning without a summary array`);
      if (i + 1 >= items.length || !modelOutput(items[i + 1]))
        problems.push(`[${i}] reasoning without its following item`);
    }
  });
  for (const [id, answered] of calls) if (!answered) problems.push(`call ${id} has no output`);
  return problems;
}

// ---- Reasoning: byte-identical and in place ----

const ident = (it) => it && (it.id ?? it.call_id ?? null);

function reasoningInPlace(input, output) {
  const problems = [];
  const at = new Map(input.map((it, i) => [ident(it), i]));
  let last = -1;
  output.forEach((it, j) => {
    if (kind(it) !== "reasoning") return;
    const i = at.get(it.id);
    if (i === undefined) return problems.push(`[${j}] reasoning ${it.id} is not in the input`);
    if (JSON.stringify(it) !== JSON.stringify(input[i])) problems.push(`[${j}] reasoning ${it.id} edited`);
    if (i <= last) problems.push(`[${j}] reasoning ${it.id} moved before an earlier one`);
    last = i;
    if (ident(output[j + 1]) !== ident(input[i + 1]))
      problems.push(`[${j}] reasoning ${it.id} parted from ${ident(input[i + 1])}`);
  });
  return problems;
}

// ---- Pricing rule (README) ----

function texts(it) {
  const t = [];
  const parts = (c) => {
    if (typeof c === "string") return t.push(c);
    for (const p of c) if (p.type === "input_text" || p.type === "output_text") t.push(p.text);
    else if (p.type === "refusal") t.push(p.refusal);
  };
  const k = kind(it);
  if (k === "message") { t.push(it.role); parts(it.content); }
  else if (k === "function_call") t.push(it.call_id, it.name, it.arguments);
  else if (k === "custom_tool_call") t.push(it.call_id, it.name, it.input);
  else if (OUTPUTS.has(k)) { t.push(it.call_id); parts(it.output); }
  else return null; // priced by its bytes
  return t;
}

// A reasoning item's encrypted_content at one token per byte its base64
// decodes to, ceil(3 len / 4) (padding counted: a bound), the rest of the
// item as its JSON text (docs/chat.md).
function pricedReasoning(it, count) {
  const { encrypted_content: enc, ...rest } = it;
  return count(JSON.stringify(rest)) + Math.ceil((3 * enc.length) / 4);
}

function priced(answer, count) {
  let total = answer.instructions !== undefined ? FRAME + count(answer.instructions) : 0;
  for (const it of answer.messages) {
    const t = texts(it);
    total += FRAME + (t ? t.reduce((s, x) => s + count(x), 0)
      : kind(it) === "reasoning" && typeof it.encrypted_content === "string" ? pricedReasoning(it, count)
      : Buffer.byteLength(JSON.stringify(it), "utf8"));
  }
  return total;
}

// ---- Protected items and spills ----

/** The reasoning items of the response item i is part of, before it. */
function reasoningOfItem(input, i) {
  const out = [];
  for (let j = i - 1; j >= 0 && modelOutput(input[j]); j--) if (kind(input[j]) === "reasoning") out.push(j);
  return out;
}

/** Whether reasoning item j led to a hosted item with an id (the API links the two). */
function ledHosted(input, j) {
  for (let k = j + 1; k < input.length && modelOutput(input[k]); k++)
    if (HOSTED.has(kind(input[k])) && input[k].id !== undefined) return true;
  return false;
}

/**
 * An assistant message whose response's reasoning was dropped, as the API
 * takes it without that reasoning: an input message of its own, without
 * its id (the API refuses "Item 'msg_...' of type 'message' was provided
 * without its required 'reasoning' item") nor status, the texts of its
 * output_text and refusal parts as one string. A message with a part of
 * another kind stays as sent.
 */
function unlinkedMessage(it) {
  const text = (p) => (p.type === "output_text" ? p.text : p.type === "refusal" ? p.refusal : undefined);
  if (!Array.isArray(it.content) || !it.content.every((p) => typeof text(p) === "string")) return it;
  const { id, status, ...rest } = it;
  return { ...rest, content: it.content.map(text).join("") };
}

/**
 * Each item as it must be sent: as the caller sent it, but a call whose
 * response's reasoning was dropped goes without its id (the API refuses a
 * call whose id names a reasoning item that is not sent), and a message
 * as unlinkedMessage() makes it, and a hosted call is not sent at all; an
 * item that keeps its id has that reasoning in the output.
 */
function keptAsSent(c) {
  const problems = [];
  const out = c.answer.messages;
  const input = c.input.input;
  const dropped = new Set(c.answer.decisions.filter((d) => d.decision === "dropped").map((d) => d.index));
  c.answer.decisions.forEach((d) => {
    let original = input[d.index];
    let sent = null; // the spill's JSON where it is not original's
    const linked = original.id !== undefined && reasoningOfItem(input, d.index).some((j) => dropped.has(j));
    if (linked && CALLS.has(kind(original))) {
      const { id, ...rest } = original;
      original = rest;
      if (out.some((m) => m.call_id === original.call_id && m.id !== undefined))
        problems.push(`call ${d.index} keeps the id of a response whose reasoning was dropped`);
    } else if (linked && HOSTED.has(kind(original))) {
      // A hosted call needs its id (the input types require it), and the
      // API links that id to its response's reasoning as a call's.
      if (out.some((m) => m.id === original.id))
        problems.push(`hosted item ${d.index} is sent without the reasoning of its response`);
    } else if (linked && kind(original) === "message") {
      if (out.some((m) => m.id === original.id))
        problems.push(`message ${d.index} keeps the id of a response whose reasoning was dropped`);
      // A finished turn's is read so, and spilled so; the turn in flight's
      // is sent so while its reasoning is gone, and spilled as sent, as is
      // a finished turn's whose reasoning stays for a hosted item.
      const finished = input.slice(d.index + 1).some((m) => kind(m) === "message" && m.role === "user");
      const stale = finished && !reasoningOfItem(input, d.index).some((j) => ledHosted(input, j));
      if (!stale && d.decision === "externalized") sent = original;
      original = unlinkedMessage(original);
    }
    if (d.class === "protected" && d.decision === "preserved" && !out.some((m) => isDeepStrictEqual(m, original)))
      problems.push(`protected item ${d.index} is not in the output verbatim`);
    if (d.class === "protected" && d.decision === "dropped") problems.push(`protected item ${d.index} dropped`);
    if (d.decision === "externalized") {
      if (!out.some((m) => JSON.stringify(m).includes(d.pointer))) problems.push(`pointer of ${d.index} not in the output`);
      if (c.spills[`msg${d.index}`] !== JSON.stringify(sent ?? original)) problems.push(`spill of ${d.index} is not the item byte for byte`);
    }
  });
  return problems;
}

// ---- Main ----

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failed = 0, passed = 0;
const ts = ['import type { Response, ResponseInputItem } from "openai/resources/responses/responses";'];
cases.forEach((c, k) => {
  const a = c.answer;
  const problems = [...validate(a.messages), ...reasoningInPlace(c.input.input, a.messages), ...keptAsSent(c)];
  if (a.tokenizer !== "o200k_base") problems.push(`tokenizer ${a.tokenizer}, not the format's o200k_base`);
  if (a.used_tokens > a.budget) problems.push(`used_tokens ${a.used_tokens} > budget ${a.budget}`);
  if (a.decisions.length !== c.input.input.length) problems.push("not one decision per item");
  const exact = priced(a, (s) => countTokens(s));
  if (exact !== a.used_tokens) problems.push(`o200k_base count ${exact} is not used_tokens ${a.used_tokens}`);
  ts.push(`export const c${k}: ResponseInputItem[] = ${JSON.stringify(a.messages)};`);
  console.log(`${problems.length ? "FAIL" : "ok  "} ${c.name}: ${a.messages.length} items, used ${a.used_tokens}/${a.budget}, o200k ${exact}`);
  for (const p of problems) console.log(`     ${p}`);
  problems.length ? failed++ : passed++;
});
if (cases.length) {
  // What each response's output is, as the SDK types Response.output.
  ts.push(`export const outputs: Response["output"][] = ${JSON.stringify(cases[0].input.responses.map((r) => r.output))};`);
  ts.push(`export const input: ResponseInputItem[] = ${JSON.stringify(cases[0].input.input)};`);
}

// Inside this folder, so that the SDK resolves from its node_modules.
const dir = mkdtempSync(join(here, ".tsc-"));
try {
  writeFileSync(join(dir, "inputs.ts"), ts.join("\n") + "\n");
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: {
    strict: true, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext",
    skipLibCheck: true, types: [] }, files: ["inputs.ts"] }));
  execFileSync(process.execPath, [join(here, "node_modules/typescript/bin/tsc"), "-p", dir], { stdio: "inherit" });
  console.log(`ok   tsc: ${cases.length} inputs type-check as the openai SDK's ResponseInputItem[]`);
  passed++;
} catch (e) {
  console.log("FAIL tsc");
  failed++;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
