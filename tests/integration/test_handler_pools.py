"""A stalled Redis holds every handler thread that waits on it; requests
that never wait on Redis (token counts, dry runs, MCP messages other than
tools/call) run on a pool of their own and are answered at once, a
compaction is planned there and answered there when it spills nothing,
and a JSON-RPC batch stops starting messages once it has used
COMPACTD_MCP_BATCH_MS. Orderings and counts are asserted, never times."""

import re
import signal
import threading
import time
import unittest

from harness import Compactd, Redis, stop_all

FITTING = [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."}]
CHAT = {"format": "openai", "tokenizer": "bytes", "budget": 4000,
        "messages": [{"role": "user", "content": "Never push to main."},
                     {"role": "assistant", "content": "Understood."}]}
SPILLING = [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
            {"key": "log", "class": "protected", "tokens": 900, "text": "make: Error 1\n" * 50}]


class StalledRedis(unittest.TestCase):
    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={"COMPACTD_THREADS": "2",
                                                      "COMPACTD_MCP_BATCH_MS": "300"})
        self.http = self.server.client(validate=False)
        r = self.http.compact("s", SPILLING, 100)
        self.assertEqual(r.status, 200, r.body)
        self.sha = r.json["externalized"][0]["sha256"]
        self.redis.proc.send_signal(signal.SIGSTOP)

    def tearDown(self):
        self.redis.proc.send_signal(signal.SIGCONT)
        stop_all(self.server, self.redis)

    def test_requests_that_need_no_redis_are_not_queued_behind_it(self):
        done = []  # (finish time, what, status), in order of finishing
        lock = threading.Lock()

        def call(what, fn):
            r = fn()
            with lock:
                done.append((time.monotonic(), what, r.status))

        spillers = [threading.Thread(target=call, args=(
            "spill", lambda i=i: self.http.compact("s%d" % i, SPILLING, 100)))
            for i in range(6)]
        for t in spillers:
            t.start()
        time.sleep(0.3)  # both store threads now wait on Redis, four queue
        local = [("tokens", lambda: self.http.post("/v1/tokens", {"texts": ["hello world"]})),
                 ("dry run", lambda: self.http.compact("d", SPILLING, 100, dry_run=True)),
                 ("ping", lambda: self.http.post("/mcp", {"jsonrpc": "2.0", "id": 1,
                                                          "method": "ping"}))]
        for what, fn in local:
            call(what, fn)
        for t in spillers:
            t.join(60)
        order = [what for _, what, _ in done]
        print("\nstalled Redis, 2 threads, 6 spilling compactions: finished in order %s" % order)
        self.assertEqual(order[:3], ["tokens", "dry run", "ping"], done)
        self.assertEqual([s for _, w, s in done if w != "spill"], [200, 200, 200])
        self.assertEqual([s for _, w, s in done if w == "spill"], [503] * 6)

    def test_a_compaction_that_spills_nothing_is_not_queued_behind_redis(self):
        done = []  # (what, status), in order of finishing
        lock = threading.Lock()

        def call(what, fn):
            r = fn()
            with lock:
                done.append((what, r.status))

        # More spilling compactions than both pools have threads: each is
        # planned on the local pool and its commit waits on the store pool.
        spillers = [threading.Thread(target=call, args=(
            "spill", lambda i=i: self.http.compact("s%d" % i, SPILLING, 100)))
            for i in range(8)]
        for t in spillers:
            t.start()
        time.sleep(0.3)
        local = [("fit", lambda: self.http.compact("fit", FITTING, 100,
                                                   tokenizer="bytes")),
                 ("chat fit", lambda: self.http.post("/v1/sessions/chat/messages/compact",
                                                     CHAT)),
                 ("tokens", lambda: self.http.post("/v1/tokens", {"texts": ["hello world"]}))]
        for what, fn in local:
            call(what, fn)
        for t in spillers:
            t.join(60)
        order = [what for what, _ in done]
        print("\nstalled Redis, 2+2 threads, 8 spilling compactions: finished in order %s" % order)
        self.assertEqual(order[:3], ["fit", "chat fit", "tokens"], done)
        self.assertEqual([s for w, s in done if w != "spill"], [200, 200, 200])
        self.assertEqual([s for w, s in done if w == "spill"], [503] * 8)
        # An answer's bytes are given back once libmicrohttpd is done with
        # the response, which can come just after the client has read it.
        held, deadline = None, time.monotonic() + 10
        while held != 0 and time.monotonic() < deadline:
            if held is not None:
                time.sleep(0.05)
            metrics = self.server.client(validate=False).get("/metrics").body.decode()
            held = int(re.search(r"^compactd_inflight_bytes (\d+)$", metrics, re.M).group(1))
        self.assertEqual(held, 0, "the answers handed from pool to pool are all given back")

        # The no-spill compactions' log entries were sent without waiting:
        # Redis, woken, has them.
        self.redis.proc.send_signal(signal.SIGCONT)
        for session in ("fit", "chat"):
            events = []
            for _ in range(100):
                r = self.http.get("/v1/sessions/%s/events" % session)
                events = r.json["events"] if r.status == 200 else []
                if events:
                    break
                time.sleep(0.05)
            self.assertEqual(len(events), 1, (session, r.status, r.body[:300]))

    def test_a_batch_stops_starting_messages_once_its_time_is_used(self):
        batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
                  "params": {"name": "reacquire",
                             "arguments": {"session": "s", "key": "log", "sha256": self.sha}}}
                 for i in range(10)]
        t0 = time.monotonic()
        r = self.http.post("/mcp", batch)
        took = time.monotonic() - t0
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual([m["id"] for m in r.json], list(range(10)))
        not_run = [m["id"] for m in r.json if m.get("error", {}).get("code") == -32002]
        print("\nbatch of 10 reacquires on a stalled Redis: %d not run, %.1f s" % (len(not_run), took))
        # The first message waits out the Redis timeout, past the batch's
        # 300 ms: every later one is answered unrun.
        self.assertEqual(not_run, list(range(1, 10)))
        self.assertTrue(r.json[0]["result"]["isError"])


if __name__ == "__main__":
    unittest.main()
