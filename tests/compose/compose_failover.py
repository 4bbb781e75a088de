"""The checks compose_cluster_test.sh runs against docker/compose.cluster.yaml
once it is up: its two compactd replicas, published on loopback, read back
each other's spills byte for byte; then, under load from eight clients
through both, a master's replica stalls for 4 s and the master is SIGKILLed;
its replica must take over, the old master rejoin, writes to its slots be
acknowledged again, and every spill acknowledged with a 200 read back byte
for byte through both replicas afterwards (the approach of
tests/integration/test_cluster_failover.py, on containers).

  compose_failover.py PROJECT PORT_1 PORT_2

Redis is reached only with `podman exec <container> redis-cli`, inside the
containers' own network; compactd only on 127.0.0.1. Prints PASS:/FAIL:
lines; exits 1 if any check failed."""

import hashlib
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from cluster_load import Load, spill_text, spill_units  # noqa: E402
from harness import Client  # noqa: E402

failures = 0


def check(ok, what, detail=""):
    global failures
    if ok:
        print("PASS: %s" % what)
    else:
        failures += 1
        print("FAIL: %s%s" % (what, (": " + detail) if detail else ""))
    sys.stdout.flush()
    return ok


def note(text):
    print("  " + text)
    sys.stdout.flush()


class Replica:
    """A compactd replica as cluster_load.Load sees one: a loopback port."""

    def __init__(self, name, port):
        self.name = name
        self.port = port


class Stack:
    def __init__(self, project):
        self.project = project

    def container(self, service):
        # podman-compose 1.0.3 names containers <project>_<service>_<n>.
        return "%s_%s_1" % (self.project, service)

    def podman(self, *args, timeout=60):
        return subprocess.run(["podman", *args], capture_output=True, text=True,
                              timeout=timeout)

    def cli(self, service, *args):
        r = self.podman("exec", self.container(service), "redis-cli", *args, timeout=20)
        return r.stdout if r.returncode == 0 else ""

    def signal(self, service, sig):
        r = self.podman("kill", "--signal", sig, self.container(service))
        return r.returncode == 0

    def role(self, service):
        lines = self.cli(service, "role").split("\n")
        return lines[0].strip() if lines else ""

    def cluster_ok(self, service):
        return "cluster_state:ok" in self.cli(service, "cluster", "info")

    def nodes(self, via):
        """CLUSTER NODES as dicts: id, host (the announced hostname, which is
        the service name), flags, master (id or '-'), ranges of slots."""
        out = []
        for line in self.cli(via, "cluster", "nodes").splitlines():
            f = line.split()
            if len(f) < 8:
                continue
            host = f[1].split(",", 1)[1] if "," in f[1] else ""
            ranges = []
            for s in f[8:]:
                if s.startswith("["):
                    continue  # a slot being migrated
                lo, _, hi = s.partition("-")
                ranges.append((int(lo), int(hi or lo)))
            out.append({"id": f[0], "host": host, "flags": f[2].split(","),
                        "master": f[3], "ranges": ranges})
        return out


