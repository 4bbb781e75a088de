"""What an operator sees: metrics, the decision log, the served spec."""

import os
import unittest

from prometheus_client.parser import text_string_to_metric_families

from harness import ROOT, ServerTest


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
