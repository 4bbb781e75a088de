"""Memory across connections: request bodies are held only as their bytes
arrive, every body and response in flight counts against one budget
(COMPACTD_MAX_INFLIGHT_BYTES) past which the answer is 503 Overloaded with
Retry-After, and a client that reads a large response slowly is cut at the
connection timeout instead of holding it."""

import json
import re
import socket
import subprocess
import time
import unittest

from harness import Compactd, Redis, run_concurrently, stop_all, wait_until
from test_hostile import raw_exchange, vm_kib

MIB = 1 << 20
# How long a step may take before the test gives up on it: a bound on
# liveness only, never a claim about speed (a loaded machine may take long).
PATIENCE_S = 60
# The same for compactd's commands to Redis, which writes a 14 MiB spill or
# reads pages of 4 MiB here: a second can pass on a loaded machine.
REDIS_PATIENCE = {"COMPACTD_REDIS_TIMEOUT_MS": str(PATIENCE_S * 1000)}


def post_head(length, session="hoard"):
    return (b"POST /v1/sessions/%s/compact HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (session.encode(), length))


def inflight_bytes(server):
    """compactd's own count of the bytes bodies and responses hold."""
    text = server.client(validate=False).get("/metrics").body.decode()
    return int(re.search(r"^compactd_inflight_bytes (\d+)$", text, re.M).group(1))


def under_asan(pid):
    """ASan keeps freed memory in quarantine, so RSS says little there."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def padded_body(length):
    """A valid compact body of exactly length bytes (JSON whitespace)."""
    body = b'{"budget": 10, "units": []}'
    return body[:-1] + b" " * (length - len(body)) + b"}"


class BodyBudgetTest(unittest.TestCase):
    """Twelve connections each send all but the last byte of a 15 MiB body:
    compactd holds at most the budget (48 MiB) for them, not 180 MiB, and
    refuses what does not fit with 503 and Retry-After."""

    BUDGET = 48 * MIB
    DECLARED = 15 * MIB
    HOARDERS = 12

    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={
            "COMPACTD_MAX_BODY_BYTES": str(16 * MIB),
            "COMPACTD_MAX_INFLIGHT_BYTES": str(self.BUDGET)})

    def tearDown(self):
        stop_all(self.server, self.redis)

    def hoard(self):
        """Opens the connections; returns those compactd kept open."""
        socks = []
        chunk = b" " * MIB
        for _ in range(self.HOARDERS):
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=PATIENCE_S)
            socks.append(s)
            try:
                s.sendall(post_head(self.DECLARED) + b"{")
                for _ in range(self.DECLARED // MIB - 1):
                    s.sendall(chunk)
                s.sendall(b" " * (MIB - 3))  # all but the closing "}"
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused up front (503) and closed: nothing held
        return socks

    def test_bodies_in_flight_stay_within_the_budget(self):
        before = vm_kib(self.server.proc.pid, "VmHWM")
        socks = self.hoard()
        try:
            # Let compactd read what is in the socket buffers (slower on a
            # loaded machine): at least half the budget arrives.
            wait_until(lambda: inflight_bytes(self.server) > self.BUDGET // 2, PATIENCE_S, 0.1)
            grown = vm_kib(self.server.proc.pid, "VmHWM") - before
            held = inflight_bytes(self.server)
            print("\n%d connections x %d MiB: compactd peak memory grew by %d MiB, holds %d MiB "
                  "(budget %d MiB)" % (self.HOARDERS, self.DECLARED // MIB, grown // 1024,
                                       held // MIB, self.BUDGET // MIB))
            self.assertLessEqual(held, self.BUDGET)
            self.assertGreater(held, self.BUDGET // 2)  # it does count what arrived
            if not under_asan(self.server.proc.pid):
                self.assertLess(grown * 1024, self.BUDGET + 24 * MIB)

            # The budget is held: another body is refused before it is sent.
            status, headers, raw, _ = raw_exchange(self.server.port, post_head(MIB, "late"),
                                                   PATIENCE_S)
            self.assertEqual(status, 503, raw)
            self.assertEqual(json.loads(raw)["error"]["type"], "Overloaded")
            self.assertEqual(headers["retry-after"], "1")
            self.assertEqual(headers["connection"], "close")
            # Requests without a body are still served.
            self.assertEqual(self.server.client().get("/healthz").status, 200)
        finally:
            for s in socks:
                s.close()
        # Once the hoarders are gone the budget is free again.
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, PATIENCE_S, 0.1))
        body = padded_body(8 * MIB)
        ok = lambda: raw_exchange(self.server.port, post_head(len(body), "after") + body,
                                  PATIENCE_S)[0] == 200
        self.assertTrue(wait_until(ok, PATIENCE_S, 0.1))

    def test_a_body_that_arrives_whole_is_answered_503_when_the_budget_ran_out(self):
        # Each body alone fits; together they pass the budget while arriving.
        socks = []
        try:
            body = padded_body(14 * MIB)
            for _ in range(4):
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=PATIENCE_S)
                s.sendall(post_head(len(body)) + body[:MIB])
                socks.append(s)
            # The four are in flight: compactd has read a part of each.
            self.assertTrue(wait_until(lambda: inflight_bytes(self.server) >= 4 * MIB,
                                       PATIENCE_S, 0.05))
            answers = []
            # All but the last byte of every body first: the four are then
            # in flight together however fast the server reads and answers
            # one that is whole. A refused one may be closed mid-upload.
            for last in (False, True):
                for s in socks:
                    try:
                        s.sendall(body[-1:] if last else body[MIB:-1])
                    except OSError:
                        pass
            for s in socks:
                buf = b""
                while b"\r\n\r\n" not in buf or not buf.rstrip().endswith(b"}"):
                    part = s.recv(65536)
                    if not part:
                        break
                    buf += part
                answers.append(buf.split(b" ", 2)[1])
            # 4 x 14 MiB cannot all be held in 48 MiB: some are refused,
            # the others answered.
            self.assertIn(b"503", answers, answers)
            self.assertIn(b"200", answers, answers)
        finally:
            for s in socks:
                s.close()


class SlowReaderTest(unittest.TestCase):
    """A client that reads a 14 MiB response steadily but slowly (about
    1.3 MB/s, never pausing long enough for libmicrohttpd's idle timeout)
    is cut at the connection timeout (2 s here) after the response was
    queued, and the response's bytes go back to the budget."""

    def test_a_slow_reader_is_cut_and_frees_the_response(self):
        redis = Redis()
        server = Compactd(redis.url(), env=dict(REDIS_PATIENCE, COMPACTD_CONNECTION_TIMEOUT_S="2",
                                                COMPACTD_MAX_BODY_BYTES=str(16 * MIB),
                                                COMPACTD_MAX_INFLIGHT_BYTES=str(24 * MIB)))
        try:
            text = "x" * (14 * MIB)
            r = server.client(validate=False).compact(
                "slow", [{"key": "big", "class": "protected", "tokens": 10 ** 6, "text": text}], 60)
            self.assertEqual(r.status, 200, r.body[:300])
            href = r.json["externalized"][0]["href"].encode()
            s = socket.socket()
            s.settimeout(1)
            s.connect(("127.0.0.1", server.port))
            s.sendall(b"GET " + href + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
            got, closed, t0 = 0, False, time.monotonic()
            while time.monotonic() - t0 < PATIENCE_S:
                try:
                    part = s.recv(32768)
                except socket.timeout:
                    continue
                except ConnectionResetError:
                    closed = True
                    break
                if not part:
                    closed = True
                    break
                got += len(part)
                time.sleep(0.025)  # ~1.3 MB/s: 11 s for the whole response
            s.close()
            print("\nslow reader: connection ended after %.1f s with %d of ~%d KiB read"
                  % (time.monotonic() - t0, got // 1024, len(text) // 1024))
            self.assertTrue(closed, "a slow reader held the connection for %d s" % PATIENCE_S)
            self.assertLess(got, len(text))
            self.assertTrue(wait_until(lambda: inflight_bytes(server) == 0, PATIENCE_S, 0.1))
            # The cut response's 14 MiB are back in the budget: a 9 MiB body
            # (a 16 MiB buffer) fits in 24 MiB again.
            body = padded_body(9 * MIB)
            ok = lambda: raw_exchange(server.port, post_head(len(body), "next") + body,
                                      PATIENCE_S)[0] == 200
            self.assertTrue(wait_until(ok, PATIENCE_S, 0.2))
        finally:
            stop_all(server, redis)


class TreeBudgetTest(unittest.TestCase):
    """A body's parse tree is priced before it is built: four bodies of two
    million empty objects (6 MiB each, 430 MB each as trees) are refused
    413 and compactd's peak memory stays under its budget."""

    def test_bodies_of_empty_objects_are_refused_before_their_trees(self):
        redis = Redis()
        server = Compactd(redis.url())
        try:
            chunk = "[" + ",".join(["{}"] * 1000) + "]"
            body = ('{"budget": 10, "units": [' + ",".join([chunk] * 2000) + "]}").encode()
            before = vm_kib(server.proc.pid, "VmHWM")
            answers = []
            run_concurrently(lambda _i: answers.append(
                raw_exchange(server.port, post_head(len(body), "tree") + body, PATIENCE_S)), 4)
            grown = vm_kib(server.proc.pid, "VmHWM") - before
            print("\n4 bodies of empty objects: compactd peak memory grew by %d MiB" % (grown // 1024))
            for status, _, raw, _ in answers:
                self.assertEqual(status, 413, raw[:300])
                self.assertEqual(json.loads(raw)["error"]["type"], "PayloadTooLarge")
            if not under_asan(server.proc.pid):
                self.assertLess(grown * 1024, 256 * MIB)
            self.assertTrue(wait_until(lambda: inflight_bytes(server) == 0, PATIENCE_S, 0.1))
        finally:
            stop_all(server, redis)


class EventsPageTest(unittest.TestCase):
    """A page of the decision log holds at most 4 MiB of entries: twelve
    entries of 1 MiB are read three or four at a time, each page naming
    the next, and every entry is reached once, in order."""

    def test_large_entries_are_paged_by_bytes(self):
        redis = Redis()
        server = Compactd(redis.url(), env=REDIS_PATIENCE)
        try:
            for i in range(12):
                # -x: the entry from stdin, past the kernel's bound on one argument.
                subprocess.run(["redis-cli", "-p", str(redis.port), "-x", "XADD",
                                "compactd:{default:big}:events", "*", "e"],
                               input=json.dumps({"n": i, "pad": "x" * MIB}).encode(),
                               check=True, capture_output=True, timeout=PATIENCE_S)
            http = server.client(validate=False)  # entries of no compaction
            seen, after, pages = [], None, 0
            while True:
                r = http.get("/v1/sessions/big/events?limit=1000" +
                             ("&after=" + after if after else ""))
                self.assertEqual(r.status, 200, r.body[:300])
                pages += 1
                self.assertLessEqual(len(r.body), 4 * MIB + 4096 + MIB)
                seen += [e["n"] for e in r.json["events"]]
                after = r.json.get("next_after")
                if not after:
                    break
            print("\n12 entries of 1 MiB: %d pages" % pages)
            self.assertEqual(seen, list(range(12)))
            self.assertGreaterEqual(pages, 3)
        finally:
            stop_all(server, redis)


if __name__ == "__main__":
    unittest.main()
