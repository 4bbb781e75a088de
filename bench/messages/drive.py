"""Drives messages/compact and the JSON floor with the same bodies, one
request at a time on one keep-alive connection, and prints a JSON report.

  drive.py COMPACTD_PORT FLOOR_PORT TRANSCRIPT_DIR ROUNDS

Workloads (OpenAI, Anthropic and the Responses API alike):
  cold          every body a history compactd has not seen (another seed)
  turn_over_turn  one history growing by two messages a call, from 40
                  messages to all of it: all but the two newest were seen
The JSON floor gets each workload's very same bodies, interleaved request by
request with compactd's."""

import http.client
import json
import os
import statistics
import sys
import time

BUDGET_SHARE = 0.5  # of the history's full cost: a compaction that has work to do
# BENCH_TOKENIZER: the tokenizer every body names (default: each format's own).
TOKENIZER = os.environ.get("BENCH_TOKENIZER")


def post(conn, path, body):
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    dt = time.perf_counter() - t0
    if r.status != 200:
        raise SystemExit("%s answered %d: %s" % (path, r.status, data[:300]))
    return dt


FORMATS = ("openai", "anthropic", "openai-responses")


def items(fmt, history):
    """The history's message array: a Responses transcript holds its input."""
    return history["input"] if fmt == "openai-responses" else history["messages"]


def bodies_for(fmt, history, prefix_lengths, budget):
    out = []
    for k in prefix_lengths:
        b = {"format": fmt, "budget": budget, "dry_run": True, "messages": items(fmt, history)[:k],
             "policy": {"protect_tools": ["apply_migration"], "redundant_tools": ["list_dir"],
                        "read_only_tools": ["read_file", "grep", "run_tests"]}}
        if "system" in history:
            b["system"] = history["system"]
        if "instructions" in history:
            b["instructions"] = history["instructions"]
        if TOKENIZER:
            b["tokenizer"] = TOKENIZER
        # As JSON.stringify writes it, like most clients.
        out.append(json.dumps(b, separators=(",", ":"), ensure_ascii=False).encode())
    return out


def valid_prefixes(fmt, messages, start):
    """Prefix lengths that end a history the provider accepts (no call left
    open, Anthropic ending on a user turn), growing by about two."""
    ok = []
    open_calls = set()
    for i, m in enumerate(messages):
        if fmt == "openai-responses":
            if m.get("type") == "function_call":
                open_calls.add(m["call_id"])
            elif m.get("type") == "function_call_output":
                open_calls.discard(m["call_id"])
            if m.get("type") == "reasoning":  # never the last item: it precedes its output
                continue
        elif fmt == "openai":
            if m["role"] == "tool":
                open_calls.discard(m["tool_call_id"])
            else:
                open_calls = {c["id"] for c in m.get("tool_calls", [])}
        else:
            blocks = m["content"] if isinstance(m["content"], list) else []
            open_calls = {b["id"] for b in blocks if b["type"] == "tool_use"}
        if i + 1 >= start and not open_calls and (fmt != "anthropic" or m["role"] == "user"):
            if not ok or i + 1 - ok[-1] >= 2:
                ok.append(i + 1)
    return ok


def full_cost(port, path, body):
    """used_tokens of the whole history under a budget it fits in."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status != 200:
        raise SystemExit("%s answered %d: %s" % (path, r.status, data[:300]))
    return json.loads(data)["used_tokens"]


def measure(cport, path, fport, bodies, rounds):
    """Each body to compactd and then to the floor, in turn, so that both
    see the same load on a shared machine."""
    cconn = http.client.HTTPConnection("127.0.0.1", cport, timeout=60)
    fconn = http.client.HTTPConnection("127.0.0.1", fport, timeout=60)
    ctimes, ftimes = [], []
    for _ in range(rounds):
        for b in bodies:
            ctimes.append(post(cconn, path, b))
            ftimes.append(post(fconn, "/", b))
    cconn.close()
    fconn.close()
    return ctimes, ftimes


def summary(times):
    return {"requests": len(times), "p50_ms": round(statistics.median(times) * 1000, 3),
            "req_per_s": round(len(times) / sum(times), 1)}


def main():
    cport, fport, tdir, rounds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    report = {}
    for fmt in FORMATS:
        seeds = sorted(f for f in os.listdir(tdir) if f.startswith(fmt + "."))
        histories = [json.load(open(os.path.join(tdir, f))) for f in seeds]
        main_h = histories[0]
        n = len(items(fmt, main_h))
        path = "/v1/sessions/bench-%s/messages/compact" % fmt
        # The full cost under "bytes" is about the body's size: half of it.
        # The Responses format counts with o200k_base: half of its count.
        budget = int(len(json.dumps(main_h)) * BUDGET_SHARE)
        if fmt == "openai-responses" or TOKENIZER:
            budget = int(full_cost(cport, path, bodies_for(fmt, main_h, [n], 10**9)[0]) * BUDGET_SHARE)
        whole = [bodies_for(fmt, h, [len(items(fmt, h))], budget)[0] for h in histories[1:]]
        # A few histories warm the processes up (page faults, allocator
        # arenas) so that "cold" measures only what compactd has not seen.
        warm, cold = whole[:10], whole[10:]
        growth = bodies_for(fmt, main_h, valid_prefixes(fmt, items(fmt, main_h), 40), budget)
        # Cold first, while compactd has seen none of these histories.
        measure(cport, path, fport, warm, 3)
        c_cold, f_cold = measure(cport, path, fport, cold, 1)
        c_turn, f_turn = measure(cport, path, fport, growth, rounds)
        report[fmt] = {
            "messages": n, "body_bytes": len(cold[0]), "budget": budget,
            "cold": summary(c_cold), "cold_json_floor": summary(f_cold),
            "turn_over_turn": summary(c_turn), "turn_json_floor": summary(f_turn),
        }
        for k in ("cold", "turn_over_turn"):
            floor = report[fmt]["cold_json_floor" if k == "cold" else "turn_json_floor"]
            report[fmt][k]["x_json_floor_p50"] = round(report[fmt][k]["p50_ms"] / floor["p50_ms"], 2)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
