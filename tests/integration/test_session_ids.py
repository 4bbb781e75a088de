"""Session ids holding '/': written %2F in a path, the id is one segment on
every session route, its spills' hrefs spell it so, and it is a session of
its own (agent/42 is not agent)."""

import unittest

from harness import ServerTest

ENC = "agent%2F42"
ID = "agent/42"


def protected(key, tokens, text):
    return {"key": key, "class": "protected", "tokens": tokens, "text": text}


class SessionIdsTest(ServerTest):

    def spill_one(self, enc):
        r = self.http.compact(enc, [protected("log", 500, "the whole build log"),
                                    protected("task", 10, "never push to main")], 100)
        self.assertEqual(r.status, 200, r.body)
        return r.json

    def test_every_session_route_takes_an_encoded_slash(self):
        p = self.spill_one(ENC)
        self.assertEqual(p["session"], ID)
        e = p["externalized"][0]
        self.assertTrue(e["href"].startswith("/v1/sessions/agent%2F42/spills/log?sha256="),
                        e["href"])
        got = self.http.get(e["href"])
        self.assertEqual(got.status, 200, got.body)
        self.assertEqual(got.json["text"], "the whole build log")

        listed = self.http.get("/v1/sessions/%s/spills" % ENC)
        self.assertEqual(listed.status, 200, listed.body)
        self.assertEqual([s["key"] for s in listed.json["spills"]], ["log"])
        # Lower-case hex is the same id.
        self.assertEqual(self.http.get("/v1/sessions/agent%2f42/spills").json["spills"],
                         listed.json["spills"])

        events = self.http.get("/v1/sessions/%s/events" % ENC)
        self.assertEqual(events.status, 200, events.body)
        self.assertTrue(events.json["events"], events.body)

        v = self.http.post("/v1/sessions/%s/verify" % ENC, {
            "units": [{"key": "task", "class": "protected", "text": "never push to main"}],
            "context": "never push to main"})
        self.assertEqual(v.status, 200, v.body)

        m = self.http.post("/v1/sessions/%s/messages/compact" % ENC, {
            "format": "openai", "budget": 1000, "tokenizer": "bytes",
            "messages": [{"role": "user", "content": "hello"}]})
        self.assertEqual(m.status, 200, m.body)
        self.assertEqual(m.json["session"], ID)
        mv = self.http.post("/v1/sessions/%s/messages/verify" % ENC, {
            "format": "openai", "units": [{"key": "u", "class": "protected", "text": "hello"}],
            "messages": [{"role": "user", "content": "hello"}]})
        self.assertEqual(mv.status, 200, mv.body)

        d = self.http.delete("/v1/sessions/%s" % ENC)
        self.assertEqual(d.status, 204, d.body)
        self.assertEqual(self.http.get("/v1/sessions/%s/spills" % ENC).json["spills"], [])
        self.assertError(self.http.get(e["href"]), 404, "NotFound")

    def test_agent_42_is_not_agent(self):
        self.spill_one("deep%2Fa%2Fb")
        self.spill_one("deep")
        r = self.http.delete("/v1/sessions/deep")
        self.assertEqual(r.status, 204)
        # Deleting "deep" left "deep/a/b" alone.
        self.assertEqual([s["key"] for s in
                          self.http.get("/v1/sessions/deep%2Fa%2Fb/spills").json["spills"]],
                         ["log"])
        # A raw '/' is a separator: deep/a/b/spills is no route.
        self.assertError(self.http.get("/v1/sessions/deep/a/b/spills"), 404, "NotFound")

    def test_bad_ids_are_still_refused(self):
        for enc in ("agent%2F%00", "agent%2F%20x", "%2F" * 129):
            r = self.http.compact(enc, [], 1)
            err = self.assertError(r, 400, "InvalidRequest")
            self.assertIn("%2F", err["message"])
        self.assertEqual([k for k in self.redis.keys() if "agent" in k], [])

    def test_dot_segments_are_refused(self):
        # A client normalises /v1/sessions/../compact to /v1/compact: such
        # an id could never be reached again. Dots inside an id are fine.
        for enc in (".", "..", "%2E", "%2E%2E", ".%2E"):
            with self.subTest(enc=enc):
                for r in (self.http.compact(enc, [protected("k", 5, "x")], 100),
                          self.http.get("/v1/sessions/%s/spills" % enc),
                          self.http.delete("/v1/sessions/%s" % enc)):
                    err = self.assertError(r, 400, "InvalidRequest")
                    self.assertIn('neither "." nor ".."', err["message"])
        self.assertEqual([k for k in self.redis.keys() if "{default:." in k], [])
        for ok in ("...", ".a", "a..b"):
            self.assertEqual(self.http.compact(ok, [protected("k", 5, "x")], 100).status, 200, ok)

    def test_spill_key_with_a_slash_beside_a_session_with_one(self):
        r = self.http.compact(ENC + "x", [protected("dir/file.c", 500, "int main;"),
                                          protected("t", 10, "t")], 100)
        self.assertEqual(r.status, 200, r.body)
        e = r.json["externalized"][0]
        self.assertIn("/v1/sessions/agent%2F42x/spills/dir%2Ffile.c?", e["href"])
        got = self.http.get(e["href"])
        self.assertEqual(got.status, 200, got.body)
        self.assertEqual(got.json["text"], "int main;")


if __name__ == "__main__":
    unittest.main()
