"""A master SIGKILLed while eight clients compact with spills through two
compactd replicas: with COMPACTD_REDIS_MIN_REPLICAS=1 no spill answered
with a 200 is lost once its replica has taken over; with 0, what a master
had not yet passed on when it died may be (only in its slots)."""

import signal
import time
import unittest

import cluster_harness
from cluster_harness import Cluster
from cluster_load import Load
from harness import Compactd, stop_all

ENV = {"COMPACTD_REDIS_TIMEOUT_MS": "2000", "COMPACTD_THREADS": "4"}


class FailoverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def kill_master_under_load(self, min_replicas):
        env = dict(ENV, COMPACTD_REDIS_MIN_REPLICAS=str(min_replicas))
        url = self.cluster.url(3)
        a = Compactd(url, env=env)
        b = Compactd(url, env=env)
        try:
            victim, ranges = self.cluster.masters()[0]
            sessions = ["failover-%d-%d" % (min_replicas, i) for i in range(32)]
            # Spills of about 40 KB: enough replication traffic in the 4 s
            # the replica is stopped to overflow the socket buffers that
            # would otherwise carry it all across.
            load = Load([a, b], sessions, size=40000).start()
            try:
                time.sleep(1.5)
                # The victim's replica falls behind (stopped for 4 s, as a
                # congested link or a stalled VM would leave it), then the
                # victim dies with what it had not passed on.
                replica = self.cluster.replica_of(victim)
                replica.proc.send_signal(signal.SIGSTOP)
                time.sleep(4.0)
                victim.kill(signal.SIGKILL)
                replica.proc.send_signal(signal.SIGCONT)
                killed_at = time.monotonic()
                # The replica takes over after cluster-node-timeout.
                self.assertTrue(cluster_harness.wait_until(
                    lambda: replica.info("replication").get("role") == "master", 30),
                    "no failover")
                self.assertTrue(self.cluster.wait_ok(30), "cluster not ok after the failover")
                failover_s = time.monotonic() - killed_at
                time.sleep(1.0)
                # The old master comes back as the new master's replica.
                victim.start()
                self.assertTrue(self.cluster.wait_ok(30), "old master did not rejoin")
                time.sleep(1.0)
            finally:
                load.stop()
            lost = load.lost(b)
            slot_of = lambda s: int(self.cluster.any().cli("CLUSTER", "KEYSLOT",
                                                           "{default:%s}" % s))
            in_victim = [x for x in lost
                         if any(lo <= slot_of(x[0]) <= hi for lo, hi in ranges)]
            shortfalls = sum(1 for r in load.refused if "not replicated" in r[2])
            print("\nmin_replicas=%d: %d acknowledged, %d refused (%d WAIT shortfalls), %d lost; "
                  "failover took %.1f s"
                  % (min_replicas, len(load.acknowledged), len(load.refused), shortfalls,
                     len(lost), failover_s))
            self.assertEqual(load.failed, [])
            self.assertGreater(len(load.acknowledged), 100)
            # Whatever was lost was on the master that died.
            self.assertEqual(len(in_victim), len(lost))
            return load, lost
        finally:
            stop_all(a, b)

    def test_1_min_replicas_1_loses_no_acknowledged_spill(self):
        load, lost = self.kill_master_under_load(1)
        self.assertEqual(lost, [])
        # The new master had no replica until the old one rejoined: its
        # commits were refused, and said why.
        self.assertTrue(any("not replicated" in r[2] for r in load.refused), load.refused[:3])

    def test_2_min_replicas_0_acknowledges_without_replicas(self):
        load, _ = self.kill_master_under_load(0)
        self.assertFalse(any("not replicated" in r[2] for r in load.refused))


if __name__ == "__main__":
    unittest.main()
