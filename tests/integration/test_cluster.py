"""compactd on a real Redis Cluster (three masters, three replicas on
loopback) through two compactd replicas: sessions routed to their slot's
master, every endpoint served by either replica, readiness that needs
every slot, and slots moved with `redis-cli --cluster reshard` while eight
clients compact with spills."""

import hashlib
import json
import signal
import subprocess
import time
import unittest

from cluster_harness import Cluster
from cluster_load import Load, spill_text, spill_units
import harness
from harness import Compactd, Redis, stop_all, wait_until

ENV = {"COMPACTD_REDIS_TIMEOUT_MS": "2000", "COMPACTD_THREADS": "4"}


def metric(replica, name):
    for line in replica.client().get("/metrics").body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return line
    raise LookupError(name)


def metric_sum(replica, name):
    total = 0
    for line in replica.client().get("/metrics").body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += int(line.rsplit(" ", 1)[1])
    return total


class ClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        try:
            # Each replica knows the cluster by different seed nodes.
            nodes = cls.cluster.nodes
            cls.a = Compactd("redis+cluster://%s,%s/" % (nodes[0].addr(), nodes[1].addr()),
                             env=ENV)
            cls.b = Compactd("redis+cluster://%s/" % nodes[4].addr(), env=ENV)
        except BaseException:
            cls.cluster.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.a, cls.b, cls.cluster)

    def compact(self, replica, session, key, text):
        r = replica.client().compact(session, spill_units(key, text), 100)
        self.assertEqual(r.status, 200, r.body)
        return r.json["externalized"][0]

    def test_sessions_spread_over_all_masters(self):
        masters = set()
        for i in range(24):
            session = "spread-%d" % i
            replica = (self.a, self.b)[i % 2]
            self.compact(replica, session, "log", spill_text(session, 500))
            key = "compactd:{default:%s}:text" % session
            owner = self.cluster.master_of(key)  # by CLUSTER KEYSLOT
            # Asked directly, the owner has the session's keys (another
            # master would answer MOVED).
            self.assertEqual(owner.cli("HLEN", key), "1")
            self.assertEqual(owner.cli("EXISTS", "compactd:{default:%s}:events" % session), "1")
            masters.add(owner.port)
        self.assertEqual(len(masters), 3, "24 sessions on %d masters" % len(masters))

    def test_every_endpoint_through_either_replica(self):
        text = spill_text("endpoints", 3000)
        e = self.compact(self.a, "both", "build.log", text)
        b = self.b.client()
        got = b.get(e["href"])
        self.assertEqual(got.status, 200, got.body)
        self.assertEqual(got.json["text"], text)
        listed = b.get("/v1/sessions/both/spills").json["spills"]
        self.assertEqual([s["key"] for s in listed], ["build.log"])

        # A compaction without spills on b: its log entry is read on a.
        r = b.compact("both", [{"key": "d", "class": "derivable", "tokens": 5}], 100)
        self.assertEqual(r.status, 200, r.body)
        for replica in (self.a, self.b):
            ev = replica.client().get("/v1/sessions/both/events").json["events"]
            self.assertEqual([x["kind"] for x in ev], ["compact", "compact"], ev)

        units = [{"key": "build.log", "class": "protected", "tokens": 1000, "text": text}]
        v = b.post("/v1/sessions/both/verify", {"context": "ctx " + e["pointer"], "units": units})
        self.assertEqual(v.status, 200, v.body)
        self.assertEqual(v.json["verdict"], "safe")
        self.assertEqual(v.json["present"], [{"key": "build.log", "as": "pointer"}])

        for replica in (self.a, self.b):
            self.assertEqual(replica.client().get("/readyz").status, 200)
            self.assertGreater(metric_sum(replica, "compactd_redis_slot_map_refreshes_total"), 0)
            metric(replica, "compactd_redis_redirections_total")
            metric(replica, "compactd_redis_retries_total")
            metric(replica, "compactd_redis_wait_shortfalls_total")

        # A spill read by the 16-digit prefix its pointer carries, and over
        # MCP, on b.
        got = b.get("/v1/sessions/both/spills/build.log?sha256=" + e["sha256"][:16])
        self.assertEqual(got.json["text"], text)
        r = b.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "reacquire",
                                       "arguments": {"session": "both",
                                                     "pointer": e["pointer"]}}})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["result"]["content"][0]["text"], text)

        # A chat history compacted on a, its spilled tool result read on b.
        result = spill_text("migration", 3000)
        chat = {"format": "openai", "budget": 400,
                "policy": {"protect_tools": ["apply_migration"]},
                "messages": [
                    {"role": "user", "content": "Migrate the schema."},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "apply_migration", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": result},
                    {"role": "user", "content": "Go on."}]}
        r = self.a.client().post("/v1/sessions/both/messages/compact", chat)
        self.assertEqual(r.status, 200, r.body)
        hrefs = [d["href"] for d in r.json["decisions"] if d["decision"] == "externalized"]
        self.assertEqual(len(hrefs), 1, r.json["decisions"])
        # The spill is the whole message, as JSON.
        self.assertEqual(json.loads(b.get(hrefs[0]).json["text"])["content"], result)

        self.assertEqual(b.delete("/v1/sessions/both").status, 204)
        self.assertEqual(self.a.client().get(e["href"]).status, 404)
        self.assertEqual(self.a.client().get("/v1/sessions/both/spills").json["spills"], [])

    def test_ready_only_when_every_slot_is_served(self):
        slot = 16383
        owner = next(node for node, ranges in self.cluster.masters()
                     if any(lo <= slot <= hi for lo, hi in ranges))
        for node in self.cluster.live():
            node.cli("CLUSTER", "DELSLOTS", slot)
        try:
            # Readiness is probed in the background: it follows within a probe.
            # Which cause it names first depends on gossip (the slot missing
            # from the map, or a master already saying the cluster is down),
            # and on a loaded machine a probe that answered late may be
            # named before either; the slot's cause must follow.
            seen = []

            def names_the_slot():
                r = self.a.client().get("/readyz")
                seen.append((r.status, r.body))
                msg = r.json["error"]["message"] if r.status == 503 else ""
                return ("16383 of 16384 slots served" in msg or
                        "cluster_state is not ok" in msg)
            self.assertTrue(wait_until(names_the_slot, 20, 0.05), seen[-3:])
        finally:
            owner.cli("CLUSTER", "ADDSLOTS", slot)
            self.assertTrue(self.cluster.wait_ok())
        self.assertTrue(self.wait_ready(self.a))

    def wait_ready(self, replica, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if replica.client().get("/readyz").status == 200:
                return True
            time.sleep(0.1)
        return False

    def test_resharding_under_load_fails_no_request_and_loses_no_spill(self):
        (src, src_ranges), (dst, _), (third, _) = self.cluster.masters()
        lo = src_ranges[0][0]
        moved = range(lo, lo + 600)  # redis-cli reshard takes a source's first slots
        # Sessions in the slots that move, and some that stay.
        # Many small sessions, so that each slot's MIGRATE (which blocks
        # both masters while it runs) stays short.
        sessions, i = [], 0
        while len(sessions) < 48:
            s = "reshard-%d" % i
            i += 1
            slot = int(self.cluster.any().cli("CLUSTER", "KEYSLOT", "{default:%s}" % s))
            if (slot in moved) == (len(sessions) % 3 != 0):
                sessions.append(s)
        redirections = metric_sum(self.a, "compactd_redis_redirections_total") + \
            metric_sum(self.b, "compactd_redis_redirections_total")

        load = Load([self.a, self.b], sessions, size=400).start()
        try:
            time.sleep(0.5)
            for frm, to in ((src, dst), (dst, third)):
                self.assertTrue(self.cluster.wait_agreed())
                out = subprocess.run(
                    ["redis-cli", "--cluster", "reshard", src.addr(),
                     "--cluster-from", frm.cli("CLUSTER", "MYID"),
                     "--cluster-to", to.cli("CLUSTER", "MYID"),
                     "--cluster-slots", str(len(moved)), "--cluster-yes"],
                    capture_output=True, timeout=120)
                self.assertEqual(out.returncode, 0, out.stdout[-2000:] + out.stderr[-2000:])
            time.sleep(0.5)
        finally:
            load.stop()
        after = metric_sum(self.a, "compactd_redis_redirections_total") + \
            metric_sum(self.b, "compactd_redis_redirections_total")
        lost = load.lost(self.b) + load.lost(self.a)
        print("\nresharding: %d acknowledged, %d refused, %d failed, %d lost, %d redirections"
              % (len(load.acknowledged), len(load.refused), len(load.failed), len(lost),
                 after - redirections))
        self.assertEqual(load.failed, [])
        self.assertEqual(load.refused, [])
        self.assertGreater(len(load.acknowledged), 100)
        self.assertEqual(lost, [])
        # The slots did move under the clients: compactd was redirected.
        self.assertGreater(after, redirections)
        owner = self.cluster.master_of("compactd:{default:%s}:text" % sessions[1])
        self.assertNotEqual(owner.port, src.port)


class ClusterAuthTest(unittest.TestCase):
    """A cluster whose nodes ask for a password: compactd sends AUTH on
    every connection, to the seed and to each master a redirection or the
    slot map names."""

    PASSWORD = "cluster-s3cret"

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        try:
            for node in cls.cluster.nodes:
                node.cli("CONFIG", "SET", "masterauth", cls.PASSWORD)
                node.cli("CONFIG", "SET", "requirepass", cls.PASSWORD)
            seed = cls.cluster.nodes[0].addr()
            cls.server = Compactd("redis+cluster://:%s@%s/" % (cls.PASSWORD, seed), env=ENV)
        except BaseException:
            cls.cluster.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.server, cls.cluster)

    def test_every_master_is_reached_with_the_password(self):
        http = self.server.client()
        self.assertTrue(wait_until(lambda: http.get("/readyz").status == 200, 20, 0.2))
        auth = ("-a", self.PASSWORD, "--no-auth-warning")
        ranges = []  # (first slot, last slot, master id)
        for line in self.cluster.nodes[0].cli(*auth, "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "master" in fields[2]:
                for r in fields[8:]:
                    first, _, last = r.partition("-")
                    ranges.append((int(first), int(last or first), fields[0]))
        masters = set()
        for i in range(24):
            session = "auth-%d" % i
            r = http.compact(session, spill_units("log", spill_text(session, 300)), 100)
            self.assertEqual(r.status, 200, r.body)
            back = http.get(r.json["externalized"][0]["href"])
            self.assertEqual(back.status, 200, back.body)
            self.assertEqual(back.json["text"], spill_text(session, 300))
            key = "compactd:{default:%s}:text" % session
            slot = int(self.cluster.nodes[0].cli(*auth, "CLUSTER", "KEYSLOT", key))
            masters.update(m for first, last, m in ranges if first <= slot <= last)
        self.assertEqual(len(masters), 3)
        self.assertNotIn(self.PASSWORD, self.server.stderr())


class ClusterUrlTest(unittest.TestCase):
    def assertRefused(self, urls, expected):
        for url in urls:
            out = subprocess.run([harness.COMPACTD, "--redis-url", url],
                                 capture_output=True, timeout=10)
            self.assertEqual(out.returncode, 2, url)
            self.assertIn(expected, out.stderr, url)

    def test_bad_cluster_urls_exit_2_with_a_message(self):
        self.assertRefused(("redis+cluster://", "redis+cluster:///", "redis+cluster://host/",
                            "redis+cluster://host:0/", "redis+cluster://a:1,/",
                            "redis+cluster://a:1/0", "redis+cluster://[::1/"),
                           b"expected redis+cluster://host:port,host:port/")

    def test_bad_single_urls_exit_2_with_a_message(self):
        self.assertRefused(("redis://", "redis://a,b:1/", "redis://h:0/", "redis://h:1/x",
                            "redis://[::1", "redis://:5/"), b"expected redis://host:port/db")

    def test_seed_lists_are_accepted(self):
        # Accepted: compactd starts serving (it connects lazily).
        for url in ("redis+cluster://a:1/", "redis+cluster://a:1,b:2,[::1]:3",
                    "redis+cluster://10.0.0.1:7000,10.0.0.2:7001/", "redis://[::1]:7000/3"):
            proc = subprocess.Popen([harness.COMPACTD, "--redis-url", url, "--listen",
                                     "127.0.0.1:0"], stderr=subprocess.PIPE)
            try:
                line = b""
                while b"listening on" not in line and proc.poll() is None:
                    line = proc.stderr.readline()
                self.assertIn(b"listening on", line, url)
            finally:
                proc.kill()
                proc.wait(timeout=10)
                proc.stderr.close()


class MinReplicasSingleRedisTest(unittest.TestCase):
    """COMPACTD_REDIS_MIN_REPLICAS on one Redis: WAIT after each commit."""

    def test_shortfall_is_503_that_says_so_and_a_retry_returns_the_same_pointer(self):
        master = Redis()
        replica = None
        server = Compactd(master.url(), env={"COMPACTD_REDIS_MIN_REPLICAS": "1",
                                             "COMPACTD_REDIS_TIMEOUT_MS": "1000"})
        try:
            http = server.client()
            text = spill_text("single", 800)
            units = spill_units("log", text)
            r = http.compact("s", units, 100)
            self.assertEqual(r.status, 503, r.body)
            self.assertEqual(r.json["error"]["type"], "StoreUnavailable")
            self.assertIn("not replicated", r.json["error"]["message"])
            self.assertIn("0 of 1 replicas", r.json["error"]["message"])
            self.assertEqual(metric_sum(server, "compactd_redis_wait_shortfalls_total"), 1)
            # What such a 503 leaves behind: the spill and its log entry, on
            # the master only.
            self.assertEqual(master.cli("HLEN", "compactd:{default:s}:text"), "1")
            self.assertEqual(master.cli("XLEN", "compactd:{default:s}:events"), "1")
            # A compaction without spills waits for no replica.
            self.assertEqual(http.compact("s", [{"key": "d", "class": "derivable",
                                                 "tokens": 5}], 100).status, 200)

            replica = Redis()
            replica.cli("REPLICAOF", "127.0.0.1", str(master.port))
            self.assertTrue(wait_until(
                lambda: "state=online" in master.cli("INFO", "replication")))
            # The client retries, as after any such 503: a replica just
            # attached can take more than the 1 s timeout to send its first
            # acknowledgement on a loaded machine, and every retry is safe.
            for _ in range(10):
                again = http.compact("s", units, 100)
                if again.status == 200:
                    break
                self.assertIn("not replicated", again.json["error"]["message"])
            self.assertEqual(again.status, 200, again.body)
            e = again.json["externalized"][0]
            got = http.get(e["href"])
            self.assertEqual(got.json["text"], text)
            # Content-addressed: the same pointer the refused request would
            # have returned, and still one copy of the spill.
            self.assertEqual(e["sha256"], hashlib.sha256(text.encode()).hexdigest())
            self.assertEqual(master.cli("HLEN", "compactd:{default:s}:text"), "1")
            self.assertEqual(replica.cli("HLEN", "compactd:{default:s}:text"), "1")
        finally:
            if replica:
                # Not SIGTERM: a replica in its first AOF rewrite, or a master
                # waiting for it to catch up, can take seconds to shut down.
                replica.kill(signal.SIGKILL)
                master.kill(signal.SIGKILL)
            stop_all(*[x for x in (server, replica, master) if x])


if __name__ == "__main__":
    unittest.main()
