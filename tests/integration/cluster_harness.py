"""A real Redis Cluster for the tests: six redis-server processes in cluster
mode (tests/redis/launch.sh --cluster) on free loopback ports in a
temporary folder, joined by `redis-cli --cluster create --cluster-replicas 1`
into three masters with one replica each, and stopped by pid. With tls (a
redis_start.Tls), every node speaks TLS only, to clients, replicas and the
cluster bus alike.

Run as a script, it starts a cluster, runs the command given after `--` with
COMPACTD_TEST_CLUSTER set to the nodes' host:port list, and stops the
cluster: `cluster_harness.py -- ./store_cluster_cases`."""

import os
import signal
import subprocess
import sys
import tempfile
import time

import redis_start

SLOTS = 16384

# Small enough that a failover finishes in a few seconds of a test.
NODE_TIMEOUT_MS = 1000


def cluster_ports(n):
    """n distinct free loopback ports whose bus ports are free too."""
    ports = []
    while len(ports) < n:
        port = redis_start.free_port(bus=True)
        if port not in ports:
            ports.append(port)
    return ports


def cli(port, *args, timeout=10, tls=None):
    """Runs one command on the node at port; returns its raw output."""
    return redis_start.cli(port, *args, timeout=timeout, tls=tls)


class Node:
    def __init__(self, port, folder, tls=None, node_timeout_ms=NODE_TIMEOUT_MS):
        self.port = port
        self.dir = os.path.join(folder, str(port))
        os.mkdir(self.dir)
        self.proc = None
        self.tls = tls
        self.node_timeout_ms = node_timeout_ms

    def start(self, fresh=False):
        """Starts the node and waits until it answers; a restart keeps its
        port, a fresh node moves to another port while its own is taken."""
        self.proc, port = redis_start.launch(self.dir, None if fresh else self.port,
                                             cluster_timeout_ms=self.node_timeout_ms,
                                             tls=self.tls)
        self.port = port

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cli(self, *args, timeout=10):
        return cli(self.port, *args, timeout=timeout, tls=self.tls)

    def info(self, section):
        """CLUSTER INFO or INFO <section> as a dict."""
        raw = self.cli("CLUSTER", "INFO") if section == "cluster" else self.cli("INFO", section)
        return dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self.proc = None

    def addr(self):
        return "127.0.0.1:%d" % self.port


def wait_until(predicate, timeout=20.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        time.sleep(step)
    return False


class Cluster:
    """Three masters, three replicas, every slot assigned, state ok. A test
    that fails no node over may give a longer node timeout, so that a loaded
    machine does not make the nodes take each other for failed."""

    def __init__(self, n=6, tls=None, node_timeout_ms=NODE_TIMEOUT_MS):
        self.dir = tempfile.mkdtemp(prefix="compactd-cluster-")
        self.tls = tls
        self.nodes = [Node(p, self.dir, tls, node_timeout_ms) for p in cluster_ports(n)]
        try:
            for node in self.nodes:
                node.start(fresh=True)
            out = subprocess.run(self.redis_cli() + ["--cluster", "create"] +
                                 [n.addr() for n in self.nodes] +
                                 ["--cluster-replicas", "1", "--cluster-yes"],
                                 capture_output=True, timeout=60)
            if out.returncode != 0:
                raise RuntimeError("cluster create failed:\n" + out.stdout.decode() +
                                   out.stderr.decode())
            if not self.wait_ok():
                raise RuntimeError("cluster did not reach state ok")
        except BaseException:
            self.stop()
            raise

    def redis_cli(self):
        """redis-cli with the options that reach the nodes."""
        return ["redis-cli"] + (self.tls.cli_args() if self.tls else [])

    def live(self):
        return [n for n in self.nodes if n.alive()]

    def wait_ok(self, timeout=30.0):
        """Waits until every live node sees state ok, all slots served, and
        every replica's link to its master is up."""
        def ok():
            for n in self.live():
                info = n.info("cluster")
                if info.get("cluster_state") != "ok" or \
                        info.get("cluster_slots_ok") != str(SLOTS):
                    return False
                repl = n.info("replication")
                if repl.get("role") == "slave" and repl.get("master_link_status") != "up":
                    return False
                if repl.get("role") == "master" and len(self.live()) == len(self.nodes) and \
                        "state=online" not in repl.get("slave0", ""):
                    return False
            return True
        return wait_until(ok, timeout)

    def wait_agreed(self, timeout=30.0):
        """Waits until `redis-cli --cluster check` finds every node agreeing
        on the slot configuration (as reshard requires)."""
        def agreed():
            out = subprocess.run(self.redis_cli() + ["--cluster", "check", self.any().addr()],
                                 capture_output=True, timeout=30)
            return out.returncode == 0 and b"don't agree" not in out.stdout
        return wait_until(agreed, timeout, step=0.2)

    def seeds(self):
        return ",".join(n.addr() for n in self.nodes)

    def url(self, count=2):
        """redis+cluster:// (rediss+cluster:// over TLS) with the first count
        nodes as seeds."""
        return ("rediss" if self.tls else "redis") + "+cluster://" + \
            ",".join(n.addr() for n in self.nodes[:count]) + "/"

    def node(self, port):
        return next(n for n in self.nodes if n.port == int(port))

    def any(self):
        return self.live()[0]

    def masters(self):
        """Live masters as (node, [(start, end), ...]), each as it sees
        itself in CLUSTER NODES, ordered by port."""
        ranges = {}
        for n in self.live():
            for line in n.cli("CLUSTER", "NODES").splitlines():
                parts = line.split()
                if "myself" in parts[2] and "master" in parts[2]:
                    ranges[n.port] = [tuple(int(x) for x in r.split("-")) if "-" in r
                                      else (int(r), int(r))
                                      for r in parts[8:] if not r.startswith("[")]
        return [(self.node(p), r) for p, r in sorted(ranges.items())]

    def master_of(self, key):
        slot = int(self.any().cli("CLUSTER", "KEYSLOT", key))
        for node, ranges in self.masters():
            if any(a <= slot <= b for a, b in ranges):
                return node
        raise LookupError("slot %d unserved" % slot)

    def replica_of(self, master):
        node_id = master.cli("CLUSTER", "MYID")
        for n in self.live():
            if n is not master and n.info("replication").get("role") == "slave":
                for line in n.cli("CLUSTER", "NODES").splitlines():
                    parts = line.split()
                    if "myself" in parts[2] and parts[3] == node_id:
                        return n
        return None

    def stop(self):
        for node in self.nodes:
            try:
                node.kill(signal.SIGTERM)
            except subprocess.TimeoutExpired:
                node.kill(signal.SIGKILL)
        subprocess.run(["rm", "-rf", self.dir])


def main(argv):
    if "--" not in argv:
        print("usage: cluster_harness.py -- command...", file=sys.stderr)
        return 2
    cmd = argv[argv.index("--") + 1:]
    cluster = Cluster()
    try:
        env = dict(os.environ, COMPACTD_TEST_CLUSTER=cluster.seeds())
        return subprocess.run(cmd, env=env, timeout=300).returncode
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
