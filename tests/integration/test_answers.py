"""Answers count against the memory budget before they are built: one
request's body and answer may hold at most COMPACTD_MAX_CLIENT_INFLIGHT_BYTES
of COMPACTD_MAX_INFLIGHT_BYTES, an answer that would pass it is refused (per
message in a JSON-RPC batch), a batch has at most COMPACTD_MCP_MAX_BATCH
messages and a bounded time, and a client that reads a large answer slowly
is cut as soon as it falls behind, so that other clients keep being
served."""

import json
import socket
import threading
import time
import unittest

from harness import Compactd, Redis, stop_all, wait_until
from test_hostile import vm_kib
from test_memory import MIB, inflight_bytes, post_head, under_asan

MCP_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n")


def spill(server, session, key, size):
    """Externalizes a text of size bytes; returns (text, sha256)."""
    text = ("%s-" % key) * (size // (len(key) + 1))
    r = server.client(validate=False).compact(
        session, [{"key": key, "class": "protected", "tokens": 10 ** 6, "text": text}], 60)
    assert r.status == 200, r.body[:300]
    return text, r.json["externalized"][0]["sha256"]


def reacquires(session, key, sha, n):
    return [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": {"name": "reacquire",
                        "arguments": {"session": session, "key": key, "sha256": sha}}}
            for i in range(1, n + 1)]


class Mcp(unittest.TestCase):
    """64 MiB budget, 8 MiB bodies: one request may hold 24 MiB. Batches
    may take a minute here (the machine may be slow; the time bound has a
    test of its own)."""

    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={
            "COMPACTD_MAX_BODY_BYTES": str(8 * MIB),
            "COMPACTD_MAX_INFLIGHT_BYTES": str(64 * MIB),
            "COMPACTD_MCP_BATCH_MS": "60000"})
        self.http = self.server.client(validate=False)

    def tearDown(self):
        stop_all(self.server, self.redis)

    def mcp(self, body):
        return self.http.post("/mcp", body, headers={"Accept": "application/json, text/event-stream"})

    def test_a_batch_past_the_limit_is_refused_whole(self):
        pings = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(65)]
        r = self.mcp(pings)
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertEqual(r.json["error"]["code"], -32600)
        self.assertIn("COMPACTD_MCP_MAX_BATCH", r.json["error"]["message"])
        r = self.mcp(pings[:64])
        self.assertEqual(r.status, 200)
        self.assertEqual([m["id"] for m in r.json], list(range(64)))

    def test_answers_past_what_one_client_may_hold_are_refused_one_by_one(self):
        text, sha = spill(self.server, "big", "log", 2 * MIB)
        before = vm_kib(self.server.proc.pid, "VmHWM")
        r = self.mcp(reacquires("big", "log", sha, 12))
        grown = vm_kib(self.server.proc.pid, "VmHWM") - before
        self.assertEqual(r.status, 200, r.body[:300])
        answers = r.json
        # Every message is answered, in order, each whole.
        self.assertEqual([m["id"] for m in answers], list(range(1, 13)))
        results = [m for m in answers if "result" in m]
        refused = [m for m in answers if "error" in m]
        self.assertTrue(results)
        self.assertTrue(refused)
        for m in results:
            self.assertEqual(m["result"]["content"][0]["text"], text)
        for m in refused:
            self.assertEqual(m["error"]["code"], -32001)
            self.assertIn("COMPACTD_MAX_CLIENT_INFLIGHT_BYTES", m["error"]["message"])
        self.assertLessEqual(len(r.body), 24 * MIB)
        print("\n12 reacquires of a 2 MiB spill: %d answered, %d refused, %d KiB answer, "
              "peak RSS +%d MiB" % (len(results), len(refused), len(r.body) // 1024, grown // 1024))
        if not under_asan(self.server.proc.pid):
            self.assertLess(grown, 96 * 1024)
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, 10, 0.1))

    def test_a_slow_reader_of_a_large_answer_does_not_shut_out_other_clients(self):
        _, sha = spill(self.server, "big", "log", 2 * MIB)
        body = json.dumps(reacquires("big", "log", sha, 24)).encode()
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        slow.connect(("127.0.0.1", self.server.port))
        slow.sendall(MCP_HEAD % len(body) + body)
        try:
            # It reads a few bytes, then nothing: its answer waits on it.
            # (Building the answer may take a while on a loaded machine.)
            slow.settimeout(120)
            self.assertTrue(slow.recv(100).startswith(b"HTTP/1.1 200"))
            began = time.monotonic()
            served = []
            for _ in range(8):
                r = self.http.get("/v1/sessions/big/spills/log?sha256=" + sha)
                served.append(r.status)
            r = self.http.compact("other", [{"key": "k", "class": "protected", "tokens": 5,
                                             "text": "x" * (6 * MIB)}], 100)
            served.append(r.status)
            self.assertEqual(served, [200] * 9)
            # Behind the pace that would take its answer within the
            # connection timeout (30 s), it is cut before that, as soon as
            # what the socket buffers hold (about 4 MiB) is less than the
            # pace asks, and its answer's bytes go back to the budget.
            gone = wait_until(lambda: inflight_bytes(self.server) == 0, 25, 0.2)
            cut = time.monotonic() - began if gone else None
            print("\nslow reader of a %d-message batch cut after %s s; 9 other requests: %s"
                  % (24, "%.1f" % cut if cut else "> 25", served))
            self.assertIsNotNone(cut, "a slow reader held its answer for 25 s")
        finally:
            slow.close()
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, 10, 0.1))


