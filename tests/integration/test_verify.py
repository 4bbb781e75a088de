"""The truncation audit: POST /v1/sessions/{session}/verify."""

import hashlib
import unittest

from harness import ServerTest


def unit(key, text, tokens=None):
    return {"key": key, "class": "protected",
            "tokens": tokens if tokens is not None else len(text.encode()), "text": text}


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VerifyTest(ServerTest):
    def verify(self, session, context, units, **extra):
        body = {"context": context, "units": units}
        body.update(extra)
        return self.http.post("/v1/sessions/%s/verify" % session, body)

    def spill(self, session, key, text):
        """Compacts one protected unit into a spill; returns its pointer."""
        p = self.http.compact(session, [unit(key, text, 1000)], 100).json
        return p["externalized"][0]

    def events(self, session):
        return self.http.get("/v1/sessions/%s/events" % session).json["events"]

    def test_verbatim_pointer_and_missing(self):
        e = self.spill("v1", "cfg", "config at /etc/app/conf.yaml key=retries")
        ctx = ("Goal: ship it. Must not re-run migration 0042. " + e["pointer"] +
               " Done so far: tests.")
        units = [unit("goal", "Goal: ship it."), unit("cfg", "config at /etc/app/conf.yaml key=retries"),
                 unit("idem", "Must not re-run migration 0042."),
                 unit("neg", "Branch feature/x ruled out: flaky")]
        r = self.verify("v1", ctx, units)
        self.assertEqual(r.status, 200, r.body)
        v = r.json
        self.assertEqual(v["verdict"], "silent_truncation")
        self.assertEqual(v["present"], [{"key": "goal", "as": "verbatim"},
                                        {"key": "cfg", "as": "pointer"},
                                        {"key": "idem", "as": "verbatim"}])
        self.assertEqual(v["missing"], [{"key": "neg", "tokens": 33,
                                         "sha256": sha("Branch feature/x ruled out: flaky")}])
        self.assertNotIn("repair", v)

    def test_safe_context(self):
        units = [unit("a", "alpha"), unit("b", "beta")]
        v = self.verify("safe", "alpha and beta", units).json
        self.assertEqual(v["verdict"], "safe")
        self.assertEqual(v["missing"], [])
        self.assertEqual(self.events("safe"), [])

    def test_pointers_are_checked_in_one_round_trip(self):
        units = [unit("k%d" % i, "spilled text number %d" % i, 1000) for i in range(200)]
        p = self.http.compact("many", units, 100 * 200)
        self.assertEqual(p.status, 200, p.body)
        pointers = [e["pointer"] for e in p.json["externalized"]]
        self.assertGreater(len(pointers), 100)
        spilled = {e["key"] for e in p.json["externalized"]}
        units = [u for u in units if u["key"] in spilled]
        # One pointer whose spill is not there: the answer stays per pointer.
        extra = unit("gone", "never spilled")
        ctx = " ".join(pointers) + " [externalized gone sha256:%s]" % sha("never spilled")[:16]
        self.redis.cli("CONFIG", "RESETSTAT")
        v = self.verify("many", ctx, [unit(u["key"], u["text"]) for u in units] + [extra]).json
        self.assertEqual(v["verdict"], "silent_truncation")
        self.assertEqual([m["key"] for m in v["missing"]], ["gone"])
        self.assertEqual(len(v["present"]), len(pointers))
        stats = self.redis.cli("INFO", "commandstats")
        calls = {line.split(":")[0]: line for line in stats.split("\n") if line.startswith("cmdstat_")}
        self.assertNotIn("cmdstat_hexists", calls)
        self.assertIn("cmdstat_hmget:calls=1,", calls.get("cmdstat_hmget", ""))

    def test_pointer_whose_spill_was_deleted_is_missing(self):
        e = self.spill("del", "k", "the exact text")
        units = [unit("k", "the exact text")]
        self.assertEqual(self.verify("del", e["pointer"], units).json["verdict"], "safe")
        self.assertEqual(self.http.delete("/v1/sessions/del").status, 204)
        v = self.verify("del", e["pointer"], units).json
        self.assertEqual(v["verdict"], "silent_truncation")
        self.assertEqual([m["key"] for m in v["missing"]], ["k"])

    def test_pointer_for_other_text_or_session_does_not_count(self):
        e = self.spill("own", "k", "version one")
        v = self.verify("own", e["pointer"], [unit("k", "version two")]).json
        self.assertEqual(v["verdict"], "silent_truncation")
        # The same pointer in another session: its spill is not there.
        v = self.verify("other", e["pointer"], [unit("k", "version one")]).json
        self.assertEqual(v["verdict"], "silent_truncation")

    def test_unicode_texts(self):
        texts = ["日本語のパス /var/データ", "emoji 😀 ok", "combining e\u0301", "nul\u0000byte"]
        units = [unit("u%d" % i, t) for i, t in enumerate(texts)]
        ctx = "prefix " + " | ".join(texts[:3]) + " suffix"
        v = self.verify("uni", ctx, units).json
        self.assertEqual([p["key"] for p in v["present"]], ["u0", "u1", "u2"])
        self.assertEqual([m["key"] for m in v["missing"]], ["u3"])
        # A text differing only by normalization is not the same bytes.
        v = self.verify("uni", "combining \u00e9", [unit("e", "combining e\u0301")]).json
        self.assertEqual(v["verdict"], "silent_truncation")

    def test_overlapping_and_nested_texts(self):
        units = [unit("outer", "run migration 0042 once"), unit("inner", "migration 0042"),
                 unit("left", "abcab"), unit("right", "cabca"), unit("same", "migration 0042 "),
                 unit("dup", "migration 0042")]
        # "abcabca" holds "abcab" and "cabca" overlapping; the outer text holds
        # the inner one.
        v = self.verify("nest", "x abcabca y run migration 0042 once z", units).json
        self.assertEqual(v["verdict"], "safe", v)
        v = self.verify("nest", "migration 0042", units).json
        self.assertEqual([p["key"] for p in v["present"]], ["inner", "dup"])
        self.assertEqual([m["key"] for m in v["missing"]], ["outer", "left", "right", "same"])

    def test_repair_within_budget(self):
        units = [unit("a", "alpha fact", 10), unit("b", "b" * 400, 100),
                 unit("c", "gamma fact", 10)]
        r = self.verify("rep", "alpha fact", units, budget=100, context_tokens=40)
        self.assertEqual(r.status, 200, r.body)
        v = r.json
        # Room 60: "c" verbatim (10) and "b" as a 40-token pointer; 50 in all.
        rep = v["repair"]
        self.assertEqual(rep["tokens"], 50)
        self.assertEqual(rep["append"][0]["key"], "b")
        self.assertIn("pointer", rep["append"][0])
        self.assertEqual(rep["append"][1], {"key": "c", "text": "gamma fact"})
        # The spill behind the repair pointer was written and resolves, so
        # the repaired context passes.
        repaired = "alpha fact " + rep["append"][0]["pointer"] + " gamma fact"
        self.assertEqual(self.verify("rep", repaired, units).json["verdict"], "safe")
        ev = self.events("rep")
        self.assertEqual(ev[0]["kind"], "verify")
        self.assertEqual(ev[0]["outcome"], "repaired")
        self.assertEqual([m["key"] for m in ev[0]["missing"]], ["b", "c"])

    def test_repair_dry_run_writes_nothing(self):
        before = self.redis.keys()
        units = [unit("b", "b" * 400, 100)]
        v = self.verify("dryrep", "", units, budget=50, context_tokens=0, dry_run=True).json
        self.assertIn("pointer", v["repair"]["append"][0])
        self.assertEqual(self.redis.keys(), before)

    def test_repair_that_cannot_fit(self):
        units = [unit("a", "a" * 400, 100), unit("b", "b" * 400, 100)]
        before = [k for k in self.redis.keys() if not k.endswith(":events")]
        r = self.verify("nofit", "", units, budget=100, context_tokens=30)
        err = self.assertError(r, 422, "CompactionFailure")
        self.assertEqual(err["required_budget"], 30 + 40 + 40)
        self.assertEqual(err["budget"], 100)
        self.assertEqual(err["key"], "b")
        self.assertEqual(err["pointer_tokens"], 40)
        self.assertEqual([k for k in self.redis.keys() if not k.endswith(":events")], before)
        ev = self.events("nofit")
        self.assertEqual((ev[-1]["kind"], ev[-1]["outcome"], ev[-1]["failed_key"]),
                         ("verify", "failure", "b"))

    def test_invalid_verify_requests(self):
        cases = [
            ({"units": []}, "$.context"),
            ({"context": "x"}, "$.units"),
            ({"context": 3, "units": []}, "$.context"),
            ({"context": "x", "units": [{"key": "k", "class": "derivable", "tokens": 1}]},
             "$.units[0].class"),
            ({"context": "x", "units": [], "budget": 10}, "$.context_tokens"),
            ({"context": "x", "units": [], "extra": 1}, "$.extra"),
        ]
        for body, path in cases:
            with self.subTest(body=body):
                r = self.http.post("/v1/sessions/bad/verify", body)
                self.assertError(r, 400, "InvalidRequest", path)


