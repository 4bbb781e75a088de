// compactd beside what a JavaScript orchestrator does today in process:
// LangChain.js trimMessages counting with gpt-tokenizer (o200k_base), on
// the same OpenAI history growing turn by turn, under the same budget.
//
//   node side_by_side.mjs <compactd port> <history.json> <budget> [rounds]
//
// For every turn it reports, for both: the time the call took (compactd's
// is the HTTP round trip on loopback), the tokens of what comes out
// (counted the same way for both, with gpt-tokenizer), and how many of the
// user's three constraints are still there — verbatim, or (compactd only)
// behind a pointer whose spill holds them. Prints one JSON report.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages } from "@langchain/core/messages";
import { encode } from "gpt-tokenizer/encoding/o200k_base";

const [port, historyPath, budgetArg, roundsArg] = process.argv.slice(2);
const budget = Number(budgetArg);
const rounds = Number(roundsArg || 1);
const history = JSON.parse(readFileSync(historyPath, "utf8")).messages;
// The constraints of the transcript's first user message (tests/messages/transcript.mjs).
const FACTS = ["never push to main", "do not re-run migration 0042 once applied",
  "keep the public API of include/plan.h unchanged"];
const POLICY = { protect_tools: ["apply_migration"], redundant_tools: ["list_dir"] };

// What a message costs: its text, its calls' names and arguments, and the
// 3 tokens of framing OpenAI documents per message.
function messageTokens(m) {
  let n = 3 + encode(typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "")).length;
  for (const c of m.tool_calls ?? [])
    n += encode(c.function ? c.function.name + c.function.arguments : c.name + JSON.stringify(c.args)).length;
  return n;
}
const lcTokens = (msgs) => msgs.reduce((n, m) => n + messageTokens(m), 0);

function toLangChain(m) {
  if (m.role === "system") return new SystemMessage(m.content);
  if (m.role === "user") return new HumanMessage(m.content);
  if (m.role === "tool") return new ToolMessage({ content: m.content, tool_call_id: m.tool_call_id });
  return new AIMessage({ content: m.content ?? "", tool_calls: (m.tool_calls ?? []).map((c) => ({
    id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments), type: "tool_call" })) });
}

const textOf = (m) => typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "");
const factsIn = (texts) => FACTS.filter((f) => texts.some((t) => t.includes(f))).length;

// Prefixes that end a history the provider accepts (no call left open).
function prefixes() {
  const out = [];
  let open = new Set();
  history.forEach((m, i) => {
    if (m.role === "tool") open.delete(m.tool_call_id);
    else open = new Set((m.tool_calls ?? []).map((c) => c.id));
    if (i >= 10 && open.size === 0 && (out.length === 0 || i + 1 - out[out.length - 1] >= 2)) out.push(i + 1);
  });
  return out;
}

async function compactd(session, msgs) {
  const t0 = performance.now();
  const r = await fetch(`http://127.0.0.1:${port}/v1/sessions/${session}/messages/compact`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ format: "openai", budget, tokenizer: "o200k_base", policy: POLICY, messages: msgs }) });
  const a = await r.json();
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`compactd answered ${r.status}: ${JSON.stringify(a).slice(0, 300)}`);
  const texts = a.messages.map(textOf);
  for (const d of a.decisions) {
    if (!d.href) continue;
    const s = await (await fetch(`http://127.0.0.1:${port}${d.href}`)).json();
    texts.push(s.text ?? "");
  }
  return { ms, tokens: lcTokens(a.messages), facts: factsIn(texts), used: a.used_tokens, messages_kept: a.messages.length };
}

async function langchain(msgs) {
  const lc = msgs.map(toLangChain);
  const t0 = performance.now();
  const returned = await trimMessages(lc, { maxTokens: budget, strategy: "last", includeSystem: true,
    startOn: "human", tokenCounter: (ms) => ms.reduce((n, m) => n + 3 + encode(textOf(m)).length +
      (m.tool_calls ?? []).reduce((k, c) => k + encode(c.name + JSON.stringify(c.args)).length, 0), 0) });
  const ms = performance.now() - t0;
  // Where nothing after the system message fits and starts on a human turn,
  // @langchain/core 1.4.0 returns [undefined]: counted as keeping nothing.
  const kept = returned.filter(Boolean);
  const asOpenAI = kept.map((m) => ({ content: textOf(m), tool_calls: (m.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args })) }));
  return { ms, tokens: lcTokens(asOpenAI), facts: factsIn(kept.map(textOf)), messages_kept: kept.length };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const turns = [];
for (let round = 0; round < rounds; round++) {
  const session = `trim-${process.pid}-${round}`;
  for (const k of prefixes()) {
    const msgs = history.slice(0, k);
    const full = lcTokens(msgs);
    const c = await compactd(session, msgs);
    const l = await langchain(msgs);
    if (round === rounds - 1) turns.push({ messages: k, full_tokens: full, over_budget: full > budget, compactd: c, langchain: l });
    else { turns.length = 0; }
  }
}
const over = turns.filter((t) => t.over_budget);
const sum = (who) => ({
  ms_median: +median(turns.map((t) => t[who].ms)).toFixed(2),
  ms_max: +Math.max(...turns.map((t) => t[who].ms)).toFixed(2),
  tokens_max: Math.max(...turns.map((t) => t[who].tokens)),
  facts_min_over_budget: over.length ? Math.min(...over.map((t) => t[who].facts)) : null,
  turns_all_facts_over_budget: over.filter((t) => t[who].facts === FACTS.length).length,
});
console.log(JSON.stringify({ budget, tokenizer: "o200k_base", history_messages: history.length,
  turns: turns.length, turns_over_budget: over.length, facts: FACTS.length,
  compactd: sum("compactd"), langchain_trimMessages: sum("langchain"), per_turn: turns }, null, 1));
