// A coding agent's session from a fixed seed, for the turn-by-turn loops of
// test_agent_loop.py: reads and searches (read-only), and writes, shell
// commands, test runs and a migration (side effects), the plans the agent
// states in prose before it acts, and constraints the user states once.
// Both provider formats, through transcript.mjs's converters.
//
//   node agent_loop.mjs <out-dir> [steps] [seed]
// writes openai.json and anthropic.json ({"messages", "system"?}).

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { rng, toAnthropic, toOpenAI } from "./transcript.mjs";

const FILES = ["src/billing/invoice.py", "src/billing/tax.py", "src/api/routes.py", "tests/test_invoice.py",
  "migrations/0042_invoice_index.sql", "docs/billing.md", "src/billing/currency.py"];
const WORDS = ["invoice", "tax_rate", "rounding", "Decimal", "currency", "EUR", "cents", "fixture", "assert",
  "quantize", "ROUND_HALF_EVEN", "customer_id", "line_items", "subtotal", "vat", "refund", "ledger"];
const CONSTRAINTS = [
  "Never push to main; work on the branch fix/BILL-3317.",
  "Do not run migration 0042 again once it has been applied: it is not idempotent.",
  "Keep the public signature of compute_total(invoice) unchanged.",
  "Amounts are Decimal everywhere, never float.",
  "Do not touch docs/billing.md until the fix is merged.",
];

export function agentSteps(steps, seed) {
  const r = rng(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const code = (lines) => Array.from({ length: lines }, (_, i) =>
    `${String(i + 1).padStart(4)}  ${pick(["def", "return", "if", "for", "#", "assert"])} ${words(5)}`).join("\n");
  let callNo = 0, constraint = 0;
  const call = (name, args) => ({ id: `call_${String(++callNo).padStart(3, "0")}`, name, args });
  const out = [{ kind: "user", text: "Invoices round VAT wrongly for EUR amounts (BILL-3317). Fix it. " +
    CONSTRAINTS[constraint++] }];
  for (let s = 1; out.length < steps; s++) {
    const roll = r();
    if (s % 9 === 0 && constraint < CONSTRAINTS.length) {
      out.push({ kind: "user", text: `One more thing: ${CONSTRAINTS[constraint++]}` });
      continue;
    }
    if (s % 4 === 0) {
      out.push({ kind: "say", text: `Next step: ${pick(["check", "change", "test"])} ${pick(FILES)}; ` +
        `so far ${words(8)}. Ruled out: ${words(3)}.` });
    }
    let calls;
    if (s === 11) calls = [call("apply_migration", { id: "0042_invoice_index" })];
    else if (roll < 0.35) calls = Array.from({ length: 1 + Math.floor(r() * 2) },
      () => call("read_file", { path: pick(FILES), start_line: 1 + 50 * Math.floor(r() * 4) }));
    else if (roll < 0.5) calls = [call("grep", { pattern: pick(["quantize", "compute_total", "float("]), path: "src" })];
    else if (roll < 0.58) calls = [call("list_dir", { path: pick(["src/billing", "tests", "migrations"]) })];
    else if (roll < 0.75) calls = [call("write_file", { path: pick(FILES), content: code(3) })];
    else if (roll < 0.88) calls = [call("run_shell", { cmd: pick(["git checkout -b fix/BILL-3317",
      "git commit -am 'Round VAT half-even'", "black src", "git status"]) })];
    else calls = [call("run_tests", { suite: pick(["billing", "api"]) })];
    const results = calls.map((c) => {
      let text;
      if (c.name === "read_file") text = code(20 + Math.floor(r() * 40));
      else if (c.name === "grep") text = Array.from({ length: 4 + Math.floor(r() * 12) },
        () => `${pick(FILES)}:${1 + Math.floor(r() * 300)}: ${words(6)}`).join("\n");
      else if (c.name === "list_dir") text = FILES.join("\n");
      else if (c.name === "write_file") text = `wrote ${c.args.path} (3 lines)`;
      else if (c.name === "run_shell") text = `$ ${c.args.cmd}\n${words(10)}\nexit 0`;
      else if (c.name === "apply_migration") text = "migration 0042_invoice_index applied at 2026-11-30T09:12:44Z";
      else text = `collected 57 items\n${words(30)}\nFAILED tests/test_invoice.py::test_vat_eur - 19.99 != 20.00\n1 failed, 56 passed`;
      return { id: c.id, text, error: false, parts: false };
    });
    out.push({ kind: "tools", text: null, calls, results });
  }
  out.push({ kind: "say", text: "Next step: open the pull request from fix/BILL-3317; all 57 tests pass." });
  out.push({ kind: "user", text: "Go ahead." });
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, steps = "110", seed = "20261202"] = process.argv.slice(2);
  const st = agentSteps(Number(steps), Number(seed));
  writeFileSync(join(dir, "openai.json"), JSON.stringify(toOpenAI(st)));
  writeFileSync(join(dir, "anthropic.json"), JSON.stringify(toAnthropic(st)));
}
