// Checks the reacquire tool an orchestrator wires into a provider's API:
//   node tools_check.mjs <case.json>
// case.json: {"base", "session", "pointer", "text"}: a compactd, a session,
// a pointer it holds and the exact text behind it.
// For each format, GET /tools gives the definition; a tool call as the
// provider's API hands it over (OpenAI's arguments string, Anthropic's
// input object, a Responses function_call) is sent to /reacquire and the
// tool result built from its answer must hold the text byte for byte. Then
// one tsc run type-checks every definition, call and result against the
// official SDK types (openai, @anthropic-ai/sdk).
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const c = JSON.parse(readFileSync(process.argv[2], "utf8"));
const sha = (s) => createHash("sha256").update(Buffer.from(s, "utf8")).digest("hex");
let failed = 0, passed = 0;
const report = (ok, what) => { console.log(`${ok ? "ok  " : "FAIL"} ${what}`); ok ? passed++ : failed++; };

async function definition(format) {
  const r = await fetch(`${c.base}/v1/sessions/${c.session}/tools?format=${format}`);
  const body = await r.json();
  report(r.status === 200 && body.tools.length === 1, `${format}: GET /tools answers one tool`);
  return body.tools[0];
}

// The tool result's content: the answer's text, sent as the arguments came.
async function reacquire(argumentsJson) {
  const r = await fetch(`${c.base}/v1/sessions/${c.session}/reacquire`,
    { method: "POST", headers: { "Content-Type": "application/json" }, body: argumentsJson });
  const body = await r.json();
  if (r.status !== 200) throw new Error(`reacquire answered ${r.status}: ${JSON.stringify(body)}`);
  return body.text;
}

const exact = (format, got) =>
  report(got === c.text && sha(got) === sha(c.text), `${format}: the tool result holds the exact ${Buffer.byteLength(c.text)} bytes`);

const openai = await definition("openai");
const anthropic = await definition("anthropic");
const responses = await definition("openai-responses");

// What each model would produce: the pointer as it appears in its context.
const args = { pointer: c.pointer };
const chatCall = { id: "call_1", type: "function", function: { name: openai.function.name, arguments: JSON.stringify(args) } };
const chatResult = { role: "tool", tool_call_id: chatCall.id, content: await reacquire(chatCall.function.arguments) };
exact("openai", chatResult.content);

const toolUse = { type: "tool_use", id: "toolu_1", name: anthropic.name, input: args };
const toolResult = { type: "tool_result", tool_use_id: toolUse.id, content: await reacquire(JSON.stringify(toolUse.input)) };
exact("anthropic", toolResult.content);

const fnCall = { type: "function_call", call_id: "fc_1", name: responses.name, arguments: JSON.stringify(args) };
const fnOutput = { type: "function_call_output", call_id: fnCall.call_id, output: await reacquire(fnCall.arguments) };
exact("openai-responses", fnOutput.output);

const ts = [
  'import type { ChatCompletionTool, ChatCompletionMessageParam } from "openai/resources/chat/completions";',
  'import type { FunctionTool, ResponseInputItem } from "openai/resources/responses/responses";',
  'import type { Tool, MessageParam } from "@anthropic-ai/sdk/resources/messages";',
  `export const chatTools: ChatCompletionTool[] = [${JSON.stringify(openai)}];`,
  `export const chatTurn: ChatCompletionMessageParam[] = [{ role: "assistant", content: null, tool_calls: [${JSON.stringify(chatCall)}] }, ${JSON.stringify(chatResult)}];`,
  `export const anthropicTools: Tool[] = [${JSON.stringify(anthropic)}];`,
  `export const anthropicTurn: MessageParam[] = [{ role: "assistant", content: [${JSON.stringify(toolUse)}] }, { role: "user", content: [${JSON.stringify(toolResult)}] }];`,
  `export const responsesTools: FunctionTool[] = [${JSON.stringify(responses)}];`,
  `export const responsesTurn: ResponseInputItem[] = [${JSON.stringify(fnCall)}, ${JSON.stringify(fnOutput)}];`,
];
// Inside this folder, so that the SDKs resolve from its node_modules.
const dir = mkdtempSync(join(here, ".tsc-"));
try {
  writeFileSync(join(dir, "tools.ts"), ts.join("\n") + "\n");
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: {
    strict: true, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext",
    skipLibCheck: true, types: [] }, files: ["tools.ts"] }));
  execFileSync(process.execPath, [join(here, "node_modules/typescript/bin/tsc"), "-p", dir], { stdio: "inherit" });
  report(true, "tsc: the three definitions, calls and results type-check against openai and @anthropic-ai/sdk");
} catch (e) {
  report(false, "tsc");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
