#!/usr/bin/env python3
"""Measures what one client can do to compactd's memory and to the other
clients: the answer to a large JSON-RPC batch, a large answer read slowly,
and requests that need no Redis while Redis is stalled. Prints figures, asserts nothing.

    COMPACTD_BIN=build/compactd python3 bench/http/hardening.py [scenario...]

Scenarios: batch_tools_list, batch_reacquire, slow_reader, stalled_redis
(all by default). Uses the integration tests' harness: a private Redis and
compactd on free loopback ports, stopped at the end."""

import json
import os
import signal
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

from harness import Compactd, Redis, stop_all  # noqa: E402

MIB = 1 << 20


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def spill(server, session, key, size):
    text = ("%s-" % key) * (size // (len(key) + 1))
    r = server.client(validate=False).compact(
        session, [{"key": key, "class": "protected", "tokens": 10 ** 6, "text": text}], 60)
    assert r.status == 200, r.body[:300]
    return r.json["externalized"][0]["sha256"]


def reacquires(session, key, sha, n):
    return [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": {"name": "reacquire",
                        "arguments": {"session": session, "key": key, "sha256": sha}}}
            for i in range(n)]


def post_mcp(server, body):
    """One POST /mcp; returns (status, answer bytes, seconds, peak RSS growth MiB)."""
    before = vm_kib(server.proc.pid, "VmHWM")
    t0 = time.monotonic()
    r = server.client(validate=False, timeout=300).post("/mcp", body)
    took = time.monotonic() - t0
    return r, took, (vm_kib(server.proc.pid, "VmHWM") - before) / 1024


def summary(r):
    try:
        doc = json.loads(r.body)
    except ValueError:
        return "unparsable"
    if isinstance(doc, list):
        codes = {}
        for m in doc:
            k = "result" if "result" in m else str(m["error"]["code"])
            codes[k] = codes.get(k, 0) + 1
        return "%d answers %s" % (len(doc), codes)
    return "error %s" % doc.get("error", {}).get("code")


def batch_tools_list(redis):
    server = Compactd(redis.url())
    try:
        one = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        n = (1 * MIB) // len(json.dumps(one))
        body = [dict(one, id=i) for i in range(n)]
        r, took, rss = post_mcp(server, body)
        print("batch_tools_list: %d-message batch (%.2f MiB): HTTP %d, %.1f MiB answer, %.2f s, "
              "peak RSS +%.0f MiB; %s" % (n, len(json.dumps(body)) / MIB, r.status,
                                         len(r.body) / MIB, took, rss, summary(r)))
    finally:
        stop_all(server)


def batch_reacquire(redis):
    server = Compactd(redis.url())
    try:
        sha = spill(server, "big", "log", 4 * MIB)
        body = reacquires("big", "log", sha, 48)
        r, took, rss = post_mcp(server, body)
        print("batch_reacquire: 48 reacquires of a 4 MiB spill (%d-byte body): HTTP %d, "
              "%.1f MiB answer, %.2f s, peak RSS +%.0f MiB; %s"
              % (len(json.dumps(body)), r.status, len(r.body) / MIB, took, rss, summary(r)))
    finally:
        stop_all(server)


def slow_reader(redis):
    server = Compactd(redis.url())
    try:
        sha = spill(server, "big", "log", 4 * MIB)
        small = spill(server, "small", "k", 64 << 10)
        body = json.dumps(reacquires("big", "log", sha, 64)).encode()
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        s.connect(("127.0.0.1", server.port))
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        s.settimeout(120)
        s.recv(1)
        began = time.monotonic()
        state = {"got": 1, "cut": None}

        def read_slowly():  # about 100 KB/s
            while True:
                try:
                    part = s.recv(10240)
                except OSError:
                    part = b""
                if not part:
                    state["cut"] = time.monotonic() - began
                    return
                state["got"] += len(part)
                time.sleep(0.1)

        reader = threading.Thread(target=read_slowly)
        reader.start()
        http = server.client(validate=False)
        statuses = []
        lat = []
        for _ in range(70):
            t0 = time.monotonic()
            r = http.get("/v1/sessions/small/spills/k?sha256=" + small)
            lat.append(time.monotonic() - t0)
            statuses.append(r.status)
            time.sleep(0.2)
        reader.join(60)
        refused = sum(1 for x in statuses if x == 503)
        lat.sort()
        print("slow_reader: 64 reacquires of a 4 MiB spill read at ~100 KB/s: cut after %s s "
              "with %d KiB read; meanwhile %d of 70 other requests refused 503, median %.0f ms, "
              "max %.0f ms" % ("%.1f" % state["cut"] if state["cut"] else "?", state["got"] // 1024,
                               refused, lat[35] * 1000, lat[-1] * 1000))
        s.close()
    finally:
        stop_all(server)


def stalled_redis(redis):
    server = Compactd(redis.url())
    http = server.client(validate=False, timeout=120)
    units = [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
             {"key": "log", "class": "protected", "tokens": 900, "text": "make: Error 1\n" * 50}]
    fits = [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."}]
    sha = http.compact("s", units, 100).json["externalized"][0]["sha256"]
    redis.proc.send_signal(signal.SIGSTOP)
    stop = threading.Event()
    try:
        def spiller(i):
            c = server.client(validate=False, timeout=120)
            while not stop.is_set():
                c.compact("p%d" % i, units, 100)

        clients = [threading.Thread(target=spiller, args=(i,)) for i in range(32)]
        for t in clients:
            t.start()
        time.sleep(1.0)
        for what, fn in [
                ("/v1/tokens", lambda: http.post("/v1/tokens", {"texts": ["hello world"]})),
                ("dry-run compaction", lambda: http.compact("d", units, 100, dry_run=True)),
                ("no-spill compaction", lambda: http.compact("n", fits, 100)),
                ("MCP ping", lambda: http.post("/mcp", {"jsonrpc": "2.0", "id": 1,
                                                        "method": "ping"}))]:
            t0 = time.monotonic()
            r = fn()
            print("stalled_redis: 32 clients spilling; %s: HTTP %d in %.2f s"
                  % (what, r.status, time.monotonic() - t0))
        stop.set()
        for t in clients:
            t.join(120)
        t0 = time.monotonic()
        r = http.post("/mcp", reacquires("s", "log", sha, 64))
        print("stalled_redis: a batch of 64 reacquires held a thread %.1f s: HTTP %d, %s"
              % (time.monotonic() - t0, r.status, summary(r)))
    finally:
        stop.set()
        redis.proc.send_signal(signal.SIGCONT)
        stop_all(server)


SCENARIOS = {f.__name__: f for f in (batch_tools_list, batch_reacquire, slow_reader, stalled_redis)}

if __name__ == "__main__":
    names = sys.argv[1:] or list(SCENARIOS)
    redis = Redis()
    try:
        for name in names:
            SCENARIOS[name](redis)
    finally:
        stop_all(redis)
