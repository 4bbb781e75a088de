"""Bodies for plan_time (Python 3 stdlib only).

  gen.py runs FORMAT N OUT      a task, then N read-only tool exchanges in a
                                row (nothing protected between them), each
                                call's arguments about 250 bytes (its
                                re-acquire hint), a tool output of about 400
                                bytes, then a user turn: the longest runs of
                                droppable messages a history can hold
  gen.py wrap FORMAT IN OUT [TOKENIZER]
                                a transcript of tests/messages (transcript.mjs,
                                responses_transcript.mjs) as bench/messages
                                sends it (its policy), under TOKENIZER
                                (default: none named, the format's own)
FORMAT: openai, anthropic (runs), or openai-responses (wrap). The budget is set by plan_time."""

import json
import random
import sys

POLICY = {"protect_tools": ["apply_migration"], "redundant_tools": ["list_dir"],
          "read_only_tools": ["read_file", "grep", "run_tests"]}


def runs(fmt, n):
    r = random.Random(18)
    msgs = [{"role": "user", "content": "Fix the failing build; never push to main."}]
    for k in range(n):
        args = json.dumps({"path": "src/module_%d/file_%d.c" % (k % 97, k),
                           "pattern": " ".join(r.choice(["budget", "token", "spill", "0x7f",
                                                         "naïve", "数据", "x;", "a.c"])
                                               for _ in range(22))})
        out = "line %d: " % k + "." * 400
        cid = "call_%d" % k
        tool = ["read_file", "grep", "run_tests"][k % 3]
        if fmt == "openai":
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": tool, "arguments": args}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": out})
        else:
            msgs.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": cid, "name": tool, "input": json.loads(args)}]})
            msgs.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": cid, "content": out}]})
    if fmt == "openai":
        msgs.append({"role": "user", "content": "Now run the tests again."})
    else:
        msgs[-1]["content"].append({"type": "text", "text": "Now run the tests again."})
    return {"format": fmt, "budget": 1, "dry_run": True, "tokenizer": "o200k_base",
            "messages": msgs, "policy": POLICY}


def wrap(fmt, history, tokenizer):
    b = {"format": fmt, "budget": 1, "dry_run": True,
         "messages": history["input"] if fmt == "openai-responses" else history["messages"],
         "policy": POLICY}
    if tokenizer:
        b["tokenizer"] = tokenizer
    for k in ("system", "instructions"):
        if k in history:
            b[k] = history[k]
    return b


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "runs":
        body = runs(sys.argv[2], int(sys.argv[3]))
        out = sys.argv[4]
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "wrap":
        with open(sys.argv[3], encoding="utf-8") as f:
            body = wrap(sys.argv[2], json.load(f), sys.argv[5] if len(sys.argv) == 6 else None)
        out = sys.argv[4]
    else:
        raise SystemExit(__doc__)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(body, f, separators=(",", ":"), ensure_ascii=False)


main()
