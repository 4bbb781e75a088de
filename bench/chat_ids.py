"""How the time to check a chat history's tool-call ids grows with the
number of calls: one assistant message with N calls that no result answers
(answered 400 once every id is checked), in both formats, N = 20k, 40k and
100k by default. Linear checking keeps the 100k/20k ratio near 5; a
quadratic one makes it near 25.

    python3 bench/chat_ids.py [COMPACTD_BIN]

Settings (environment): BENCH_CALLS (comma-separated call counts),
BENCH_REPEAT (runs per size, the median taken, default 3)."""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402

CALLS = [int(x) for x in os.environ.get("BENCH_CALLS", "20000,40000,100000").split(",")]
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))


def body(fmt, n):
    if fmt == "openai":
        calls = [{"id": "call_%07d" % k, "type": "function",
                  "function": {"name": "read_file", "arguments": "{}"}} for k in range(n)]
        msgs = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": calls}]
    else:
        calls = [{"type": "tool_use", "id": "toolu_%07d" % k, "name": "read_file", "input": {}}
                 for k in range(n)]
        msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": calls}]
    return json.dumps({"format": fmt, "budget": 1000000, "messages": msgs}).encode()


def main(argv):
    if len(argv) > 1:
        harness.COMPACTD = argv[1]
    redis = harness.Redis()
    server = harness.Compactd(redis.url(), env={"COMPACTD_LOG_LEVEL": "warn"})
    try:
        client = server.client(validate=False, timeout=600)
        rows = []
        for fmt in ("openai", "anthropic"):
            first = None
            for n in CALLS:
                data = body(fmt, n)
                times = []
                for _ in range(REPEAT):
                    t0 = time.monotonic()
                    r = client.request("POST", "/v1/sessions/ids/messages/compact", data,
                                       raw=True)
                    times.append(time.monotonic() - t0)
                    if r.status != 400:
                        raise RuntimeError("want 400, got %d %s" % (r.status, r.body[:200]))
                t = statistics.median(times)
                first = first or (n, t)
                ratio = t / first[1] if first[1] > 0 else float("nan")
                rows.append((fmt, n, len(data), t, ratio, n / first[0]))
        print("%-10s %8s %10s %9s %14s" % ("format", "calls", "body MiB", "seconds",
                                            "time x (calls x)"))
        for fmt, n, size, t, ratio, grow in rows:
            print("%-10s %8d %10.1f %9.3f %8.1f (%.0f)" % (fmt, n, size / 1048576, t, ratio, grow))
    finally:
        harness.stop_all(server, redis)


if __name__ == "__main__":
    main(sys.argv)
