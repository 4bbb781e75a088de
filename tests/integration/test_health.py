"""Health under load: /healthz, /readyz and /metrics answer without waiting
behind the handler pool, while the pool is saturated with real heavy
/verify requests and while Redis is stopped (SIGSTOP)."""

import hashlib
import http.client
import json
import multiprocessing
import signal
import time
import unittest

from harness import Compactd, Redis, ServerTest, stop_all, wait_until

THREADS = 2
LOADERS = 3 * THREADS  # clients that keep the pool busy, more than its threads
POINTERS = 20000       # pointers in each /verify context: one Redis lookup each
SAMPLES = 300
# A request that waits on a stopped Redis stays waiting until it resumes
# (the most the setting takes): while Redis is stopped, every handler of the
# pool is held, for as long as the test likes.
HELD_MS = 600000
# How much faster than a verification a probe must be, in the same run: a
# probe that queued behind the pool would wait for a verification to end
# (half of one's service time at the median, one at the 99th percentile,
# and a verification, three clients per thread, takes about three).
MEDIAN_RATIO = 20
P99_RATIO = 4


def verify_body():
    units, pointers = [], []
    for i in range(POINTERS):
        text = "fact number %d" % i
        units.append({"key": "u%d" % i, "class": "protected", "tokens": 50, "text": text})
        sha = hashlib.sha256(text.encode()).hexdigest()[:16]
        pointers.append("[externalized u%d sha256:%s]" % (i, sha))
    return json.dumps({"context": " ".join(pointers), "units": units}).encode()


def timed_get(port, path):
    """One GET on a fresh connection, as a probe makes it: (status, seconds)."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status, time.monotonic() - t0
    finally:
        conn.close()


def loader(port, body, stop, done):
    """Sends /verify after /verify until stop is set; puts (status, seconds)
    of each on done. A process of its own, so that the probes' client never
    waits for Python's lock behind it."""
    while not stop.is_set():
        t0 = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HELD_MS / 1000 + 60)
        try:
            conn.request("POST", "/v1/sessions/load/verify", body,
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            done.put((r.status, time.monotonic() - t0))
        finally:
            conn.close()


def quantile(seconds, q):
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


class HealthUnderLoadTest(unittest.TestCase):
    """No claim here rests on how fast the machine is: probes are answered
    while every handler is held (an order, not a time), and under a pool
    kept busy with real work they are compared with that work in the same
    run."""

    @classmethod
    def setUpClass(cls):
        cls.redis = Redis()
        cls.server = Compactd(cls.redis.url(), env={"COMPACTD_THREADS": str(THREADS),
                                                    "COMPACTD_REDIS_TIMEOUT_MS": str(HELD_MS)})
        cls.body = verify_body()

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.server, cls.redis)

    def start_load(self):
        """LOADERS processes that each send /verify after /verify until
        stopped. Returns (stop event, processes, result queue)."""
        ctx = multiprocessing.get_context("fork")
        stop, done = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=loader, args=(self.server.port, self.body, stop, done))
                 for _ in range(LOADERS)]
        for p in procs:
            p.start()
        return stop, procs, done

    def stop_load(self, load):
        """Stops the loaders; returns the (status, seconds) of every
        verification they made."""
        stop, procs, done = load
        stop.set()
        results = []
        while any(p.is_alive() for p in procs) or not done.empty():
            try:
                results.append(done.get(timeout=0.1))
            except Exception:  # noqa: BLE001 - queue.Empty: look again
                pass
        for p in procs:
            p.join()
        return results

    def sample(self, path):
        """SAMPLES probes, one after another."""
        statuses, seconds = [], []
        for _ in range(SAMPLES):
            status, s = timed_get(self.server.port, path)
            statuses.append(status)
            seconds.append(s)
            time.sleep(0.005)
        return statuses, seconds

    def test_probes_answer_while_the_pool_is_busy(self):
        load = self.start_load()
        try:
            # The pool is busy once the first verifications have ended.
            first = load[2].get(timeout=120)
            statuses, seconds = self.sample("/healthz")
            _, metrics_seconds = self.sample("/metrics")
            ready_statuses, ready_seconds = self.sample("/readyz")
        finally:
            done = [first] + self.stop_load(load)
        verify = quantile([s for _, s in done], 0.5)
        probes = seconds + metrics_seconds + ready_seconds
        print("\nbusy pool: probes median %.1f ms, p99 %.1f ms, max %.1f ms; %d verifications, "
              "median %.0f ms (%.0fx the probes' median, %.0fx their p99)"
              % (quantile(probes, 0.5) * 1000, quantile(probes, 0.99) * 1000, max(probes) * 1000,
                 len(done), verify * 1000, verify / quantile(probes, 0.5),
                 verify / quantile(probes, 0.99)))
        self.assertEqual(set(statuses), {200})
        self.assertEqual({st for st, _ in done}, {200})
        self.assertGreaterEqual(len(done), LOADERS)
        for name, series in (("/healthz", seconds), ("/metrics", metrics_seconds),
                             ("/readyz", ready_seconds)):
            self.assertLess(quantile(series, 0.5) * MEDIAN_RATIO, verify, name)
            self.assertLess(quantile(series, 0.99) * P99_RATIO, verify, name)
        # Redis is fine, only busy: readiness holds.
        self.assertEqual(set(ready_statuses), {200})

    def test_probes_answer_while_every_handler_waits_on_redis(self):
        self.redis.proc.send_signal(signal.SIGSTOP)
        load = self.start_load()
        try:
            statuses, _ = self.sample("/healthz")
            metrics, _ = self.sample("/metrics")
            ready_statuses, _ = self.sample("/readyz")
            # Every verification is still held: the probes were answered
            # without a handler, whatever the time they took.
            self.assertTrue(load[2].empty(), "a verification was answered with Redis stopped")
        finally:
            self.redis.proc.send_signal(signal.SIGCONT)
            done = self.stop_load(load)
        print("\nRedis stopped: %d probes answered, %d of %d /readyz not ready, %d verifications "
              "held until it resumed" % (3 * SAMPLES, ready_statuses.count(503), SAMPLES,
                                         len(done)))
        self.assertEqual(set(statuses), {200})
        self.assertEqual(set(metrics), {200})
        # Readiness says what it knows: not ready, never a hang.
        self.assertEqual(ready_statuses[-1], 503)
        self.assertGreaterEqual(len(done), LOADERS)
        self.assertEqual({st for st, _ in done}, {200})
        self.assertTrue(wait_until(lambda: timed_get(self.server.port, "/readyz")[0] == 200,
                                   60, 0.05))


