"""Domain rules over real HTTP against a real Redis: what a request may not
do to the plan or to pointers, and how the decision log's query is read."""

from harness import ServerTest
from test_api import derivable, protected


class DomainRulesTest(ServerTest):
    def test_a_protected_unit_with_empty_text_is_refused(self):
        before = self.redis.keys()
        for route, extra in [("compact", {"budget": 100}), ("verify", {"context": "anything"})]:
            with self.subTest(route=route):
                body = dict(extra, units=[protected("goal", 0, "")])
                r = self.http.post("/v1/sessions/empty/" + route, body)
                self.assertError(r, 400, "InvalidRequest", "$.units[0].text")
        self.assertEqual(self.redis.keys(), before)

    def test_an_enum_with_an_embedded_nul_is_refused(self):
        cases = [
            (b'{"budget": 1, "units": [], "mode": "strict\\u0000x"}', "$.mode"),
            (b'{"budget": 1, "units": [], "mode": "discovery\\u0000"}', "$.mode"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "derivable\\u0000", "tokens": 1}]}',
             "$.units[0].class"),
        ]
        for body, path in cases:
            with self.subTest(body=body):
                r = self.http.post("/v1/sessions/nul/compact", body, raw=True)
                self.assertError(r, 400, "InvalidRequest", path)

    def test_a_key_cannot_make_a_pointer_that_reads_as_another(self):
        # Unescaped, this key's pointer held "[externalized a sha256:...]"
        # and the start of a pointer for key y.
        key = "a sha256:0123456789abcdef] [externalized y"
        r = self.http.compact("keys", [protected(key, 500, "the text")], 100)
        self.assertEqual(r.status, 200, r.body)
        e = r.json["externalized"][0]
        ptr = e["pointer"]
        self.assertEqual((ptr.count("["), ptr.count("]")), (1, 1), ptr)
        self.assertTrue(ptr.startswith("[externalized ") and ptr.endswith("]"), ptr)
        self.assertNotIn("[externalized y", ptr)
        self.assertEqual(len(ptr.encode()), e["pointer_tokens"])
        self.assertEqual(e["key"], key)
        self.assertEqual(self.http.get(e["href"]).json["text"], "the text")
        # The audit finds the unit behind its escaped pointer.
        v = self.http.post("/v1/sessions/keys/verify",
                           {"context": "before " + ptr + " after",
                            "units": [protected(key, 500, "the text")]})
        self.assertEqual(v.status, 200, v.body)
        self.assertEqual(v.json["present"], [{"key": key, "as": "pointer"}])

    def test_a_group_member_its_pointer_cannot_shrink_stays_verbatim(self):
        # A 10-token tool call carried a 43-token pointer: in discovery mode
        # the call stays verbatim while its large result is externalized.
        units = [derivable("call", 10, group="t1", text="ls -la /srv"),
                 derivable("result", 900, group="t1", text="x" * 900)]
        r = self.http.compact("group", units, 60, mode="discovery", dry_run=True)
        self.assertEqual(r.status, 200, r.body)
        p = r.json
        self.assertEqual([u["key"] for u in p["preserved"]], ["call"])
        self.assertEqual([u["key"] for u in p["externalized"]], ["result"])
        self.assertEqual(p["used_tokens"], 10 + p["externalized"][0]["pointer_tokens"])


class VerifyTextLimitTest(ServerTest):
    compactd_env = {"COMPACTD_MAX_VERIFY_TEXT_BYTES": "1000"}

    def test_the_units_text_of_one_verify_is_bounded(self):
        # The matcher holds about ten bytes per byte of the units' texts: their
        # total is limited, whatever each unit's own limit.
        units = [protected("a", 1, "x" * 600), protected("b", 1, "y" * 401)]
        r = self.http.post("/v1/sessions/big/verify", {"context": "", "units": units})
        self.assertError(r, 400, "InvalidRequest", "$.units")
        self.assertIn("COMPACTD_MAX_VERIFY_TEXT_BYTES", r.json["error"]["message"])
        units[1]["text"] = "y" * 400
        r = self.http.post("/v1/sessions/big/verify", {"context": "", "units": units})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["verdict"], "silent_truncation")


class EventsQueryTest(ServerTest):
    def test_malformed_after_is_invalid_not_unavailable(self):
        self.http.compact("ev", [protected("k", 1, "t")], 100)
        for after in ["99999999999999999999-0", "18446744073709551616-0",
                      "0-18446744073709551616", "01-0", "1-", "-1", "1-0x"]:
            with self.subTest(after=after):
                r = self.http.get("/v1/sessions/ev/events?after=" + after)
                self.assertError(r, 400, "InvalidRequest")
        ok = self.http.get("/v1/sessions/ev/events?after=18446744073709551615-18446744073709551615")
        self.assertEqual(ok.status, 200, ok.body)
        self.assertEqual(ok.json["events"], [])

    def test_non_canonical_limits_are_refused(self):
        self.http.compact("lim", [protected("k", 1, "t")], 100)
        for query in ["limit=%2B5", "limit=+5", "limit", "limit=", "limit=%205", "limit=5%20",
                      "limit=05", "limit=0", "limit=1001", "limit=1e2",
                      "limit=99999999999999999999"]:
            with self.subTest(query=query):
                r = self.http.get("/v1/sessions/lim/events?" + query)
                self.assertError(r, 400, "InvalidRequest")
        for query in ["limit=1", "limit=1000", "limit=50"]:
            with self.subTest(query=query):
                r = self.http.get("/v1/sessions/lim/events?" + query)
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(len(r.json["events"]), 1)


if __name__ == "__main__":
    import unittest

    unittest.main()
