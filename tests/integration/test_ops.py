"""What an operator sees: metrics, the decision log, the served spec."""

import json
import os
import signal
import time
import unittest

from prometheus_client.parser import text_string_to_metric_families

from harness import ROOT, Compactd, ServerTest


def protected(key, tokens, text):
    return {"key": key, "class": "protected", "tokens": tokens, "text": text}


class MetricsTest(ServerTest):
    def scrape(self):
        r = self.http.get("/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("content-type").startswith("text/plain"))
        samples = {}
        for family in text_string_to_metric_families(r.body.decode()):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return samples

    def value(self, samples, name, **labels):
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    def test_counters_move_with_requests(self):
        before = self.scrape()
        route = "/v1/sessions/{session}/compact"
        self.http.compact("m", [protected("k", 500, "text!"), {"key": "r", "class": "redundant",
                                                               "tokens": 7}], 100)
        self.http.compact("m", [protected("k", 500, "t")], 10)           # 422
        self.http.post("/v1/sessions/m/compact", {"budget": -1, "units": []})  # 400
        self.http.get("/nowhere")
        after = self.scrape()

        def delta(name, **labels):
            return self.value(after, name, **labels) - self.value(before, name, **labels)

        self.assertEqual(delta("compactd_http_requests_total", route=route, status="200"), 1)
        self.assertEqual(delta("compactd_http_requests_total", route=route, status="422"), 1)
        self.assertEqual(delta("compactd_http_requests_total", route=route, status="400"), 1)
        self.assertEqual(delta("compactd_http_requests_total", route="unmatched",
                               status="404"), 1)
        self.assertEqual(delta("compactd_compactions_total", outcome="ok"), 1)
        self.assertEqual(delta("compactd_compactions_total", outcome="failure"), 1)
        self.assertEqual(delta("compactd_compactions_total", outcome="invalid"), 1)
        self.assertEqual(delta("compactd_units_total", **{"class": "protected",
                                                           "decision": "externalized"}), 1)
        self.assertEqual(delta("compactd_units_total", **{"class": "redundant",
                                                           "decision": "dropped"}), 1)
        self.assertEqual(delta("compactd_tokens_total", decision="externalized"), 500)
        self.assertEqual(delta("compactd_tokens_total", decision="dropped"), 7)
        self.assertEqual(delta("compactd_spill_bytes_total"), len("text!"))
        self.assertEqual(delta("compactd_http_request_duration_seconds_count", route=route), 3)
        self.assertEqual(self.value(after, "compactd_http_request_duration_seconds_bucket",
                                    route=route, le="+Inf"),
                         self.value(after, "compactd_http_request_duration_seconds_count",
                                    route=route))
        self.assertEqual(self.value(after, "compactd_build_info", version="0.1.0"), 1)
        self.assertIn(("compactd_redis_errors_total", ()), after)
        self.assertIn(("compactd_redis_reconnects_total", ()), after)

    def test_access_log_has_no_texts(self):
        secret = "SECRET-TEXT-%d" % os.getpid()
        self.http.compact("log", [protected("k", 500, secret)], 100)
        log = self.server.stderr()
        self.assertNotIn(secret, log)
        self.assertIn('"route":"/v1/sessions/{session}/compact"', log)
        self.assertIn('"session":"log"', log)


    def test_process_figures_and_redis_readiness(self):
        started = time.time()
        first = self.scrape()
        for i in range(50):
            self.http.compact("cpu", [protected("k%d" % i, 500, "t" * 2000)], 100)
        after = self.scrape()
        fds = self.value(after, "process_open_fds")
        self.assertGreater(fds, 2)  # at least the listening socket and Redis
        self.assertLessEqual(fds, self.value(after, "process_max_fds"))
        self.assertGreater(self.value(after, "process_resident_memory_bytes"), 1 << 20)
        self.assertGreaterEqual(self.value(after, "process_virtual_memory_bytes"),
                                self.value(after, "process_resident_memory_bytes"))
        self.assertGreater(self.value(after, "process_threads"), 1)
        start = self.value(after, "process_start_time_seconds")
        self.assertLess(start, started + 1)
        self.assertGreater(start, started - 3600)
        self.assertGreaterEqual(self.value(after, "process_cpu_seconds_total"),
                                self.value(first, "process_cpu_seconds_total"))
        self.assertEqual(self.value(after, "compactd_redis_ready"), 1)
        # Redis frozen: the gauge says so once /readyz does.
        self.redis.proc.send_signal(signal.SIGSTOP)
        try:
            deadline = time.time() + 10
            while time.time() < deadline and self.value(self.scrape(), "compactd_redis_ready"):
                time.sleep(0.1)
            self.assertEqual(self.value(self.scrape(), "compactd_redis_ready"), 0)
        finally:
            self.redis.proc.send_signal(signal.SIGCONT)
        deadline = time.time() + 10
        while time.time() < deadline and not self.value(self.scrape(), "compactd_redis_ready"):
            time.sleep(0.1)
        self.assertEqual(self.value(self.scrape(), "compactd_redis_ready"), 1)


def log_lines(server):
    """Every line compactd wrote to stderr, each parsed as JSON: a line that
    is not one fails the test."""
    lines = []
    for line in server.stderr().splitlines():
        record = json.loads(line)
        if not isinstance(record, dict) or "time" not in record or "level" not in record:
            raise AssertionError("not a log record: %r" % line)
        lines.append(record)
    return lines


class LogTest(ServerTest):
    """stderr is one JSON object a line, the process's own lines too, and
    an error answer's line says what was refused and where."""

    def refuse(self):
        self.http.post("/v1/sessions/why/compact", {"budget": -1, "units": []})  # 400
        self.http.compact("why", [protected("big", 500, "t")], 10)  # 422
        lines = [r for r in log_lines(self.server) if r.get("session") == "why"]
        self.assertEqual([r["status"] for r in lines], [400, 422])
        return lines

    def test_every_line_is_json_and_refusals_say_why(self):
        self.assertIn("listening on",
                      " ".join(r.get("msg", "") for r in log_lines(self.server)))
        bad, failed = self.refuse()
        self.assertEqual(bad["error"], {"type": "InvalidRequest", "path": "$.budget"})
        self.assertEqual(failed["error"]["type"], "CompactionFailure")
        # The message (which can name a unit's key) waits for debug.
        self.assertNotIn("message", failed["error"])


class DebugLogTest(LogTest):
    compactd_env = {"COMPACTD_LOG_LEVEL": "debug"}

    def test_every_line_is_json_and_refusals_say_why(self):
        bad, failed = self.refuse()
        self.assertIn("integer", bad["error"]["message"])
        self.assertIn("big", failed["error"]["message"])

    def test_stopping_is_logged_as_json(self):
        server = Compactd(self.redis.url(), env=self.compactd_env)
        server.stop()
        msgs = [r.get("msg", "") for r in log_lines(server)]
        self.assertIn("stopped", msgs)
        self.assertTrue(any("SIGTERM" in m for m in msgs), msgs)


class DecisionLogTest(ServerTest):
    def events(self, session, **query):
        q = "&".join("%s=%s" % kv for kv in query.items())
        r = self.http.get("/v1/sessions/%s/events%s" % (session, "?" + q if q else ""))
        self.assertEqual(r.status, 200, r.body)
        return r.json

    def test_every_compaction_is_logged_with_its_decisions(self):
        p = self.http.compact("log", [protected("spilled", 500, "the text"),
                                      protected("kept", 10, "k"),
                                      {"key": "gone", "class": "redundant", "tokens": 3}],
                              100).json
        self.http.compact("log", [protected("spilled", 500, "the text")], 10)
        self.http.compact("log", [protected("x", 5, "y")], 100, dry_run=True)
        ev = self.events("log")["events"]
        self.assertEqual(len(ev), 2)  # the dry run writes nothing
        ok, failed = ev
        self.assertEqual((ok["kind"], ok["outcome"], ok["budget"]), ("compact", "ok", 100))
        self.assertEqual(ok["used_tokens"], p["used_tokens"])
        self.assertEqual(ok["preserved"], ["kept"])
        self.assertEqual(ok["externalized"], [{"key": "spilled", "class": "protected",
                                               "sha256": p["externalized"][0]["sha256"]}])
        self.assertEqual(ok["dropped"], [{"key": "gone", "reason": "redundant"}])
        self.assertEqual((failed["outcome"], failed["failed_key"]), ("failure", "spilled"))
        self.assertLess(ok["id"], failed["id"])

    def test_paging(self):
        for i in range(5):
            self.http.compact("page", [protected("k%d" % i, 500, "t%d" % i)], 100)
        first = self.events("page", limit=2)
        self.assertEqual(len(first["events"]), 2)
        second = self.events("page", limit=2, after=first["next_after"])
        third = self.events("page", limit=2, after=second["next_after"])
        self.assertNotIn("next_after", third)
        keys = [e["externalized"][0]["key"] for page in (first, second, third)
                for e in page["events"]]
        self.assertEqual(keys, ["k0", "k1", "k2", "k3", "k4"])

    def test_bad_paging_parameters(self):
        for q in ["limit=0", "limit=1001", "limit=x", "after=nope"]:
            with self.subTest(q=q):
                r = self.http.get("/v1/sessions/page/events?" + q)
                self.assertError(r, 400, "InvalidRequest")

    def test_delete_removes_the_log(self):
        self.http.compact("dl", [protected("k", 500, "t")], 100)
        self.assertEqual(len(self.events("dl")["events"]), 1)
        self.assertEqual(self.http.delete("/v1/sessions/dl").status, 204)
        self.assertEqual(self.events("dl")["events"], [])


class SpecServedTest(ServerTest):
    def test_openapi_is_served_byte_for_byte(self):
        r = self.http.get("/openapi.yaml")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("content-type"), "application/yaml")
        with open(os.path.join(ROOT, "openapi.yaml"), "rb") as f:
            self.assertEqual(r.body, f.read())


if __name__ == "__main__":
    unittest.main()
