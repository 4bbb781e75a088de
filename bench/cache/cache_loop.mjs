// How much of each turn's request a provider's prompt cache can serve, on an
// agent loop that compacts its whole history before every model call.
//
//   node cache_loop.mjs <compactd port> <transcript dir> <budget> <turns> <start>
//
// The transcript dir holds openai.json, anthropic.json and responses.json
// (tests/messages/transcript.mjs and responses_transcript.mjs). For each
// format the loop starts from the first <start> items and adds, each turn,
// the transcript's next items up to where no call is left open; before each
// call it compacts the whole history (reads declared read-only) and sends
// the answer. A provider caches the longest prefix a request shares with an
// earlier one, so each turn's cached tokens are those of the leading items
// (the system prompt first) identical to the previous turn's request. Each
// item is counted as its JSON under o200k_base (gpt-tokenizer): the
// granularity is the item, not the provider's 128-token blocks.
//
// Beside compactd: "trim", the system prompt and the newest items that fit
// (dropping tool results left without their call), and "bound", every turn
// caching all of compactd's request but the items the turn added; and
// "provider_bound", the same less what the provider itself stops reading:
// the Responses API drops a finished turn's reasoning from the prompt once
// a user message follows it, so no request caches past the first reasoning
// item of the turn that message ends (the same for every format without
// reasoning items). Prints
// one JSON report: per format, the cacheable share over all turns but the
// first (a turn compactd refused with a 422 is listed and left out), and
// the input cost at a tenth of the price for cached tokens, in
// units of the uncached price, per token and in all (billed).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { encode } from "gpt-tokenizer/encoding/o200k_base";

const [port, dir, budgetArg, turnsArg, startArg] = process.argv.slice(2);
const budget = Number(budgetArg), turns = Number(turnsArg), start = Number(startArg);
const POLICY = { read_only_tools: ["read_file", "grep", "run_tests"], redundant_tools: ["list_dir"],
  protect_tools: ["apply_migration"] };
const CACHED_PRICE = 0.1;

const tokens = (item) => encode(JSON.stringify(item)).length;

// The ids of the calls an item makes and of the calls it answers.
function calls(fmt, item) {
  if (fmt === "openai")
    return { makes: (item.tool_calls ?? []).map((c) => c.id), answers: item.tool_call_id ? [item.tool_call_id] : [] };
  if (fmt === "anthropic") {
    const blocks = Array.isArray(item.content) ? item.content : [];
    return { makes: blocks.filter((b) => b.type === "tool_use").map((b) => b.id),
      answers: blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id) };
  }
  return { makes: item.type === "function_call" ? [item.call_id] : [],
    answers: item.type === "function_call_output" ? [item.call_id] : [] };
}

// History lengths from start on, each ending where no call is open.
function turnEnds(fmt, items) {
  const ends = [];
  const open = new Set();
  items.forEach((item, i) => {
    const c = calls(fmt, item);
    c.answers.forEach((id) => open.delete(id));
    c.makes.forEach((id) => open.add(id));
    const last = ends.length ? ends[ends.length - 1] : start;
    // A reasoning item goes with the item after it: never the last one.
    const whole = open.size === 0 && item.type !== "reasoning";
    if (i + 1 >= start && whole && i + 1 > last && ends.length < turns) ends.push(i + 1);
  });
  return ends;
}

function load(fmt) {
  if (fmt === "openai-responses") {
    const t = JSON.parse(readFileSync(join(dir, "responses.json"), "utf8"));
    return { items: t.input, head: { instructions: t.instructions } };
  }
  const t = JSON.parse(readFileSync(join(dir, fmt === "openai" ? "openai.json" : "anthropic.json"), "utf8"));
  return { items: t.messages, head: t.system ? { system: t.system } : {} };
}

