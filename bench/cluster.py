"""The spill workload against one Redis and against a Redis Cluster (three
masters, three replicas, tests/integration/cluster_harness.py) with one and
two compactd replicas, in one run; then what one session's spills hold in
Redis memory. Run by bench/cluster, which builds compactd first.

    python3 bench/cluster.py COMPACTD_BIN OUT_JSON

Settings (environment): BENCH_DURATION (seconds per wrk run, default 5),
BENCH_REPEAT (rounds, median taken, default 3), BENCH_CONNECTIONS (wrk
connections in all, split over the replicas, default 16), BENCH_THREADS
(worker threads per compactd, default 2 x cores), BENCH_MEMORY_SESSIONS
(sessions written for the memory figure, default 500)."""

import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import cluster_harness  # noqa: E402
import harness  # noqa: E402

DURATION = int(os.environ.get("BENCH_DURATION", "5"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
CONNS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
THREADS = int(os.environ.get("BENCH_THREADS", str(2 * os.cpu_count())))
MEMORY_SESSIONS = int(os.environ.get("BENCH_MEMORY_SESSIONS", "500"))


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def wrk(replicas, body, prefix):
    """One run of wrk per replica at once, CONNS connections in all; returns
    the summed req/s and the worst p99 (ms), or raises on errors."""
    procs = []
    for i, r in enumerate(replicas):
        procs.append(subprocess.Popen(
            ["wrk", "-t1", "-c%d" % (CONNS // len(replicas)), "-d%ds" % DURATION,
             "--timeout", "60s", "-s", os.path.join(HERE, "wrk", "post_sessions.lua"),
             "http://127.0.0.1:%d" % r.port, "--", body, "1000", "%s-%d" % (prefix, i)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    rps, p99 = 0.0, 0.0
    for p in procs:
        out = p.communicate()[0].decode()
        line = next((x for x in out.splitlines() if x.startswith("BENCH_RESULT ")), None)
        if p.returncode != 0 or not line:
            raise RuntimeError("wrk failed:\n" + out)
        res = json.loads(line[len("BENCH_RESULT "):])
        errors = sum(res["errors"].values())
        if errors:
            raise RuntimeError("wrk saw %d errors: %s" % (errors, res["errors"]))
        rps += res["rps"]
        p99 = max(p99, float(res["p99_ms"]))
    return rps, p99


def start_replicas(url, n, env=None):
    full_env = {"COMPACTD_THREADS": str(THREADS), "COMPACTD_LOG_LEVEL": "warn",
                "COMPACTD_REDIS_TIMEOUT_MS": "5000"}
    full_env.update(env or {})
    return [harness.Compactd(url, env=full_env) for _ in range(n)]


def measure(setups, body):
    """Rounds in turn over every setup (label, replicas), so that load from
    elsewhere on the machine falls on all of them alike; the median round of
    each."""
    rounds = {label: [] for label, _ in setups}
    for i in range(REPEAT):
        for label, replicas in setups:
            rounds[label].append(wrk(replicas, body, "%s-r%d" % (label.split()[0], i)))
            log("%-40s round %d: %8.0f req/s  p99 %.2f ms" % (label, i + 1, *rounds[label][-1]))
    rows = []
    for label, _ in setups:
        rps = statistics.median(r[0] for r in rounds[label])
        p99 = statistics.median(r[1] for r in rounds[label])
        rows.append({"setup": label, "rps": rps, "p99_ms": p99, "rounds": rounds[label]})
    return rows


def used_memory(redis):
    info = redis.cli("INFO", "memory")
    return int(next(x for x in info.splitlines() if x.startswith("used_memory:")).split(":")[1])


def memory_per_session(body, spill_bytes):
    """Writes MEMORY_SESSIONS sessions, one spill compaction each, and
    returns the Redis memory each added."""
    redis = harness.Redis()
    server = harness.Compactd(redis.url(), env={"COMPACTD_LOG_LEVEL": "warn"})
    try:
        with open(body, "rb") as f:
            data = f.read()
        client = server.client(validate=False)
        before = used_memory(redis)
        for i in range(MEMORY_SESSIONS):
            r = client.request("POST", "/v1/sessions/mem-%d/compact" % i, data, raw=True)
            if r.status != 200:
                raise RuntimeError("compaction failed: %d %s" % (r.status, r.body[:200]))
        per = (used_memory(redis) - before) / MEMORY_SESSIONS
    finally:
        harness.stop_all(server, redis)
    return {"sessions": MEMORY_SESSIONS, "spill_bytes_per_session": spill_bytes,
            "redis_bytes_per_session": per, "sessions_per_gib": (1 << 30) / per}


def main(argv):
    harness.COMPACTD = argv[1]
    out_path = argv[2]
    bodies = tempfile.mkdtemp(prefix="compactd-bench-bodies-")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_bodies.py"), bodies, "--scaling",
                    "100"], check=True, stdout=subprocess.DEVNULL)
    body = os.path.join(bodies, "spill.json")
    with open(os.path.join(bodies, "manifest.json")) as f:
        spill = json.load(f)["spill"]

    # The same durable configuration everywhere: docker/redis.conf (AOF,
    # appendfsync always), plus cluster mode on the cluster.
    redis = harness.Redis()
    cluster = None
    replicas = []
    try:
        cluster = cluster_harness.Cluster()
        url = cluster.url(3)
        setups = [("one Redis, 1 compactd", start_replicas(redis.url(), 1)),
                  ("cluster 3+3, 1 compactd", start_replicas(url, 1)),
                  ("cluster 3+3, 2 compactd", start_replicas(url, 2)),
                  ("cluster 3+3, 2 compactd, MIN_REPLICAS=1",
                   start_replicas(url, 2, {"COMPACTD_REDIS_MIN_REPLICAS": "1"}))]
        replicas = [r for _, rs in setups for r in rs]
        load_before = os.getloadavg()[0]
        rows = measure(setups, body)
        load_after = os.getloadavg()[0]
    finally:
        harness.stop_all(*replicas, redis, *([cluster] if cluster else []))
    memory = memory_per_session(body, spill["spill_bytes_total"])

    base = rows[0]["rps"]
    print("\n| setup | req/s | p99 ms | x one Redis |\n| --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %.0f | %.2f | %.2f |" % (r["setup"], r["rps"], r["p99_ms"], r["rps"] / base))
    print("\nspill workload: %d units, %d bytes, %d spilled (%d bytes of text) per request; "
          "%d connections in all, %d s x %d rounds, %d worker threads per compactd"
          % (spill["units"], spill["bytes"], spill["expected_externalized"],
             spill["spill_bytes_total"], CONNS, DURATION, REPEAT, THREADS))
    print("load average %.2f before, %.2f after (%d cores)"
          % (load_before, load_after, os.cpu_count()))
    print("memory: %.0f bytes of Redis memory per session (%d bytes of spilled text, one "
          "compaction), %.0f sessions per GiB (%d sessions measured)"
          % (memory["redis_bytes_per_session"], memory["spill_bytes_per_session"],
             memory["sessions_per_gib"], memory["sessions"]))
    with open(out_path, "w") as f:
        json.dump({"rows": rows, "memory": memory, "spill": spill, "connections": CONNS,
                   "load_average": [load_before, load_after],
                   "duration_s": DURATION, "repeat": REPEAT, "threads": THREADS}, f, indent=1)
    subprocess.run(["rm", "-rf", bodies])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
