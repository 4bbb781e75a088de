"""A hostile Redis Cluster node: one that redirects every command in a
circle or to ever new addresses, or answers +OK where a hash belongs.
compactd must answer 503 within its timeout, after a bounded number of
redirections, say not ready, never read an odd reply as an empty session
(404), and close its connection to a node the slot map no longer names."""

import socket
import socketserver
import threading
import time
import unittest

from harness import Compactd, stop_all, wait_until


def encode(value):
    if isinstance(value, int):
        return b":%d\r\n" % value
    if isinstance(value, bytes):
        return b"$%d\r\n%s\r\n" % (len(value), value)
    if isinstance(value, str):
        return encode(value.encode())
    if isinstance(value, list):
        return b"*%d\r\n" % len(value) + b"".join(encode(v) for v in value)
    raise TypeError(value)


class HostileNode(socketserver.ThreadingTCPServer):
    """Claims every slot (or says self.owner holds them) and answers the
    cluster's own questions as a healthy master would; every other command
    gets what self.mode says:
      "circle": MOVED to itself;   "far": MOVED to a new closed port each time;
      "ok":     +OK;               "away": MOVED to port self.away once, then
                                   an empty reply.
    self.live counts the connections open now, self.accepted all so far."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        self.mode = "circle"
        self.owner = self.port
        self.away = None
        self.live = self.accepted = 0
        self.commands = 0
        self.next_far = 20000
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def answer(self, args):
        name = args[0].upper()
        if name == b"CLUSTER" and args[1].upper() == b"SLOTS":
            return encode([[0, 16383, ["127.0.0.1", self.owner, "a" * 40]]])
        if name == b"CLUSTER" and args[1].upper() == b"INFO":
            return encode("cluster_state:ok\r\ncluster_slots_assigned:16384\r\n")
        if name == b"PING":
            return b"+PONG\r\n"
        if name == b"TIME":
            now = time.time()
            return encode([str(int(now)), str(int((now % 1) * 1e6))])
        if name == b"SCRIPT":
            return encode("b" * 40)
        if name in (b"SELECT", b"ASKING", b"READONLY", b"QUIT"):
            return b"+OK\r\n"
        with self.lock:
            # The readiness probe's own command (EXISTS) is not a request's.
            self.commands += name != b"EXISTS"
            if self.mode == "ok":
                return b"+OK\r\n"
            if self.mode == "away" and name != b"EXISTS":
                if self.away is None:
                    return b"*0\r\n"
                port, self.away = self.away, None
                return b"-MOVED 1 127.0.0.1:%d\r\n" % port
            port = self.port
            if self.mode == "far":
                self.next_far += 1
                port = self.next_far
        return b"-MOVED 1 127.0.0.1:%d\r\n" % port


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        with self.server.lock:
            self.server.live += 1
            self.server.accepted += 1
        try:
            self.serve()
        finally:
            with self.server.lock:
                self.server.live -= 1

    def serve(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            if not line.startswith(b"*"):
                return
            args = []
            for _ in range(int(line[1:])):
                size = int(self.rfile.readline()[1:])
                args.append(self.rfile.read(size + 2)[:-2])
            try:
                self.wfile.write(self.server.answer(args))
            except OSError:
                return


class HostileClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = HostileNode()
        cls.server = Compactd("redis+cluster://127.0.0.1:%d" % cls.node.port,
                              env={"COMPACTD_REDIS_TIMEOUT_MS": "2000"})
        cls.http = cls.server.client(validate=False)

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.server)
        cls.node.shutdown()
        cls.node.server_close()

    def read_spill(self):
        return self.http.get("/v1/sessions/s/spills/k")

    def test_a_circle_of_redirections_is_bounded(self):
        for mode in ("circle", "far"):
            self.node.mode = mode
            before = self.node.commands
            t0 = time.monotonic()
            resp = self.read_spill()
            took = time.monotonic() - t0
            sent = self.node.commands - before
            print("\n%s: 503 after %d commands in %.2f s" % (mode, sent, took))
            self.assertEqual(resp.status, 503, resp.body)
            self.assertEqual(resp.json["error"]["type"], "StoreUnavailable")
            # At most 16 redirections, each attempt one command.
            self.assertLessEqual(sent, 17)
            # Readiness routes a command as a session's would: not ready.
            resp = self.http.get("/readyz")
            self.assertEqual(resp.status, 503, resp.body)

    def test_an_odd_reply_is_a_failure_not_an_empty_session(self):
        self.node.mode = "ok"
        for path in ("/v1/sessions/s/spills/k", "/v1/sessions/s/spills",
                     "/v1/sessions/s/events"):
            resp = self.http.get(path)
            self.assertEqual(resp.status, 503, "%s: %s" % (path, resp.body))
            self.assertEqual(resp.json["error"]["type"], "StoreUnavailable")

    def test_a_node_left_out_of_the_slot_map_is_disconnected(self):
        # The seed redirects one read to another node, whose slot map says
        # the seed holds every slot: once compactd has that map, nothing
        # routes to the other node and its connection is closed.
        other = HostileNode()
        try:
            other.owner = self.node.port
            self.node.mode = "away"
            self.node.away = other.port
            resp = self.read_spill()
            self.assertIn(resp.status, (404, 503), resp.body)
            self.assertIsNone(self.node.away, "the seed was asked")
            self.assertGreaterEqual(other.accepted, 1, "compactd followed the redirection")
            closed = wait_until(lambda: other.live == 0, timeout=5.0)
            self.assertTrue(closed, "%d connection(s) to a node outside the slot map stay open"
                            % other.live)
        finally:
            other.shutdown()
            other.server_close()


if __name__ == "__main__":
    unittest.main()