def wait_until(pred, seconds, step=0.5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def cross_reads(a, b):
    """Each replica compacts with a spill; the other reads it back."""
    text = 'tool state: "quoted" \\ back\\slash\ttab\nline two \u00e9\u4e2d\U0001f600 \u0001 end'
    problems = []
    count = 0
    for writer, reader in ((a, b), (b, a)):
        for i in range(4):
            session = "cross-%s-%d" % (writer.name, i)
            body = "%s %d %s" % (text, i, spill_text(session, 3000))
            w = Client(writer.port, validate=True)
            r = w.compact(session, spill_units("state", body), 100)
            if r.status != 200:
                problems.append("%s compact %s: %d %s" % (writer.name, session, r.status,
                                                          r.body[:200]))
                continue
            ext = [u for u in r.json.get("externalized", []) if u.get("key") == "state"]
            digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
            if len(ext) != 1 or not ext[0].get("href", "").endswith("sha256=" + digest):
                problems.append("%s: unit not externalized under its sha256: %s"
                                % (session, r.body[:300]))
                continue
            g = Client(reader.port, validate=True).get(ext[0]["href"])
            if g.status != 200 or g.json.get("key") != "state" or \
                    g.json.get("text", "").encode("utf-8") != body.encode("utf-8"):
                problems.append("%s read %s: %d" % (reader.name, ext[0]["href"], g.status))
                continue
            count += 1
    check(not problems and count == 8,
          "each compactd replica reads back byte for byte the spills the other wrote "
          "(%d of 8)" % count, "; ".join(problems[:3]))


def failover(stack, a, b):
    nodes = stack.nodes("redis-1")
    masters = sorted((n for n in nodes if "master" in n["flags"] and n["ranges"]),
                     key=lambda n: n["host"])
    if not check(len(masters) == 3 and len(nodes) == 6,
                 "the cluster has 6 nodes, 3 of them masters with slots",
                 "%d nodes, %d masters" % (len(nodes), len(masters))):
        return
    victim = masters[0]
    replicas = [n for n in nodes if n["master"] == victim["id"]]
    if not check(len(replicas) == 1 and victim["host"] and replicas[0]["host"],
                 "master %s has one replica, %s" % (victim["host"],
                                                    replicas[0]["host"] if replicas else "-")):
        return
    vname, rname = victim["host"], replicas[0]["host"]

    def in_victim(session):
        slot = int(stack.cli("redis-1", "cluster", "keyslot", "{default:%s}" % session) or -1)
        return any(lo <= slot <= hi for lo, hi in victim["ranges"])

    sessions = ["failover-%d" % i for i in range(32)]
    victim_sessions = {s for s in sessions if in_victim(s)}
    note("%d of %d sessions live in %s's slots" % (len(victim_sessions), len(sessions), vname))

    # Spills of about 40 KB: enough replication traffic in the 4 s the
    # replica is stopped to overflow the socket buffers that would otherwise
    # carry it all across, so that a master acknowledging without its
    # replica would lose writes.
    load = Load([a, b], sessions, size=40000).start()
    failover_s = None
    rejoined_at = None
    try:
        time.sleep(1.5)
        stalled = stack.signal(rname, "STOP")
        time.sleep(4.0)
        killed = stack.signal(vname, "KILL")
        stack.signal(rname, "CONT")
        killed_at = time.monotonic()
        check(stalled and killed, "replica %s stalled 4 s, then master %s SIGKILLed under load"
              % (rname, vname))
        promoted = wait_until(lambda: stack.role(rname) == "master", 30)
        ok = promoted and wait_until(lambda: stack.cluster_ok(rname), 30)
        failover_s = time.monotonic() - killed_at
        check(ok, "%s promoted and the cluster ok again (%.1f s after the kill)"
              % (rname, failover_s))
        if ok:
            time.sleep(1.0)
            # The old master comes back as the new master's replica; until
            # then the new master's commits cannot be replicated.
            started = stack.podman("start", stack.container(vname)).returncode == 0
            back = started and wait_until(
                lambda: stack.role(vname) == "slave" and stack.cluster_ok(vname), 60)
            check(back, "%s restarted and rejoined as a replica" % vname)
            rejoined_at = len(load.acknowledged)
            # Keep going until the failed-over slots acknowledge again.
            resumed = back and wait_until(
                lambda: any(s in victim_sessions for s, _, _ in load.acknowledged[rejoined_at:]),
                30)
            check(resumed, "compactions in %s's former slots are acknowledged again" % vname)
            time.sleep(1.0)
    finally:
        load.stop()

    lost = {}
    for replica in (a, b):
        for session, href, status in load.lost(replica):
            lost.setdefault(href, (session, replica.name, status))
    shortfalls = sum(1 for r in load.refused if "not replicated" in r[2])
    print("compose cluster failover: %d acknowledged, %d refused (%d not replicated), %d lost; "
          "failover took %s s"
          % (len(load.acknowledged), len(load.refused), shortfalls, len(lost),
             "%.1f" % failover_s if failover_s is not None else "-"))
    sys.stdout.flush()
    check(not load.failed, "no request failed other than with a 503 (%d did)" % len(load.failed),
          repr(load.failed[:3]))
    check(len(load.acknowledged) > 100,
          "more than 100 spills acknowledged under load (%d)" % len(load.acknowledged))
    check(not lost, "every acknowledged spill reads back byte for byte through both replicas "
          "(%d lost)" % len(lost), repr(list(lost.items())[:3]))


def main():
    project, port_1, port_2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    stack = Stack(project)
    a, b = Replica("compactd-1", port_1), Replica("compactd-2", port_2)
    cross_reads(a, b)
    failover(stack, a, b)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