class HeadTest(ServerTest):
    """HEAD on every GET route answers as GET does, headers and
    Content-Length included, without the body; on a route of another
    method it is 405 naming the right one."""

    compactd_env = {"COMPACTD_REDIS_TIMEOUT_MS": str(HELD_MS)}  # a loaded Redis is no failure

    def test_head_is_get_without_the_body(self):
        self.http.compact("head", [{"key": "k", "class": "protected", "tokens": 400,
                                    "text": "x" * 400}], 60)
        plain = self.server.client(validate=False)
        for path in ("/healthz", "/readyz", "/openapi.yaml", "/ui",
                     "/v1/sessions/head/spills", "/v1/sessions/head/spills/k",
                     "/v1/sessions/head/events", "/v1/sessions/nothing/spills/k"):
            with self.subTest(path=path):
                got = plain.get(path)
                head = plain.request("HEAD", path)
                self.assertEqual(head.status, got.status)
                self.assertEqual(head.body, b"")
                self.assertEqual(head.header("content-type"), got.header("content-type"))
                self.assertEqual(int(head.header("content-length")), len(got.body))
        head = plain.request("HEAD", "/v1/sessions/head/compact")
        self.assertEqual(head.status, 405)
        self.assertEqual(head.header("allow"), "POST")


class ReadinessFollowsRequestsTest(ServerTest):
    """A request that fails on Redis makes /readyz say so at once, not after
    the background probe's next round; Redis answering again makes it ready
    again."""

    compactd_env = {"COMPACTD_REDIS_TIMEOUT_MS": str(HELD_MS)}  # a loaded Redis is no failure

    def spilling(self):
        unit = {"key": "fact", "class": "protected", "tokens": 400, "text": "x" * 400}
        return self.http.compact("ready", [unit], 60)

    def test_not_ready_right_after_a_store_failure(self):
        self.assertEqual(self.spilling().status, 200)
        self.assertEqual(timed_get(self.server.port, "/readyz")[0], 200)
        for _ in range(5):
            self.redis.kill()
            try:
                failed = self.spilling()
                self.assertError(failed, 503, "StoreUnavailable")
                # Within the probe's 200 ms: readiness must not lag the answer
                # (whether the request's failure or a probe that ran in
                # between says so first).
                resp = self.http.get("/readyz")
                self.assertEqual(resp.status, 503, resp.body)
                self.assertRegex(resp.json["error"]["message"],
                                 "^not ready: Redis (failed a request|does not answer)")
            finally:
                self.redis.start()
            self.assertTrue(wait_until(lambda: timed_get(self.server.port, "/readyz")[0] == 200,
                                       60, 0.02))
            self.assertEqual(self.spilling().status, 200)


if __name__ == "__main__":
    unittest.main()
