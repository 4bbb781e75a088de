"""compactd on a real Redis Cluster that speaks TLS only
(rediss+cluster://), to its clients, its replicas and on its bus, and asks
every client for a certificate: from one seed, every master the slot map
names is reached over TLS; each master's certificate is checked against
the name it must carry, not only the seed's; a slot moved with
`redis-cli --cluster reshard` is followed to its new master; a compactd
without a client certificate is refused by every node, in words."""

import binascii
import subprocess
import unittest

from cluster_harness import Cluster
from cluster_load import spill_text, spill_units
from harness import Compactd, stop_all, wait_until
from redis_start import Certificates, Tls

SLOTS = 16384


def slot_of(session):
    """The slot of a session's keys, as Redis computes it: CRC16 (XMODEM)
    of the hash tag {default:<session>}."""
    return binascii.crc_hqx(("default:%s" % session).encode(), 0) % SLOTS


def redirections(server):
    total = 0
    for line in server.client().get("/metrics").body.decode().splitlines():
        if line.startswith("compactd_redis_redirections_total"):
            total += int(line.rsplit(" ", 1)[1])
    return total


class ClusterTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.certs = Certificates()
        cls.cluster = None
        try:
            # Each node's certificate names localhost only: the addresses
            # the slot map gives (127.0.0.1) are not in it.
            # No node fails over here: a node timeout long enough that
            # the nodes never take each other for failed on a busy machine.
            cls.cluster = Cluster(tls=Tls(cls.certs, cert="localhost", mutual=True),
                                  node_timeout_ms=10000)
            cls.server = cls.start(cls.cluster.url(count=1), name="localhost")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            stop_all(*[s for s in (getattr(cls, "server", None), cls.cluster) if s])
        finally:
            cls.certs.remove()

    @classmethod
    def start(cls, url, name=None, client_certificate=True):
        env = {"COMPACTD_REDIS_TIMEOUT_MS": "2000", "COMPACTD_THREADS": "4",
               "COMPACTD_REDIS_TLS_CA_FILE": cls.certs.path("ca.crt")}
        if name:
            env["COMPACTD_REDIS_TLS_SERVER_NAME"] = name
        if client_certificate:
            env["COMPACTD_REDIS_TLS_CERT_FILE"] = cls.certs.path("client.crt")
            env["COMPACTD_REDIS_TLS_KEY_FILE"] = cls.certs.path("client.key")
        return Compactd(url, env=env)

    def compact(self, session, size=300):
        http = self.server.client()
        r = http.compact(session, spill_units("log", spill_text(session, size)), 100)
        self.assertEqual(r.status, 200, r.body)
        return r.json["externalized"][0]["href"]

    def assertReadBack(self, href, session, size=300):
        back = self.server.client().get(href)
        self.assertEqual(back.status, 200, back.body)
        self.assertEqual(back.json["text"], spill_text(session, size))

    def test_every_master_is_reached_over_tls_from_one_seed(self):
        http = self.server.client()
        self.assertTrue(wait_until(lambda: http.get("/readyz").status == 200, 20, 0.2),
                        http.get("/readyz").body)
        masters = set()
        for i in range(24):
            session = "tls-spread-%d" % i
            self.assertReadBack(self.compact(session), session)
            owner = self.cluster.master_of("compactd:{default:%s}:text" % session)
            self.assertEqual(owner.cli("HLEN", "compactd:{default:%s}:text" % session), "1")
            masters.add(owner.port)
        self.assertEqual(len(masters), 3, "24 sessions on %d masters" % len(masters))

    def test_a_moved_slot_is_followed_over_tls(self):
        (src, src_ranges), (dst, _), _ = self.cluster.masters()
        lo = src_ranges[0][0]
        moving = range(lo, lo + 50)  # reshard takes a source's first slots
        session = next("tls-moved-%d" % i for i in range(100000)
                       if slot_of("tls-moved-%d" % i) in moving)
        href = self.compact(session)
        self.assertEqual(self.cluster.master_of("compactd:{default:%s}:text" % session).port,
                         src.port)
        before = redirections(self.server)
        self.assertTrue(self.cluster.wait_agreed())
        out = subprocess.run(
            self.cluster.redis_cli() + ["--cluster", "reshard", src.addr(),
                                        "--cluster-from", src.cli("CLUSTER", "MYID"),
                                        "--cluster-to", dst.cli("CLUSTER", "MYID"),
                                        "--cluster-slots", str(len(moving)), "--cluster-yes"],
            capture_output=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout[-2000:] + out.stderr[-2000:])
        self.assertEqual(self.cluster.master_of("compactd:{default:%s}:text" % session).port,
                         dst.port)
        # Read where it was, answered MOVED, and read again on the new
        # master over a new TLS connection; written there next.
        self.assertReadBack(href, session)
        self.assertReadBack(self.compact(session, 400), session, 400)
        self.assertGreater(redirections(self.server), before)

    def test_each_masters_certificate_is_checked_not_only_the_seeds(self):
        # The seed, asked as localhost, passes; the masters the slot map
        # names by address do not, as no server name stands in for them.
        seed = "rediss+cluster://localhost:%d/" % self.cluster.nodes[0].port
        server = self.start(seed)
        try:
            ready = server.client().get("/readyz")
            self.assertEqual(ready.status, 503, ready.body)
            self.assertIn("certificate does not name 127.0.0.1", ready.body.decode())
            # Said at start-up too, once the start-up probe has run.
            self.assertTrue(wait_until(
                lambda: "certificate does not name 127.0.0.1" in server.stderr(), 10, 0.1),
                server.stderr())
        finally:
            stop_all(server)

    def test_a_client_without_a_certificate_is_refused_in_words(self):
        server = self.start(self.cluster.url(count=1), name="localhost",
                            client_certificate=False)
        try:
            ready = server.client().get("/readyz")
            self.assertEqual(ready.status, 503, ready.body)
            self.assertIn("Redis asks for a client certificate", ready.body.decode())
        finally:
            stop_all(server)


if __name__ == "__main__":
    unittest.main()