async function compactd(fmt, session, head, items) {
  const body = { format: fmt, budget, tokenizer: "o200k_base", policy: POLICY, messages: items, ...head };
  const r = await fetch(`http://127.0.0.1:${port}/v1/sessions/${session}/messages/compact`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const a = await r.json();
  if (r.status === 422) return { refused: a.error.message };
  if (r.status !== 200) throw new Error(`${fmt}: compactd answered ${r.status}: ${JSON.stringify(a).slice(0, 400)}`);
  if (a.used_tokens > budget) throw new Error(`${fmt}: used ${a.used_tokens} of ${budget}`);
  plans[a.plan] = (plans[a.plan] ?? 0) + 1;
  const sys = a.system ?? a.instructions ?? head.system ?? head.instructions;
  return [...(sys !== undefined ? [{ system: sys }] : []), ...a.messages];
}

// The newest items that fit beside the system prompt, none answering a call
// that was cut away.
function trim(fmt, head, items) {
  const sys = head.system ?? head.instructions;
  const out = [...(sys !== undefined ? [{ system: sys }] : [])];
  let room = budget - out.reduce((n, x) => n + tokens(x), 0);
  let from = items.length;
  while (from > 0 && tokens(items[from - 1]) <= room) room -= tokens(items[--from]);
  while (from < items.length && calls(fmt, items[from]).answers.length) from++;
  return [...out, ...items.slice(from)];
}

// Where the provider's own prompt stops matching the last request: at its
// first reasoning item after its last user message, once the items this
// turn added bring a user message (that reasoning is then a finished
// turn's, which the provider no longer reads). Infinity when nothing goes.
const isUser = (x) => x.role === "user" && (x.type === undefined || x.type === "message");
function providerBreak(prev, added) {
  if (!added.some(isUser)) return Infinity;
  let lastUser = -1;
  prev.forEach((x, i) => { if (isUser(x)) lastUser = i; });
  const at = prev.findIndex((x, i) => i > lastUser && x.type === "reasoning");
  return at < 0 ? Infinity : prev.slice(0, at).reduce((n, x) => n + tokens(x), 0);
}

function prefixTokens(a, b) {
  let n = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (JSON.stringify(a[i]) !== JSON.stringify(b[i])) break;
    n += tokens(a[i]);
  }
  return n;
}

let plans = {};
const report = { budget, turns, start, tokenizer: "o200k_base", cached_price: CACHED_PRICE, formats: {} };
for (const fmt of ["openai", "anthropic", "openai-responses"]) {
  const { items, head } = load(fmt);
  const ends = turnEnds(fmt, items);
  const session = `cache-${fmt}-${budget}-${process.pid}`;
  const sums = { compactd: [0, 0], trim: [0, 0], bound: [0, 0], provider_bound: [0, 0] };
  let prev = null, prevTrim = null, prevEnd = start;
  const shares = [];
  const refused = [];
  plans = {};
  for (const end of ends) {
    const req = await compactd(fmt, session, head, items.slice(0, end));
    if (req.refused) { // the loop would stop here; the turns after it are still measured
      refused.push({ items: end, why: req.refused.slice(0, 160) });
      continue;
    }
    const tr = trim(fmt, head, items.slice(0, end));
    const total = req.reduce((n, x) => n + tokens(x), 0);
    const added = items.slice(prevEnd, end).reduce((n, x) => n + tokens(x), 0);
    if (prev) {
      // A request that still sends a finished turn's reasoning (one that
      // led to a hosted call) caches no further than the provider reads.
      const newItems = items.slice(prevEnd, end);
      const cached = Math.min(prefixTokens(prev, req), providerBreak(prev, newItems));
      sums.compactd[0] += cached; sums.compactd[1] += total;
      sums.bound[0] += Math.max(0, total - added); sums.bound[1] += total;
      const stops = providerBreak(prev, newItems);
      sums.provider_bound[0] += Math.max(0, Math.min(total - added, stops)); sums.provider_bound[1] += total;
      const trTotal = tr.reduce((n, x) => n + tokens(x), 0);
      sums.trim[0] += Math.min(prefixTokens(prevTrim, tr), providerBreak(prevTrim, newItems)); sums.trim[1] += trTotal;
      shares.push(+(cached / total).toFixed(3));
    }
    prev = req; prevTrim = tr; prevEnd = end;
  }
  // billed: what the turns' inputs cost in all, in uncached tokens; a plan
  // that keeps more may cache a larger share and still cost more.
  const summary = (s) => ({ cacheable_share: +(s[0] / s[1]).toFixed(3),
    input_cost: +((s[1] - (1 - CACHED_PRICE) * s[0]) / s[1]).toFixed(3),
    billed: Math.round(s[1] - (1 - CACHED_PRICE) * s[0]) });
  report.formats[fmt] = { turns: ends.length, compactd: summary(sums.compactd), trim: summary(sums.trim),
    bound: summary(sums.bound), provider_bound: summary(sums.provider_bound), plans, refused,
    compactd_share_by_turn: shares };
}
console.log(JSON.stringify(report, null, 1));
