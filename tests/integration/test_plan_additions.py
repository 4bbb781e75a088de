"""The units route's additions: decisions in request order, summary budgets
on dry runs, and per-unit metadata echoed and stored with its spill."""

from harness import ServerTest
from test_api import derivable, redundant


def protected(key, tokens, text, **kw):
    """A protected unit, with extra fields (metadata)."""
    u = {"key": key, "class": "protected", "tokens": tokens, "text": text}
    u.update(kw)
    return u


class DecisionsTest(ServerTest):
    def test_one_decision_per_unit_in_request_order(self):
        units = [derivable("old", 300, reacquire="cat old"), protected("goal", 10, "ship v2"),
                 redundant("raw", 50), protected("log", 900, "L" * 900),
                 derivable("sum", 400, summary={"text": "short", "tokens": 5}),
                 derivable("kept", 20)]
        r = self.http.compact("dec", units, 100)
        self.assertEqual(r.status, 200, r.body)
        p = r.json
        d = p["decisions"]
        self.assertEqual([e["key"] for e in d], [u["key"] for u in units])
        self.assertEqual([e["decision"] for e in d],
                         ["dropped", "preserved", "dropped", "externalized", "summarized",
                          "preserved"])
        self.assertEqual([e["class"] for e in d], [u["class"] for u in units])
        ext = p["externalized"][0]
        self.assertEqual((d[3]["pointer"], d[3]["sha256"], d[3]["tokens"]),
                         (ext["pointer"], ext["sha256"], ext["pointer_tokens"]))
        self.assertEqual((d[0]["reason"], d[2]["reason"]), ("over_budget", "redundant"))
        self.assertEqual(d[4]["tokens"], 5)
        self.assertEqual(d[1]["tokens"], 10)
        self.assertEqual(d[0]["tokens"], 0)
        self.assertEqual(sum(e["tokens"] for e in d), p["used_tokens"])
        # Not a dry run: no summary budgets.
        self.assertTrue(all("summary_budget" not in e for e in d + p["dropped"]))

    def test_a_dry_run_tells_each_dropped_unit_its_summary_budget(self):
        # Budget 100: goal takes 10; then by rank (newest first) "b" (60 tokens)
        # fits, leaving 30; "a" (400) and the group g (200 + 300) are dropped
        # with 30 left when each was placed.
        units = [protected("goal", 10, "ship v2"),
                 derivable("g1", 200, group="g"), derivable("g2", 300, group="g"),
                 derivable("a", 400), derivable("b", 60), redundant("r", 5)]
        r = self.http.compact("budget", units, 100, dry_run=True)
        self.assertEqual(r.status, 200, r.body)
        p = r.json
        dropped = {e["key"]: e for e in p["dropped"]}
        self.assertEqual({k: e.get("summary_budget") for k, e in dropped.items()},
                         {"g1": 30, "g2": 30, "a": 30, "r": None})
        by_key = {e["key"]: e for e in p["decisions"]}
        self.assertEqual(by_key["a"]["summary_budget"], 30)
        self.assertNotIn("summary_budget", by_key["b"])

        # A summary within that budget is used in the unit's place.
        units[3]["summary"] = {"text": "four hundred tokens, summarized", "tokens": 30}
        again = self.http.compact("budget", units, 100, dry_run=True).json
        self.assertEqual([e["key"] for e in again["summarized"]], ["a"])
        self.assertEqual(again["used_tokens"], 100)
        # One token more and it is dropped again.
        units[3]["summary"]["tokens"] = 31
        over = self.http.compact("budget", units, 100, dry_run=True).json
        self.assertIn("a", [e["key"] for e in over["dropped"]])


class MetadataTest(ServerTest):
    def test_metadata_is_echoed_and_stored_with_the_spill(self):
        meta = {"role": "tool", "tool_call_id": "call_7", "turn": 12, "final": True,
                "note": None}
        units = [protected("result", 900, "R" * 900, metadata=meta),
                 derivable("d", 5, metadata={"role": "assistant"}), protected("plain", 1, "p")]
        r = self.http.compact("meta", units, 100)
        self.assertEqual(r.status, 200, r.body)
        d = r.json["decisions"]
        self.assertEqual(d[0]["metadata"], meta)
        self.assertEqual(list(d[0]["metadata"]), list(meta))  # member order kept
        self.assertEqual(d[1]["metadata"], {"role": "assistant"})
        self.assertNotIn("metadata", d[2])
        spill = self.http.get(r.json["externalized"][0]["href"]).json
        self.assertEqual(spill["metadata"], meta)
        self.assertEqual(spill["text"], "R" * 900)

    def test_bad_metadata_is_refused(self):
        big = {"k%d" % i: "v" * 600 for i in range(8)}
        cases = [
            ({"metadata": "role=tool"}, "$.units[0].metadata"),
            ({"metadata": ["a"]}, "$.units[0].metadata"),
            ({"metadata": {"nested": {"a": 1}}}, "$.units[0].metadata.nested"),
            ({"metadata": {"list": []}}, "$.units[0].metadata.list"),
            ({"metadata": {"k%d" % i: i for i in range(9)}}, "$.units[0].metadata"),
            ({"metadata": big}, "$.units[0].metadata"),
        ]
        before = self.redis.keys()
        for extra, path in cases:
            with self.subTest(path=path, extra=str(extra)[:60]):
                r = self.http.compact("badmeta", [protected("k", 900, "t" * 900, **extra)], 100)
                self.assertError(r, 400, "InvalidRequest", path)
        self.assertEqual(self.redis.keys(), before)


if __name__ == "__main__":
    import unittest

    unittest.main()
