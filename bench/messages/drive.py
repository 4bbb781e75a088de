"""Drives messages/compact and the JSON floor with the same bodies, one
request at a time on one keep-alive connection, and prints a JSON report.

  drive.py COMPACTD_PORT FLOOR_PORT TRANSCRIPT_DIR ROUNDS

TRANSCRIPT_DIR holds a folder per history size that was generated (run
says which): 100k/ and 1m/, each with <format>.<seed>.json files.

Workloads (OpenAI, Anthropic and the Responses API alike):
  100k  cold: every body a history compactd has not seen (another seed);
        turn_over_turn: one history growing by two messages a call, from
        40 messages to all of it, ROUNDS passes
  1m    cold: histories of about 1 MB compactd has not seen;
        turn_over_turn: histories of about 1.1 MB, each grown by about two
        messages a call from its prefix of 0.9 MB, one pass: every call
        repeats all but its newest messages (the first call of each, all
        new to compactd, is sent but not measured)
The JSON floor gets each workload's very same bodies, interleaved request by
request with compactd's."""

import http.client
import json
import os
import statistics
import sys
import time

BUDGET_SHARE = 0.5  # of the history's full cost: a compaction that has work to do
# BENCH_TOKENIZER: the tokenizer every body names (default: each format's
# own for 100k, o200k_base for 1m).
TOKENIZER = os.environ.get("BENCH_TOKENIZER")
BIG_TOKENIZER = TOKENIZER or "o200k_base"
BIG_START_BYTES = 900_000  # a 1m turn-over-turn history's first prefix
BIG_WARM = 2  # 1m histories that warm the processes up before cold


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


def bodies_for(fmt, history, prefix_lengths, budget, tokenizer=TOKENIZER):
    out = []
    for k in prefix_lengths:
        b = {"format": fmt, "budget": budget, "dry_run": True, "messages": items(fmt, history)[:k],
             "policy": {"protect_tools": ["apply_migration"], "redundant_tools": ["list_dir"],
                        "read_only_tools": ["read_file", "grep", "run_tests"]}}
        if "system" in history:
            b["system"] = history["system"]
        if "instructions" in history:
            b["instructions"] = history["instructions"]
        if tokenizer:
            b["tokenizer"] = tokenizer
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


def p90(times):
    return sorted(times)[int(0.9 * (len(times) - 1))]


def summary(times):
    return {"requests": len(times), "p50_ms": round(statistics.median(times) * 1000, 3),
            "p90_ms": round(p90(times) * 1000, 3), "req_per_s": round(len(times) / sum(times), 1)}


def beside(ctimes, ftimes):
    """compactd's figures and the floor's for the same bodies, and their ratios."""
    c, f = summary(ctimes), summary(ftimes)
    c["x_json_floor_p50"] = round(c["p50_ms"] / f["p50_ms"], 2)
    c["x_json_floor_p90"] = round(c["p90_ms"] / f["p90_ms"], 2)
    return c, f


def histories_of(tdir, fmt):
    seeds = sorted(f for f in os.listdir(tdir) if f.startswith(fmt + "."))
    return [json.load(open(os.path.join(tdir, f))) for f in seeds]


def small_histories(cport, fport, tdir, rounds, fmt):
    """The ~100 KB transcripts: seed 1 grows, the others are cold."""
    histories = histories_of(tdir, fmt)
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
    out = {"messages": n, "body_bytes": len(cold[0]), "budget": budget,
           "tokenizer": TOKENIZER or "the format's default"}
    out["cold"], out["cold_json_floor"] = beside(c_cold, f_cold)
    out["turn_over_turn"], out["turn_json_floor"] = beside(c_turn, f_turn)
    return out


def first_past(history, fmt, nbytes=BIG_START_BYTES):
    """The length of the history's shortest prefix of nbytes or more."""
    total = 0
    for i, m in enumerate(items(fmt, history)):
        total += len(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode())
        if total >= nbytes:
            return i + 1
    raise SystemExit("a %s history of %d bytes is shorter than %d" % (fmt, total, nbytes))


def big_histories(cport, fport, tdir, fmt):
    """The 1 MB histories: cold/ never seen, turn/ each grown from 0.9 MB."""
    cold_h = histories_of(os.path.join(tdir, "cold"), fmt)
    turn_h = histories_of(os.path.join(tdir, "turn"), fmt)
    path = "/v1/sessions/bench-1m-%s/messages/compact" % fmt
    tok = BIG_TOKENIZER
    # One budget for all: half the full cost of a warm-up history (the
    # histories' sizes differ by a few per cent), so every call compacts
    # and no measured history was counted before it is sent.
    first = cold_h[0]
    full = full_cost(cport, path, bodies_for(fmt, first, [len(items(fmt, first))], 10**9, tok)[0])
    budget = int(full * BUDGET_SHARE)
    whole = [bodies_for(fmt, h, [len(items(fmt, h))], budget, tok)[0] for h in cold_h]
    warm, cold = whole[:BIG_WARM], whole[BIG_WARM:]
    measure(cport, path, fport, warm, 2)
    c_cold, f_cold = measure(cport, path, fport, cold, 1)
    c_turn, f_turn, sizes = [], [], []
    for i, h in enumerate(turn_h):
        bodies = bodies_for(fmt, h, valid_prefixes(fmt, items(fmt, h), first_past(h, fmt)), budget, tok)
        sizes += [len(b) for b in bodies[1:]]
        tpath = "/v1/sessions/bench-1m-turn-%d-%s/messages/compact" % (i, fmt)
        measure(cport, tpath, fport, bodies[:1], 1)  # the session's first call: all new
        c, f = measure(cport, tpath, fport, bodies[1:], 1)
        c_turn += c
        f_turn += f
    out = {"tokenizer": tok, "full_tokens": full, "budget": budget,
           "cold_body_bytes": [min(len(b) for b in cold), max(len(b) for b in cold)],
           "cold_messages": [len(items(fmt, h)) for h in cold_h[BIG_WARM:]],
           "turn_body_bytes": [min(sizes), max(sizes)]}
    out["cold"], out["cold_json_floor"] = beside(c_cold, f_cold)
    out["turn_over_turn"], out["turn_json_floor"] = beside(c_turn, f_turn)
    return out


def main():
    cport, fport, tdir, rounds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    report = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    for size in ("100k", "1m"):
        d = os.path.join(tdir, size)
        if not os.path.isdir(d):
            continue
        report[size] = {}
        for fmt in FORMATS:
            if size == "100k":
                report[size][fmt] = small_histories(cport, fport, d, rounds, fmt)
            else:
                report[size][fmt] = big_histories(cport, fport, d, fmt)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=1))
    for size in ("100k", "1m"):
        for fmt, r in report.get(size, {}).items():
            for k in ("cold", "turn_over_turn"):
                print("%-4s %-16s %-14s compactd p50 %8.2f ms p90 %8.2f ms  x floor p50 %.2f p90 %.2f"
                      % (size, fmt, k, r[k]["p50_ms"], r[k]["p90_ms"], r[k]["x_json_floor_p50"],
                         r[k]["x_json_floor_p90"]), file=sys.stderr)


if __name__ == "__main__":
    main()
