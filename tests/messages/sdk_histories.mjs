// Histories as the official clients make them, for the SDK pass-through tests:
//   node sdk_histories.mjs <out.json>
// Each: {name, format, messages, system?, origin: per message "response" (a
// provider's response object pushed back as is, typed by tsc as the SDK's
// response type) or "param" (request params)}. The response objects carry
// what the SDKs return (annotations, refusal, audio, citations, caller,
// thinking with signatures); LangChain's histories are its own converters'
// output.
import { writeFileSync } from "node:fs";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { ChatPromptValue } from "@langchain/core/prompt_values";
import { convertMessagesToCompletionsMessageParams } from "@langchain/openai";
import { convertPromptToAnthropic } from "@langchain/anthropic";

const ROUNDS = 6;
const output = (k) => `src/mod${k}.c: ` + Array.from({ length: 40 }, (_, j) => `line ${j} of module ${k};`).join(" ");
const sig = (k) => Buffer.from(`signature of turn ${k} `.repeat(6)).toString("base64");
const thought = (k) => `I should read module ${k} before changing it; the failing test names it. `.repeat(3);

// ---- OpenAI: ChatCompletion messages pushed back as the SDK returns them ----

function openaiHistory() {
  const messages = [{ role: "system", content: "You are a coding agent. Never push to main." },
    { role: "user", content: "Find why the build fails." }];
  const origin = ["param", "param"];
  for (let k = 0; k < ROUNDS; k++) {
    // completion.choices[0].message of a tool-calling response.
    messages.push({ role: "assistant", content: null, refusal: null, annotations: [], audio: null,
      function_call: null, tool_calls: [{ id: `call_${k}a`, type: "function",
        function: { name: "read_file", arguments: JSON.stringify({ path: `src/mod${k}.c` }) } }] });
    origin.push("response");
    messages.push({ role: "tool", tool_call_id: `call_${k}a`, content: output(k) });
    origin.push("param");
    // And of a text response, with a citation annotation.
    messages.push({ role: "assistant", content: `Module ${k} is fine; see the style guide.`, refusal: null,
      annotations: [{ type: "url_citation", url_citation: { url: "https://example.com/style",
        title: "Style", start_index: 0, end_index: 8 } }] });
    origin.push("response");
    messages.push({ role: "user", content: `Go on with module ${k + 1}.` });
    origin.push("param");
  }
  return { name: "openai ChatCompletion messages pushed back", format: "openai", messages, origin };
}

function langchainOpenAI() {
  const base = [new SystemMessage("You are a coding agent."), new HumanMessage("Find why the build fails.")];
  for (let k = 0; k < ROUNDS; k++) {
    base.push(new AIMessage({ content: "", tool_calls: [{ id: `call_lc${k}`, name: "read_file",
      args: { path: `src/mod${k}.c` }, type: "tool_call" }] }));
    base.push(new ToolMessage({ content: output(k), tool_call_id: `call_lc${k}`, name: "read_file" }));
    base.push(new AIMessage(`Module ${k} is fine.`));
    base.push(new HumanMessage(`Go on with module ${k + 1}.`));
  }
  const messages = convertMessagesToCompletionsMessageParams({ messages: base, model: "gpt-4o" });
  return { name: "LangChain convertMessagesToCompletionsMessageParams", format: "openai", messages,
    origin: messages.map(() => "param") };
}

// ---- Anthropic: Message.content pushed back as {role: "assistant", content} ----

function anthropicHistory() {
  const messages = [{ role: "user", content: "Find why the build fails." }];
  const origin = ["param"];
  for (let k = 0; k < ROUNDS; k++) {
    const thinking = k === 2 ? { type: "redacted_thinking", data: sig(k) }
      : { type: "thinking", thinking: thought(k), signature: sig(k) };
    messages.push({ role: "assistant", content: [thinking,
      { type: "text", text: `Reading module ${k}.`, citations: null },
      { type: "tool_use", id: `toolu_${k}a`, caller: { type: "direct" }, name: "read_file",
        input: { path: `src/mod${k}.c` } }] });
    origin.push("response");
    // A breakpoint on the last results: the API takes four at most.
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${k}a`,
      content: output(k), ...(k >= ROUNDS - 3 ? { cache_control: { type: "ephemeral" } } : {}) }] });
    origin.push("param");
    if (k === ROUNDS - 1) break; // the tool-use loop in flight: its thinking must go back as is
    messages.push({ role: "assistant", content: [
      { type: "thinking", thinking: `Module ${k} compiles. `.repeat(4), signature: sig(100 + k) },
      { type: "text", text: `Module ${k} is fine.`, citations: null }] });
    origin.push("response");
    messages.push({ role: "user", content: `Go on with module ${k + 1}.` });
    origin.push("param");
  }
  return { name: "Anthropic Message content pushed back", format: "anthropic", messages, origin,
    system: "You are a coding agent. Never push to main." };
}

function langchainAnthropic() {
  const base = [new SystemMessage("You are a coding agent."), new HumanMessage("Find why the build fails.")];
  for (let k = 0; k < ROUNDS; k++) {
    base.push(new AIMessage({ content: [{ type: "thinking", thinking: thought(k), signature: sig(k) },
      { type: "text", text: `Reading module ${k}.` }],
    tool_calls: [{ id: `toolu_lc${k}`, name: "read_file", args: { path: `src/mod${k}.c` }, type: "tool_call" }] }));
    base.push(new ToolMessage({ content: output(k), tool_call_id: `toolu_lc${k}` }));
    if (k < ROUNDS - 1) {
      base.push(new AIMessage(`Module ${k} is fine.`));
      base.push(new HumanMessage(`Go on with module ${k + 1}.`));
    }
  }
  const { system, messages } = convertPromptToAnthropic(new ChatPromptValue(base));
  return { name: "LangChain convertPromptToAnthropic", format: "anthropic", messages, system,
    origin: messages.map(() => "param") };
}

const all = [openaiHistory(), langchainOpenAI(), anthropicHistory(), langchainAnthropic()];
writeFileSync(process.argv[2], JSON.stringify(all));
