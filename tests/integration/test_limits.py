"""Staying up: slow and idle clients are cut after the connection timeout,
the connection limit holds while admitted clients keep working, and
SIGTERM/SIGINT stop accepting, finish what is in flight and exit 0."""

import json
import select
import signal
import socket
import time
import unittest

from harness import Compactd, Redis, stop_all

TIMEOUT_S = 2

SPILL = json.dumps({"budget": 100, "units": [
    {"key": "log", "class": "protected", "tokens": 1000, "text": "x" * 2000},
    {"key": "d", "class": "derivable", "tokens": 5}]}).encode()


def post_head(length, session="s"):
    return (b"POST /v1/sessions/%s/compact HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (session.encode(), length))


def closed_by_peer(sock, wait):
    """Waits up to wait seconds; True when the peer closed the connection."""
    r, _, _ = select.select([sock], [], [], wait)
    if not r:
        return False
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def read_response(sock, timeout=10):
    """Reads one response with a Content-Length; returns (status, body)."""
    sock.settimeout(timeout)
    buf = b""
    while True:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(rest) >= length:
                return int(head.split()[1]), rest[:length]
        part = sock.recv(65536)
        if not part:
            raise ConnectionError("closed before a whole response: %r" % buf)
        buf += part


def trickle(sock, data, every, limit):
    """Sends data one byte per `every` seconds until the peer closes or
    `limit` seconds pass. Returns the seconds until the peer closed, or
    None if it never did."""
    t0 = time.monotonic()
    for b in data:
        if time.monotonic() - t0 > limit:
            return None
        try:
            sock.sendall(bytes([b]))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - t0
        if closed_by_peer(sock, every):
            return time.monotonic() - t0
    return None


class SlowClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = Redis()
        cls.server = Compactd(cls.redis.url(),
                              env={"COMPACTD_CONNECTION_TIMEOUT_S": str(TIMEOUT_S)})

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.server, cls.redis)

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=10)

    def test_headers_sent_a_byte_at_a_time_are_cut_after_the_timeout(self):
        # Each byte resets an idle timer; only a deadline on the whole
        # request stops this (slowloris).
        with self.connect() as s:
            head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 200
            took = trickle(s, head, 0.2, 4 * TIMEOUT_S)
        self.assertIsNotNone(took, "a slowloris client was never cut")
        self.assertGreater(took, TIMEOUT_S - 0.5)
        self.assertLess(took, TIMEOUT_S + 1.5)

    def test_a_body_sent_a_byte_at_a_time_is_cut_after_the_timeout(self):
        with self.connect() as s:
            s.sendall(post_head(len(SPILL)))
            took = trickle(s, SPILL, 0.2, 4 * TIMEOUT_S)
        self.assertIsNotNone(took, "a slow body was never cut")
        self.assertLess(took, TIMEOUT_S + 1.5)

    def test_an_idle_connection_is_closed(self):
        for first in [b"", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"]:
            with self.subTest(after_a_request=bool(first)), self.connect() as s:
                t0 = time.monotonic()
                if first:
                    s.sendall(first)
                    self.assertEqual(read_response(s)[0], 200)
                self.assertTrue(closed_by_peer(s, 4 * TIMEOUT_S))
                self.assertLess(time.monotonic() - t0, TIMEOUT_S + 1.5)

    def test_others_are_served_while_slow_clients_hang_on(self):
        slow = [self.connect() for _ in range(20)]
        try:
            for s in slow:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
            t0 = time.monotonic()
            r = self.server.client().compact("busy", json.loads(SPILL)["units"], 100)
            self.assertEqual(r.status, 200)
            self.assertLess(time.monotonic() - t0, 1.0)
        finally:
            for s in slow:
                s.close()

    def test_a_prompt_client_may_take_its_time_between_requests_up_to_the_timeout(self):
        with self.connect() as s:
            for _ in range(3):
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                self.assertEqual(read_response(s)[0], 200)
                time.sleep(TIMEOUT_S / 2)


class SlowHandlerTest(unittest.TestCase):
    def test_the_deadline_is_for_receiving_not_for_the_answer(self):
        # A request received in time is answered, even when its handler
        # waits on a hung Redis for longer than the connection timeout.
        redis = Redis()
        server = Compactd(redis.url(), env={"COMPACTD_CONNECTION_TIMEOUT_S": "1",
                                            "COMPACTD_REDIS_TIMEOUT_MS": "2500"})
        try:
            http = server.client()
            self.assertEqual(http.get("/readyz").status, 200)
            redis.proc.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            r = http.compact("slow", json.loads(SPILL)["units"], 100)
            self.assertEqual(r.status, 503, r.body)
            self.assertGreater(time.monotonic() - t0, 1.5)
        finally:
            redis.proc.send_signal(signal.SIGCONT)
            stop_all(server, redis)


class ConnectionLimitTest(unittest.TestCase):
    LIMIT = 4

    def test_connections_past_the_limit_are_refused_while_admitted_ones_work(self):
        redis = Redis()
        server = Compactd(redis.url(), env={"COMPACTD_MAX_CONNECTIONS": str(self.LIMIT),
                                            "COMPACTD_THREADS": "2"})
        conns = []
        try:
            served, refused, hanging = [], 0, 0
            for _ in range(2 * self.LIMIT):
                s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                conns.append(s)
                try:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    status, _ = read_response(s, timeout=2)
                    self.assertEqual(status, 200)
                    served.append(s)
                except socket.timeout:
                    hanging += 1  # accepted by the kernel, never served
                except (ConnectionError, OSError):
                    refused += 1
            # Past the limit a client is told at once (the connection is
            # closed), rather than left waiting in the listen queue.
            self.assertEqual(hanging, 0)
            self.assertLessEqual(len(served), self.LIMIT)
            self.assertGreaterEqual(refused, self.LIMIT)
            self.assertGreaterEqual(len(served), 1)
            # The admitted ones keep working, with spills, at the limit.
            for s in served:
                s.sendall(post_head(len(SPILL)) + SPILL)
                status, body = read_response(s)
                self.assertEqual(status, 200, body)
            for s in conns:
                s.close()
            conns = []
            # Once they are gone, new clients get in again.
            ok = []
            for _ in range(3):
                time.sleep(0.2)
                ok.append(server.client().get("/healthz").status)
            self.assertIn(200, ok)
        finally:
            for s in conns:
                s.close()
            stop_all(server, redis)


class ShutdownTest(unittest.TestCase):
    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url())

    def tearDown(self):
        stop_all(self.server, self.redis)

    def test_sigterm_finishes_the_request_in_flight_refuses_new_ones_and_exits_0(self):
        port = self.server.port
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        self.assertEqual(read_response(idle)[0], 200)  # kept alive, idle

        slow = socket.create_connection(("127.0.0.1", port), timeout=10)
        slow.sendall(post_head(len(SPILL), "inflight"))
        slow.sendall(SPILL[:100])
        time.sleep(0.3)
        t0 = time.monotonic()
        self.server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        # The rest of the body comes slowly, over about two seconds.
        rest = SPILL[100:]
        step = len(rest) // 10 + 1
        for i in range(0, len(rest), step):
            slow.sendall(rest[i:i + step])
            time.sleep(0.2)
        status, body = read_response(slow)
        self.assertEqual(status, 200, body)
        plan = json.loads(body)
        self.assertEqual([e["key"] for e in plan["externalized"]], ["log"])
        slow.close()
        self.server.proc.wait(10)
        self.assertEqual(self.server.proc.returncode, 0)
        self.assertLess(time.monotonic() - t0, 10)
        idle.close()
        # What was acknowledged during the shutdown is there.
        self.assertIn("compactd:{default:inflight}:text", self.redis.keys())

    def test_sigint_exits_0(self):
        t0 = time.monotonic()
        self.server.proc.send_signal(signal.SIGINT)
        self.server.proc.wait(10)
        self.assertEqual(self.server.proc.returncode, 0)
        self.assertLess(time.monotonic() - t0, 2)
        self.assertIn("SIGINT", self.server.stderr())


if __name__ == "__main__":
    unittest.main()
