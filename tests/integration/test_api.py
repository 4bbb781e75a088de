"""The compaction API end to end over real HTTP against a real Redis."""

import hashlib
import time
import unittest
import urllib.parse

from harness import Compactd, ServerTest, free_port, run_concurrently

POINTER_OVERHEAD = 39


def protected(key, tokens, text):
    return {"key": key, "class": "protected", "tokens": tokens, "text": text}


def derivable(key, tokens, **kw):
    u = {"key": key, "class": "derivable", "tokens": tokens}
    u.update(kw)
    return u


def redundant(key, tokens):
    return {"key": key, "class": "redundant", "tokens": tokens}


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pointer_tokens(key):
    return len(key.encode("utf-8")) + POINTER_OVERHEAD


class PlanTest(ServerTest):
    def test_health_and_readiness(self):
        self.assertEqual(self.http.get("/healthz").status, 200)
        r = self.http.get("/readyz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["status"], "ready")

    def test_everything_fits_and_every_unit_is_in_one_list(self):
        units = [protected("goal", 10, "ship v2"), derivable("file", 20), redundant("raw", 500),
                 derivable("log", 30, reacquire="tail app.log")]
        r = self.http.compact("fits", units, 100)
        self.assertEqual(r.status, 200, r.body)
        p = r.json
        self.assertEqual(p["session"], "fits")
        self.assertEqual(p["used_tokens"], 60)
        self.assertEqual(p["remaining_tokens"], 40)
        self.assertEqual(p["verbatim_budget"], 10)
        self.assertEqual(p["required_budget"], 10)
        self.assertEqual([u["key"] for u in p["preserved"]], ["goal", "file", "log"])
        self.assertEqual(p["dropped"], [{"key": "raw", "class": "redundant", "tokens": 500,
                                         "reason": "redundant"}])
        self.assertEqual(p["externalized"], [])
        self.assertEqual(p["summarized"], [])

    def test_protected_before_derivable(self):
        # The seed listing's trap: derivable units must not take the budget
        # protected state needs.
        units = [derivable("big", 90), protected("constraint", 50, "never push to main")]
        p = self.http.compact("order", units, 100).json
        self.assertEqual([u["key"] for u in p["preserved"]], ["constraint"])
        self.assertEqual(p["dropped"][0]["key"], "big")
        self.assertEqual(p["dropped"][0]["reason"], "over_budget")

    def test_dropped_unit_echoes_reacquire_hint(self):
        units = [protected("p", 10, "x"), derivable("d", 100, reacquire="cat /etc/app.conf")]
        p = self.http.compact("hint", units, 20).json
        self.assertEqual(p["dropped"], [{"key": "d", "class": "derivable", "tokens": 100,
                                         "reason": "over_budget",
                                         "reacquire": "cat /etc/app.conf"}])

    def test_summary_and_group_in_strict_mode(self):
        units = [derivable("call", 30, group="t1"),
                 derivable("result", 400, group="t1", summary={"text": "3 rows", "tokens": 5}),
                 derivable("other", 50, priority=-1)]
        p = self.http.compact("strict", units, 60).json
        self.assertEqual(len(p["summarized"]), 1)
        s = p["summarized"][0]
        self.assertEqual((s["key"], s["tokens"], s["summary_tokens"]), ("result", 400, 5))
        self.assertEqual([u["key"] for u in p["preserved"]], ["call"])
        self.assertEqual(p["dropped"][0]["key"], "other")
        self.assertEqual(p["used_tokens"], 35)

    def test_group_takes_its_strongest_class(self):
        # A call whose result is protected state stays with it; a redundant
        # member of a derivable group is placed with the group.
        units = [derivable("call", 30, group="t1", text="apply_migration 0042"),
                 dict(protected("ledger", 20, "migration 0042 applied"), group="t1"),
                 dict(redundant("old", 10), group="t2"), derivable("new", 10, group="t2"),
                 derivable("big", 500)]
        p = self.http.compact("groups", units, 100).json
        self.assertEqual([(u["key"], u["class"]) for u in p["preserved"]],
                         [("call", "protected"), ("ledger", "protected"), ("old", "derivable"),
                          ("new", "derivable")])
        self.assertEqual([u["key"] for u in p["dropped"]], ["big"])

    def test_discovery_mode_externalizes_derivable_group(self):
        units = [derivable("q", 300, group="g", text="select * from t"),
                 derivable("a", 300, group="g", text="42 rows")]
        p = self.http.compact("disc", units, 100, mode="discovery").json
        self.assertEqual([u["key"] for u in p["externalized"]], ["q", "a"])
        for e in p["externalized"]:
            self.assertEqual(e["class"], "derivable")
            got = self.http.get(e["href"]).json
            self.assertEqual(sha(got["text"]), e["sha256"])


class SpillTest(ServerTest):
    def test_externalizes_fewest_and_round_trips_bytes(self):
        text = "naïve 日本語 😀 \u0000\u0001\u001f\t\r\n\"quoted\" \\back\\ \u2028 \x7f end"
        units = [protected("small", 45, "short"), protected("big", 400, text),
                 protected("mid", 200, "b" * 800), derivable("d", 10)]
        r = self.http.compact("spill", units, 300)
        self.assertEqual(r.status, 200, r.body)
        p = r.json
        # Externalizing "big" alone (saving 400-42) is enough: one unit only.
        self.assertEqual([e["key"] for e in p["externalized"]], ["big"])
        e = p["externalized"][0]
        self.assertEqual(e["sha256"], sha(text))
        self.assertEqual(e["pointer_tokens"], pointer_tokens("big"))
        self.assertEqual(len(e["pointer"].encode()), e["pointer_tokens"])
        self.assertIn("big", e["pointer"])
        self.assertIn(e["sha256"][:16], e["pointer"])
        self.assertTrue(e["pointer"].isascii())
        self.assertEqual(p["used_tokens"], 45 + 42 + 200 + 10)
        self.assertLessEqual(p["used_tokens"], p["budget"])

        got = self.http.get(e["href"])
        self.assertEqual(got.status, 200)
        # Byte for byte: compare the decoded text and the raw UTF-8 digest.
        self.assertEqual(got.json["text"], text)
        self.assertEqual(hashlib.sha256(got.json["text"].encode()).hexdigest(), e["sha256"])
        self.assertEqual(got.json["class"], "protected")
        self.assertEqual(got.json["tokens"], 400)
        self.assertTrue(got.json["created_at"].endswith("Z"))

    def test_read_without_sha256_is_the_version_spilled_last(self):
        def spill(text, tokens):
            r = self.http.compact("order", [protected("cfg", tokens, text)], 50)
            self.assertEqual(r.status, 200, r.body)
            return r.json["externalized"][0]

        spill("path=/etc/a.conf", 100)
        first_a = self.http.get("/v1/sessions/order/spills/cfg").json
        time.sleep(0.005)
        spill("path=/etc/b.conf", 200)
        self.assertEqual(self.http.get("/v1/sessions/order/spills/cfg").json["text"],
                         "path=/etc/b.conf")
        time.sleep(0.005)
        spill("path=/etc/a.conf", 300)
        # A again is the newest; its metadata stays its first spill's.
        got = self.http.get("/v1/sessions/order/spills/cfg").json
        self.assertEqual(got["text"], "path=/etc/a.conf")
        self.assertEqual(got["tokens"], 100)
        self.assertEqual(got["created_at"], first_a["created_at"])

    def test_pointers_are_idempotent_and_old_ones_keep_resolving(self):
        first = self.http.compact("idem", [protected("cfg", 100, "path=/etc/a.conf")], 50).json
        again = self.http.compact("idem", [protected("cfg", 100, "path=/etc/a.conf")], 50).json
        self.assertEqual(first["externalized"], again["externalized"])
        changed = self.http.compact("idem", [protected("cfg", 100, "path=/etc/b.conf")], 50).json
        old, new = first["externalized"][0], changed["externalized"][0]
        self.assertNotEqual(old["pointer"], new["pointer"])
        self.assertEqual(self.http.get(old["href"]).json["text"], "path=/etc/a.conf")
        self.assertEqual(self.http.get(new["href"]).json["text"], "path=/etc/b.conf")
        listing = self.http.get("/v1/sessions/idem/spills").json["spills"]
        self.assertEqual(sorted(s["sha256"] for s in listing), sorted([old["sha256"],
                                                                       new["sha256"]]))
        # Without sha256 the href names the newest version.
        latest = self.http.get("/v1/sessions/idem/spills/cfg").json
        self.assertEqual(latest["text"], "path=/etc/b.conf")

    def test_awkward_keys_round_trip_through_href(self):
        for key in ["a/b/../c", "q?x=1&y=2#frag", "100% + more", "ключ:{tag}", "sp ace",
                    "{session}:text"]:
            text = "value of " + key
            p = self.http.compact("keys", [protected(key, 500, text)], 100).json
            e = p["externalized"][0]
            self.assertEqual(e["key"], key)
            self.assertEqual(urllib.parse.unquote(e["href"].split("/spills/")[1].split("?")[0]),
                             key)
            got = self.http.get(e["href"]).json
            self.assertEqual((got["key"], got["text"]), (key, text))

    def test_spills_survive_a_flushed_script_cache(self):
        # Commits run a script loaded once per connection; a SCRIPT FLUSH
        # under compactd must not turn spills into errors.
        first = self.http.compact("flush", [protected("a", 500, "before")], 100)
        self.assertEqual(first.status, 200, first.body)
        self.redis.cli("SCRIPT", "FLUSH")
        for i in range(6):  # reach every worker's connection
            r = self.http.compact("flush", [protected("k%d" % i, 500, "after %d" % i)], 100)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(self.http.get(r.json["externalized"][0]["href"]).json["text"],
                             "after %d" % i)

    def test_dry_run_writes_nothing(self):
        before = self.redis.keys()
        p = self.http.compact("dry", [protected("k", 500, "t")], 100, dry_run=True).json
        self.assertEqual(len(p["externalized"]), 1)
        self.assertTrue(p["dry_run"])
        self.assertEqual(self.redis.keys(), before)
        self.assertEqual(self.http.get(p["externalized"][0]["href"]).status, 404)

    def test_compaction_failure_names_the_unit_and_writes_nothing(self):
        before = self.redis.keys()
        units = [protected("a", 30, "x"), protected("longer-key", 500, "y"),
                 protected("c", 10, "z")]
        r = self.http.compact("fail", units, 60)
        err = self.assertError(r, 422, "CompactionFailure")
        # Cheapest forms: 30, 49 (pointer), 10 -> 89 > 60; "longer-key" tips it.
        self.assertEqual(err["key"], "longer-key")
        self.assertEqual(err["required_budget"], 89)
        self.assertEqual(err["budget"], 60)
        self.assertEqual(err["tokens"], 500)
        self.assertEqual(err["pointer_tokens"], pointer_tokens("longer-key"))
        spill_keys = [k for k in self.redis.keys() if not k.endswith(":events")]
        self.assertEqual(spill_keys, [k for k in before if not k.endswith(":events")])
        ok = self.http.compact("fail", units, 89)
        self.assertEqual(ok.status, 200, ok.body)

    def test_delete_session_removes_every_spill(self):
        p = self.http.compact("gone", [protected("k", 500, "t"), protected("j", 400, "u")],
                              100).json
        self.assertEqual(len(p["externalized"]), 2)
        r = self.http.delete("/v1/sessions/gone")
        self.assertEqual(r.status, 204)
        self.assertEqual(r.body, b"")
        self.assertEqual(self.http.get("/v1/sessions/gone/spills").json["spills"], [])
        for e in p["externalized"]:
            self.assertError(self.http.get(e["href"]), 404, "NotFound")
        self.assertEqual([k for k in self.redis.keys() if "default:gone}" in k], [])

    def test_eight_concurrent_clients_lose_nothing(self):
        results, errors = [], []

        def client(n):
            try:
                for i in range(25):
                    text = "client %d step %d \u00e9 %s" % (n, i, "x" * (i * 7))
                    r = self.http.compact("conc-%d" % (n % 3),
                                          [protected("k%d-%d" % (n, i), 1000, text),
                                           derivable("d", 5)], 100)
                    if r.status != 200:
                        errors.append(r.body)
                        continue
                    results.append((r.json["externalized"][0]["href"], text))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        run_concurrently(client, 8)
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 200)
        for href, text in results:
            self.assertEqual(self.http.get(href).json["text"], text)


