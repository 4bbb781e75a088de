// The agent transcript of transcript.mjs as an OpenAI Responses API loop:
// each model turn is a Response whose `output` items (reasoning with its
// encrypted_content and summary, function calls, a hosted web search, the
// assistant's message) are appended to `input` as the SDK documents
// (`input.push(...response.output)`), followed by a function_call_output
// item per call.
//
//   node responses_transcript.mjs <out-dir> [steps] [seed] [outputs]
// (the arguments of transcript.mjs)
// writes responses.json ({"instructions", "input", "responses"}): the
// Response objects too, whose output items the check type-checks as the
// SDK's Response["output"].
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { rng, stepsFromArgs } from "./transcript.mjs";

const INSTRUCTIONS = "You are a careful coding agent working in a git checkout.";

export function toResponses(steps, seed) {
  const r = rng(seed ^ 0x5eed);
  const input = [];
  const responses = [];
  let n = 0;
  const id = (prefix) => `${prefix}_${String(++n).padStart(4, "0")}${"a1b2c3d4e5f6".slice(0, 8)}`;
  // Encrypted reasoning is opaque base64 of a few hundred bytes.
  const encrypted = () => "gAAAAA" + Array.from({ length: 120 + Math.floor(r() * 400) },
    () => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[Math.floor(r() * 64)]).join("");
  const reasoning = (why) => ({
    id: id("rs"), type: "reasoning", encrypted_content: encrypted(),
    summary: r() < 0.6 ? [{ type: "summary_text", text: `**${why}** I should look at this next.` }] : [],
  });
  const message = (text) => ({
    id: id("msg"), type: "message", role: "assistant", status: "completed",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  });
  const respond = (output) => {
    const resp = {
      id: id("resp"), object: "response", created_at: 1764547200 + n, model: "gpt-5-mini-2025-08-07",
      status: "completed", output, output_text: "", error: null, incomplete_details: null,
      instructions: INSTRUCTIONS, metadata: {}, parallel_tool_calls: true, temperature: 1, top_p: 1,
      tool_choice: "auto", tools: [],
    };
    responses.push(resp);
    input.push(...resp.output); // as the SDK documents it for a multi-turn loop
  };
  for (const st of steps) {
    if (st.kind === "user") {
      input.push({ role: "user", content: st.text });
    } else if (st.kind === "say") {
      respond([reasoning("Reporting"), message(st.text)]);
    } else {
      const out = [reasoning("Planning the calls")];
      if (st.calls[0].name === "grep" && r() < 0.5)
        out.push({ id: id("ws"), type: "web_search_call", status: "completed",
          action: { type: "search", query: `${st.calls[0].args.pattern} C11 idiom` } });
      if (st.text) out.push(message(st.text));
      for (const c of st.calls)
        out.push({ id: id("fc"), type: "function_call", call_id: c.id, name: c.name,
          arguments: JSON.stringify(c.args), status: "completed" });
      respond(out);
      for (const res of st.results)
        input.push({ type: "function_call_output", call_id: res.id,
          output: res.parts ? [{ type: "input_text", text: res.text }] : res.text });
    }
  }
  return { instructions: INSTRUCTIONS, input, responses };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { dir, seed, steps } = stepsFromArgs(process.argv.slice(2));
  writeFileSync(join(dir, "responses.json"), JSON.stringify(toResponses(steps, seed)));
}