class LostIdentifiersTest(ServerTest):
    def test_summary_that_drops_identifiers_is_flagged_without_changing_the_plan(self):
        text = ("Updated /etc/app/config.yaml: set retries=3 and timeout to 30s at commit "
                "3f2a9c1d; see https://ci.example/run/77 and \"do not retry\".")
        summary = "Updated the config; see https://ci.example/run/77."

        def body(with_text):
            u = {"key": "tool", "class": "derivable", "tokens": 500,
                 "summary": {"text": summary, "tokens": 12}}
            if with_text:
                u["text"] = text
            return [u, {"key": "p", "class": "protected", "tokens": 10, "text": "keep"}]

        flagged = self.http.compact("lost", body(True), 40).json
        plain = self.http.compact("lost", body(False), 40).json
        s = flagged["summarized"][0]
        self.assertEqual(s["lost_identifiers"],
                         ["/etc/app/config.yaml", "retries=3", "30s", "3f2a9c1d", "do not retry"])
        self.assertEqual(flagged["lost_identifier_count"], 5)
        self.assertEqual(plain["summarized"][0]["lost_identifiers"], [])
        self.assertEqual(plain["lost_identifier_count"], 0)
        for field in ("preserved", "externalized", "dropped", "used_tokens"):
            self.assertEqual(flagged[field], plain[field])

    def test_summary_that_keeps_identifiers_is_clean(self):
        text = "Wrote /srv/out.csv (12 MB) with key=value"
        u = {"key": "t", "class": "derivable", "tokens": 500, "text": text,
             "summary": {"text": "/srv/out.csv 12 MB key=value", "tokens": 9}}
        p = self.http.compact("kept", [u], 20).json
        self.assertEqual(p["summarized"][0]["lost_identifiers"], [])


if __name__ == "__main__":
    unittest.main()