class ErrorTest(ServerTest):
    def test_invalid_request_names_the_field(self):
        cases = [
            (b"{", "$"),
            (b"[]", "$"),
            (b'{"budget": 1}', "$.units"),
            (b'{"units": []}', "$.budget"),
            (b'{"budget": -1, "units": []}', "$.budget"),
            (b'{"budget": 2147483648, "units": []}', "$.budget"),
            (b'{"budget": 1.5, "units": []}', "$.budget"),
            (b'{"budget": 1, "units": [], "priorty": 1}', "$.priorty"),
            (b'{"budget": 1, "units": {}}', "$.units"),
            (b'{"budget": 1, "units": [], "mode": "lossy"}', "$.mode"),
            (b'{"budget": 1, "units": [], "dry_run": "yes"}', "$.dry_run"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "x", "tokens": 1}]}',
             "$.units[0].class"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "derivable", "tokens": 1},'
             b' {"key": "b", "class": "derivable", "tokens": "1"}]}', "$.units[1].tokens"),
            (b'{"budget": 1, "units": [{"key": "", "class": "derivable", "tokens": 1}]}',
             "$.units[0].key"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "protected", "tokens": 1}]}',
             "$.units[0].text"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "protected", "tokens": 1,'
             b' "text": "t", "summary": {"text": "s", "tokens": 1}}]}', "$.units[0].summary"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "redundant", "tokens": 1,'
             b' "priority": 3}]}', "$.units[0].priority"),
            (b'{"budget": 1, "units": [{"key": "a", "class": "derivable", "tokens": 1},'
             b' {"key": "a", "class": "derivable", "tokens": 1}]}', "$.units[1].key"),
            (b'{"budget": 1, "budget": 2, "units": []}', "$.budget"),
            (b'{"budget": 1, "units": []} x', "$"),
            (b'{"budget": 1, "units": ["\xff"]}', "$.units[0]"),
        ]
        before = self.redis.keys()
        for body, path in cases:
            with self.subTest(body=body):
                r = self.http.post("/v1/sessions/bad/compact", body, raw=True)
                self.assertError(r, 400, "InvalidRequest", path)
        self.assertEqual(self.redis.keys(), before)

    def test_bad_session_id(self):
        r = self.http.compact("bad%20id", [], 1)
        self.assertError(r, 400, "InvalidRequest")
        r = self.http.compact("x" * 129, [], 1)
        self.assertError(r, 400, "InvalidRequest")

    def test_not_found_and_method_not_allowed(self):
        self.assertError(self.http.get("/v2/nothing"), 404, "NotFound")
        self.assertError(self.http.get("/v1/sessions/s/spills/nokey"), 404, "NotFound")
        r = self.http.get("/v1/sessions/s/compact")
        self.assertError(r, 405, "MethodNotAllowed")
        self.assertEqual(r.header("allow"), "POST")
        r = self.http.request("PUT", "/v1/sessions/s")
        self.assertError(r, 405, "MethodNotAllowed")
        self.assertEqual(r.header("allow"), "DELETE")

    def test_unsupported_media_type(self):
        r = self.http.post("/v1/sessions/s/compact", b'{"budget":1,"units":[]}', raw=True,
                           headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "UnsupportedMediaType")
        ok = self.http.post("/v1/sessions/s/compact", b'{"budget":1,"units":[]}', raw=True,
                            headers={"Content-Type": "application/json; charset=utf-8"})
        self.assertEqual(ok.status, 200)

    def test_bad_spill_query(self):
        r = self.http.get("/v1/sessions/s/spills/k?sha256=XYZ")
        self.assertError(r, 400, "InvalidRequest")


class StoreDownTest(unittest.TestCase):
    """compactd pointed at a port where no Redis listens."""

    def test_spill_needs_the_store_but_a_plan_without_spill_does_not(self):
        server = Compactd("redis://127.0.0.1:%d/0" % free_port())
        try:
            http = server.client()
            self.assertEqual(http.get("/healthz").status, 200)
            r = http.get("/readyz")
            self.assertEqual(r.status, 503)
            self.assertEqual(r.json["error"]["type"], "StoreUnavailable")
            r = http.compact("s", [protected("k", 500, "t")], 100)
            self.assertEqual(r.status, 503)
            self.assertEqual(r.json["error"]["type"], "StoreUnavailable")
            r = http.compact("s", [protected("k", 50, "t")], 100)
            self.assertEqual(r.status, 200)
            self.assertEqual(http.get("/v1/sessions/s/spills").status, 503)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
