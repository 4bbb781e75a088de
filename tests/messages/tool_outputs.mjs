// Tool outputs the size a coding agent gets back in a long session: whole
// files read (60-400 numbered lines of C, Python, Markdown, SQL or a
// translation catalogue, by the file's extension), grep with 10-80 hits,
// test runs with their full log, directory listings with sizes. Drawn from
// the caller's seeded generator, so the same seed gives the same text.
//
//   const out = toolOutputs(r);  out.read_file(args), out.grep(args), ...

const IDENTS = ["plan", "budget", "units", "spill", "store", "session", "cost", "key", "text", "len",
  "n_units", "err", "ctx", "reply", "entry", "tokens", "pointer", "digest", "out", "buf", "cap",
  "used", "keep", "decision", "marker", "tokenizer", "slot", "index", "offset", "limit"];
const TYPES = ["int", "size_t", "int64_t", "const char *", "plan_t *", "store_t *", "json_t *",
  "bool", "uint32_t", "struct unit *"];
const CALLS = ["plan_run", "store_commit", "json_object_get", "token_count", "snprintf", "memcpy",
  "strlen", "malloc", "free", "redisCommand", "sha256_hex", "unit_cost", "plan_free",
  "store_spill_put", "error_set", "json_integer_value", "pointer_format", "bytemap_add"];
const PROSE = ["the", "budget", "is", "checked", "before", "each", "spill", "so", "that", "a",
  "unit", "never", "counts", "twice", "when", "session", "read", "again", "after", "commit",
  "returns", "zero", "on", "success", "caller", "frees", "it", "with", "planner", "keeps",
  "protected", "text", "and", "drops", "what", "can", "be", "derived", "from", "log", "one",
  "pointer", "per", "externalized", "message", "tokens", "are", "counted", "by", "encoding"];
const FR = ["le", "budget", "est", "dépassé", "la", "session", "expire", "après", "réessayer",
  "fichier", "introuvable", "échec", "de", "l'écriture", "données", "compressées"];
const ZH = ["预算", "已", "超出", "会话", "过期", "请", "重试", "文件", "未找到", "写入", "失败", "数据", "压缩"];

export function toolOutputs(r) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const below = (n) => Math.floor(r() * n);
  const prose = (n) => Array.from({ length: n }, () => pick(PROSE)).join(" ");
  const args = () => Array.from({ length: 1 + below(3) }, () => pick(IDENTS)).join(", ");
  const cLine = () => {
    const ind = "    ".repeat(below(3));
    const line = pick([
      () => `${pick(TYPES)} ${pick(IDENTS)} = ${pick(CALLS)}(${args()});`,
      () => `if (${pick(IDENTS)} ${pick(["<", "==", "!=", ">="])} ${pick(["0", "NULL", pick(IDENTS)])}) {`,
      () => `for (size_t i = 0; i < ${pick(IDENTS)}->${pick(IDENTS)}; i++) {`,
      () => `${pick(IDENTS)}->${pick(IDENTS)}[i] = ${pick(IDENTS)};`,
      () => `return ${pick(["-1", "0", pick(IDENTS)])};`,
      () => `/* ${prose(4 + below(8))}. */`,
      () => "}",
      () => "",
      () => `static ${pick(TYPES)} ${pick(CALLS)}_${pick(IDENTS)}(${pick(TYPES)} ${pick(IDENTS)}, size_t ${pick(IDENTS)})`,
    ])();
    return line && ind + line;
  };
  const pyLine = () => "    ".repeat(1 + below(2)) + pick([
    () => `self.assertEqual(${pick(IDENTS)}.status, ${pick(["200", "400", "413", "503"])}, ${pick(IDENTS)}.body)`,
    () => `${pick(IDENTS)} = self.http.post("/v1/sessions/s${below(99)}/compact", ${pick(IDENTS)})`,
    () => `def test_${pick(IDENTS)}_${pick(IDENTS)}(self):`,
    () => `# ${prose(5 + below(6))}`,
    () => `for ${pick(IDENTS)} in ${pick(IDENTS)}["decisions"]:`,
  ])();
  const mdLine = () => pick([() => `${prose(8 + below(10))}.`, () => `## ${prose(3)}`, () => "",
    () => `- \`${pick(CALLS)}()\`: ${prose(6)}.`])();
  const sqlLine = () => pick([() => `CREATE INDEX IF NOT EXISTS idx_${pick(IDENTS)} ON ${pick(IDENTS)} (${args()});`,
    () => `ALTER TABLE ${pick(IDENTS)} ADD COLUMN ${pick(IDENTS)} BIGINT NOT NULL DEFAULT 0;`, () => `-- ${prose(6)}`])();
  const poLine = (zh) => pick([() => `msgid "${prose(4 + below(5))}"`,
    () => `msgstr "${Array.from({ length: 4 + below(6) }, () => pick(zh ? ZH : FR)).join(zh ? "" : " ")}"`,
    () => `#: src/${pick(IDENTS)}.c:${1 + below(700)}`, () => ""])();
  const lineOf = (path) => {
    if (/\.[ch]$/.test(path)) return cLine();
    if (path.endsWith(".py")) return pyLine();
    if (path.endsWith(".md")) return mdLine();
    if (path.endsWith(".sql")) return sqlLine();
    return poLine(path.includes("_zh"));
  };
  return {
    read_file: ({ path, start_line: start = 1 }) => Array.from({ length: 60 + below(340) },
      (_, i) => `${String(start + i).padStart(5)}  ${lineOf(path)}`).join("\n"),
    grep: ({ pattern, path }) => Array.from({ length: 10 + below(70) },
      () => `${path}/${pick(IDENTS)}.${pick(["c", "h", "c"])}:${1 + below(700)}:${cLine()}${pick(["", ` /* ${pattern} */`])}`).join("\n"),
    run_tests: ({ suite }) => {
      const names = Array.from({ length: 40 + below(160) }, (_, i) =>
        `tests/${suite}/test_${pick(IDENTS)}.py::test_${pick(IDENTS)}_${i} ${pick(["PASSED", "PASSED", "PASSED", "SKIPPED"])} [${String(below(100)).padStart(3)}%]`);
      const trace = Array.from({ length: 10 + below(20) }, () => `E       ${pyLine().trim()}`);
      return [`============ test session starts ============`, `collected ${names.length + 1} items`, ...names,
        `tests/${suite}/test_plan.py::test_budget FAILED`, "================ FAILURES ================",
        ...trace, "E       assert 120 <= 100", `1 failed, ${names.length} passed in ${(r() * 40).toFixed(2)}s`].join("\n");
    },
    list_dir: ({ path }) => Array.from({ length: 10 + below(30) }, () =>
      `-rw-r--r-- 1 agent agent ${String(below(90000)).padStart(6)} Dec  1 09:${String(below(60)).padStart(2, "0")} ${path}/${pick(IDENTS)}.${pick(["c", "h", "py", "md"])}`).join("\n"),
  };
}
