"""A proxied call holds its thread until the upstream's answer is through
(a stream: minutes). Proxied calls run on a pool of their own
(COMPACTD_UPSTREAM_MAX_CONNECTIONS threads), so that upstream calls that
stall never hold the threads compactions and spill reads run on: with the
proxy's pool full of calls a loopback upstream holds, and one more queued
behind them, a spilling compaction and spill reads are answered. Orderings
and counts are asserted, never times."""

import http.server
import json
import threading
import unittest

from harness import Compactd, Redis, stop_all

SPILLING = [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
            {"key": "log", "class": "protected", "tokens": 900, "text": "make: Error 1\n" * 50}]
CHAT = {"model": "gpt-4o",
        "messages": [{"role": "user", "content": "Fix the failing parser test. Never push to main."}]}
ANSWER = {"id": "chatcmpl-held", "object": "chat.completion", "created": 1700000000,
          "model": "gpt-4o",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"},
                       "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
PATIENCE_S = 60  # how long a wait may take before it counts as never


class HeldUpstream:
    """A loopback Chat Completions API that takes each request and holds
    its answer until release()."""

    def __init__(self):
        self.arrived = 0
        self.cond = threading.Condition()
        self.released = threading.Event()
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with upstream.cond:
                    upstream.arrived += 1
                    upstream.cond.notify_all()
                upstream.released.wait(PATIENCE_S * 10)  # tearDown releases
                body = json.dumps(ANSWER).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = "http://127.0.0.1:%d" % self.server.server_address[1]

    def wait_arrived(self, n):
        with self.cond:
            return self.cond.wait_for(lambda: self.arrived >= n, PATIENCE_S)

    def release(self):
        self.released.set()

    def close(self):
        self.release()
        self.server.shutdown()
        self.server.server_close()


class ProxyPool(unittest.TestCase):
    def setUp(self):
        self.upstream = HeldUpstream()
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={
            "COMPACTD_THREADS": "2",
            "COMPACTD_UPSTREAM_MAX_CONNECTIONS": "2",
            "COMPACTD_UPSTREAM_OPENAI": self.upstream.base + "/v1",
            "COMPACTD_UPSTREAM_TIMEOUT_S": str(PATIENCE_S * 4)})
        self.http = self.server.client(validate=False, timeout=PATIENCE_S)

    def tearDown(self):
        self.upstream.release()
        stop_all(self.server, self.redis)
        self.upstream.close()

    def proxied(self):
        return self.http.post("/proxy/openai/v1/chat/completions", CHAT,
                              headers={"Authorization": "Bearer sk-held-upstream",
                                       "X-Compactd-Budget": "4000"})

    def test_compactions_and_spill_reads_pass_stalled_upstream_calls(self):
        r = self.http.compact("s", SPILLING, 100)
        self.assertEqual(r.status, 200, r.body)
        sha = r.json["externalized"][0]["sha256"]

        done = []  # (what, status), in order of finishing
        lock = threading.Lock()

        def call(what, fn):
            try:
                status = fn().status
            except OSError as e:  # a request never answered
                status = repr(e)
            with lock:
                done.append((what, status))

        calls = [threading.Thread(target=call, args=("proxy", self.proxied)) for _ in range(3)]
        for t in calls:
            t.start()
        # Both threads of the proxy's pool wait on the upstream; the third
        # call queues behind them.
        self.assertTrue(self.upstream.wait_arrived(2), "the upstream got %d calls"
                        % self.upstream.arrived)
        call("compaction", lambda: self.http.compact("s2", SPILLING, 100))
        call("spill read", lambda: self.http.get("/v1/sessions/s/spills/log?sha256=" + sha))
        call("spill list", lambda: self.http.get("/v1/sessions/s/spills"))
        with self.upstream.cond:
            held = self.upstream.arrived
        self.upstream.release()
        for t in calls:
            t.join(PATIENCE_S * 2)
        print("\nproxy pool of 2 full of held upstream calls, 2 store threads: finished in order %s"
              % done)
        self.assertEqual(done[:3], [("compaction", 200), ("spill read", 200),
                                    ("spill list", 200)])
        self.assertEqual(held, 2, "the queued proxied call reached the upstream early")
        self.assertEqual(done[3:], [("proxy", 200)] * 3)
        self.assertEqual(self.upstream.arrived, 3)


if __name__ == "__main__":
    unittest.main()