class Rest(unittest.TestCase):
    """A REST answer counts before it is built too: with the budget held by
    bodies in flight, a spill read that does not fit is 503, not built."""

    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={
            "COMPACTD_MAX_BODY_BYTES": str(16 * MIB),
            "COMPACTD_MAX_INFLIGHT_BYTES": str(40 * MIB)})

    def tearDown(self):
        stop_all(self.server, self.redis)

    def test_an_answer_that_does_not_fit_the_budget_is_503(self):
        text, sha = spill(self.server, "s", "log", 12 * MIB)
        http = self.server.client(validate=False)
        hoarders = []
        try:
            for _ in range(2):
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
                s.sendall(post_head(15 * MIB) + b"{" + b" " * (15 * MIB - 2))
                hoarders.append(s)
            self.assertTrue(wait_until(lambda: inflight_bytes(self.server) >= 30 * MIB, 10, 0.1))
            r = http.get("/v1/sessions/s/spills/log?sha256=" + sha)
            self.assertEqual(r.status, 503, r.body[:200])
            self.assertEqual(r.json["error"]["type"], "Overloaded")
            self.assertEqual(r.header("retry-after"), "1")
            self.assertLessEqual(inflight_bytes(self.server), 40 * MIB)
        finally:
            for s in hoarders:
                s.close()
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, 10, 0.1))
        r = http.get("/v1/sessions/s/spills/log?sha256=" + sha)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["text"], text)


class CompactAnswer(unittest.TestCase):
    """A compaction's answer is written before anything is committed: 2 MiB
    bodies and a 16 MiB budget, so one request may hold 6 MiB. Keys of
    seven bytes: each externalized unit takes about 530 bytes of answer and
    290 of log entry besides its share of the parse tree, so 4,000 of them
    fit and 6,000 do not (their tree fits: the answer is what is refused)."""

    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={
            "COMPACTD_MAX_BODY_BYTES": str(2 * MIB),
            "COMPACTD_MAX_INFLIGHT_BYTES": str(16 * MIB)})
        self.http = self.server.client(validate=False, timeout=120)

    def tearDown(self):
        stop_all(self.server, self.redis)

    def compact_all_externalized(self, n):
        units = [{"key": "u%06d" % i, "class": "protected", "tokens": 100, "text": "t%06d" % i}
                 for i in range(n)]
        return self.http.compact("big", units, 46 * n)

    def test_an_answer_that_fits_once_its_log_entry_is_written_is_sent(self):
        r = self.compact_all_externalized(4000)
        self.assertEqual(r.status, 200, r.body[:300])
        ext = r.json["externalized"]
        self.assertEqual(len(ext), 4000)
        listed = self.http.get("/v1/sessions/big/spills")
        self.assertEqual(listed.status, 200, listed.body[:300])
        self.assertEqual(sorted(s["sha256"] for s in listed.json["spills"]),
                         sorted(e["sha256"] for e in ext))
        for e in ext[:3] + ext[-3:]:
            back = self.http.get(e["href"])
            self.assertEqual(back.status, 200, back.body[:300])
            self.assertEqual(back.json["text"], "t" + e["key"][1:])
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, 10, 0.1))

    def test_an_answer_past_the_limit_is_refused_before_anything_is_written(self):
        r = self.compact_all_externalized(6000)
        self.assertEqual(r.status, 413, r.body[:300])
        self.assertEqual(r.json["error"]["type"], "PayloadTooLarge")
        self.assertIn("the answer would be larger", r.json["error"]["message"])
        self.assertIn("COMPACTD_MAX_CLIENT_INFLIGHT_BYTES", r.json["error"]["message"])
        # No spill, no log entry, no staged piece: not one key.
        self.assertEqual(self.redis.keys(), [])
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, 10, 0.1))

    def mcp_compact(self, n):
        units = [{"key": "u%06d" % i, "class": "protected", "tokens": 100, "text": "t%06d" % i}
                 for i in range(n)]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "compact",
                           "arguments": {"session": "mcpbig", "budget": 46 * n, "units": units}}}
        return self.http.post("/mcp", call,
                              headers={"Accept": "application/json, text/event-stream"})

    def test_an_mcp_compaction_is_sized_as_mcp_sends_it_before_it_commits(self):
        # The tool's result carries the answer twice (structuredContent, and
        # escaped as text): 2,000 units fit on REST above but not here, and
        # are refused with nothing written; 1,000 fit and read back.
        r = self.mcp_compact(2000)
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json["error"]["code"], -32001, r.body[:300])
        self.assertIn("Answer too large", r.json["error"]["message"])
        self.assertEqual(self.redis.keys(), [])
        self.assertTrue(wait_until(lambda: inflight_bytes(self.server) == 0, 10, 0.1))
        r = self.mcp_compact(1000)
        self.assertEqual(r.status, 200, r.body[:300])
        result = r.json["result"]
        self.assertFalse(result.get("isError"), r.body[:300])
        ext = result["structuredContent"]["externalized"]
        self.assertEqual(len(ext), 1000)
        self.assertEqual(json.loads(result["content"][0]["text"])["externalized"], ext)
        for e in ext[:2] + ext[-2:]:
            back = self.http.get(e["href"])
            self.assertEqual(back.status, 200, back.body[:300])
            self.assertEqual(back.json["text"], "t" + e["key"][1:])


if __name__ == "__main__":
    unittest.main()
