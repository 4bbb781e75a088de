#!/usr/bin/env python3
"""The largest commit compactd takes, and what it costs everyone else.

Starts a private redis-server and the given compactd on loopback, sends one
compaction of 100,000 protected units (31 MiB, every unit spilled), and
meanwhile another session's small spilling compaction every 20 ms. Prints
the large request's time, the longest command Redis ran (SLOWLOG, over
5 ms), and the other session's latencies while it ran.

  bench/store/large_commit.py <compactd binary> [rounds]
"""

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

UNITS = 100000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(port, path, body, headers=None, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    conn.request("POST", path, body, h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                          text=True).stdout


def main():
    binary = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tmp = tempfile.mkdtemp(prefix="compactd-bench-")
    rport, cport = free_port(), free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                              "--dir", tmp, "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    env = dict(os.environ, COMPACTD_LISTEN="127.0.0.1:%d" % cport,
               COMPACTD_REDIS_URL="redis://127.0.0.1:%d/0" % rport,
               COMPACTD_REDIS_TIMEOUT_MS="10000",
               COMPACTD_MAX_BODY_BYTES=str(64 << 20),
               COMPACTD_MAX_INFLIGHT_BYTES=str(1 << 30))
    server = subprocess.Popen([binary], env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                http.client.HTTPConnection("127.0.0.1", cport, timeout=1).request("GET", "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        units = [{"key": "unit-%d" % i, "class": "protected", "tokens": 1000,
                  "text": ("fact %d " % i) + "x" * 260} for i in range(UNITS)]
        small = json.dumps({"budget": 60, "units": [
            {"key": "fact", "class": "protected", "tokens": 400, "text": "y" * 400}]})
        for r in range(rounds):
            big = json.dumps({"budget": UNITS * 60, "units": units}).encode()
            cli(rport, "CONFIG", "SET", "slowlog-log-slower-than", "5000")
            cli(rport, "SLOWLOG", "RESET")
            lat, stop = [], threading.Event()

            def other():
                while not stop.is_set():
                    t0 = time.monotonic()
                    st, _ = post(cport, "/v1/sessions/other-%d/compact" % r, small)
                    lat.append((time.monotonic() - t0, st))
                    time.sleep(0.02)

            t = threading.Thread(target=other)
            t.start()
            t0 = time.monotonic()
            status, body = post(cport, "/v1/sessions/big-%d/compact" % r, big)
            took = time.monotonic() - t0
            time.sleep(0.1)
            stop.set()
            t.join()
            out = subprocess.run(["redis-cli", "-p", str(rport), "--csv", "SLOWLOG", "GET", "1000"],
                                 capture_output=True, text=True).stdout
            durations = []
            for row in out.split("\n"):
                parts = row.split(",")
                if len(parts) > 2 and parts[2].strip('"').isdigit():
                    durations.append(int(parts[2].strip('"')))
            longest = max(durations) if durations else 0
            others = sorted(x for x, _ in lat)
            bad = sum(1 for _, st in lat if st != 200)
            spilled = len(json.loads(body).get("externalized", [])) if status == 200 else 0
            print("round %d: %d in %.2f s (%d spilled); Redis's longest command %.1f ms; "
                  "another session: %d requests, p50 %.1f ms, max %.1f ms, %d not 200"
                  % (r, status, took, spilled, longest / 1000, len(others),
                     statistics.median(others) * 1000 if others else 0,
                     others[-1] * 1000 if others else 0, bad))
            cli(rport, "FLUSHALL")
    finally:
        server.terminate()
        server.wait()
        redis.terminate()
        redis.wait()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
