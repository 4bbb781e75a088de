// The providers' pairing and alternation rules, written from their
// documentation rather than from compactd, for every checker of this folder.

export function validate(format, messages) {
  const problems = [];
  if (format === "openai") {
    let open = null; // ids of the calls waiting for answers
    messages.forEach((m, i) => {
      if (m.role === "tool") {
        if (!open || !open.has(m.tool_call_id)) problems.push(`[${i}] orphaned tool result ${m.tool_call_id}`);
        else open.delete(m.tool_call_id);
        return;
      }
      if (open && open.size) problems.push(`[${i}] calls left unanswered: ${[...open]}`);
      open = null;
      if (m.role === "assistant" && m.tool_calls && m.tool_calls.length)
        open = new Set(m.tool_calls.map((c) => c.id));
    });
    if (open && open.size) problems.push(`[end] calls left unanswered: ${[...open]}`);
  } else {
    let open = null;
    messages.forEach((m, i) => {
      const want = i % 2 === 0 ? "user" : "assistant";
      if (m.role !== want) problems.push(`[${i}] role ${m.role}, expected ${want}`);
      const blocks = typeof m.content === "string" ? [] : m.content;
      const results = blocks.filter((b) => b.type === "tool_result");
      for (const r of results) {
        if (!open || !open.has(r.tool_use_id)) problems.push(`[${i}] orphaned tool_result ${r.tool_use_id}`);
        else open.delete(r.tool_use_id);
      }
      if (open && open.size) problems.push(`[${i}] tool_use left unanswered: ${[...open]}`);
      const uses = blocks.filter((b) => b.type === "tool_use");
      open = uses.length ? new Set(uses.map((b) => b.id)) : null;
    });
    if (open && open.size) problems.push(`[end] tool_use left unanswered: ${[...open]}`);
  }
  return problems;
}

