"""A compaction sent again (after a lost answer, or a 503 that says the
write may have happened) leaves one decision-log entry, as its spills were
already one copy each: the commit is named for what it writes, and for the
client's Idempotency-Key, which the session holds across later compactions;
without a key only a resend right after itself is recognised."""

import unittest

from harness import ServerTest


def spilling(budget=60, text="x" * 400):
    return [{"key": "fact", "class": "protected", "tokens": 400, "text": text}], budget


class RetryTest(ServerTest):
    def entries(self, session):
        resp = self.http.get("/v1/sessions/%s/events" % session)
        self.assertEqual(resp.status, 200, resp.body)
        return [e for e in resp.json["events"] if e["kind"] == "compact"]

    def compact(self, session, units, budget, headers=None):
        body = {"budget": budget, "units": units}
        resp = self.http.post("/v1/sessions/%s/compact" % session, body, headers=headers)
        self.assertEqual(resp.status, 200, resp.body)
        self.assertEqual(len(resp.json["externalized"]), 1)
        return resp.json

    def test_the_same_request_again_is_one_entry(self):
        units, budget = spilling()
        first = self.compact("retry", units, budget)
        again = self.compact("retry", units, budget)
        self.assertEqual(first["externalized"], again["externalized"])
        self.assertEqual(len(self.entries("retry")), 1)
        # Another request (another budget) is another compaction...
        self.compact("retry", units, budget + 1)
        self.assertEqual(len(self.entries("retry")), 2)
        # ...and the first one again after it is a compaction again.
        self.compact("retry", units, budget)
        self.assertEqual(len(self.entries("retry")), 3)

    def test_an_idempotency_key_names_the_commit(self):
        units, budget = spilling()
        key = {"Idempotency-Key": "turn-7"}
        self.compact("keyed", units, budget, key)
        self.compact("keyed", units, budget, key)
        self.assertEqual(len(self.entries("keyed")), 1)
        # The same request under another key is logged again.
        self.compact("keyed", units, budget, {"Idempotency-Key": "turn-8"})
        self.assertEqual(len(self.entries("keyed")), 2)

    def test_a_key_reused_with_another_body_is_refused(self):
        key = {"Idempotency-Key": "turn-9"}
        units, budget = spilling(text="a" * 400)
        first = self.compact("reused", units, budget, key)
        before = sorted(self.redis.keys())
        other, _ = spilling(text="b" * 400)
        resp = self.http.post("/v1/sessions/reused/compact", {"budget": budget, "units": other},
                              headers=key)
        self.assertEqual(resp.status, 409, resp.body)
        self.assertIn("Idempotency-Key", resp.json["error"]["message"])
        # Nothing of the second request is written, the first reads back.
        self.assertEqual(sorted(self.redis.keys()), before)
        self.assertEqual(len(self.entries("reused")), 1)
        spill = self.http.get("/v1/sessions/reused/spills/fact")
        self.assertEqual(spill.status, 200, spill.body)
        self.assertEqual(spill.json["text"], "a" * 400)
        self.assertEqual(first["externalized"][0]["key"], "fact")

    def test_a_key_is_held_across_later_compactions(self):
        key = {"Idempotency-Key": "turn-10"}
        units, budget = spilling(text="k" * 400)
        first = self.compact("held", units, budget, key)
        # Other compactions of the session, keyed and not, come between...
        self.compact("held", units, budget + 1)
        self.compact("held", units, budget + 2, {"Idempotency-Key": "turn-11"})
        self.assertEqual(len(self.entries("held")), 3)
        # ...and the first request retried under its key is still its retry.
        before = sorted(self.redis.keys())
        again = self.compact("held", units, budget, key)
        self.assertEqual(again["externalized"], first["externalized"])
        self.assertEqual(len(self.entries("held")), 3)
        self.assertEqual(sorted(self.redis.keys()), before)
        # The key reused for another body after them is refused, nothing written.
        other, _ = spilling(text="m" * 400)
        resp = self.http.post("/v1/sessions/held/compact", {"budget": budget, "units": other},
                              headers=key)
        self.assertEqual(resp.status, 409, resp.body)
        self.assertIn("Idempotency-Key", resp.json["error"]["message"])
        self.assertEqual(len(self.entries("held")), 3)
        spill = self.http.get("/v1/sessions/held/spills/fact")
        self.assertEqual(spill.json["text"], "k" * 400)

    def test_a_resend_after_its_text_vanished_writes_it_again(self):
        units, budget = spilling(text="v" * 400)
        self.compact("vanished", units, budget)
        texts = [k for k in self.redis.keys() if "vanished" in k and k.endswith("text")]
        self.assertEqual(len(texts), 1, self.redis.keys())
        self.redis.cli("DEL", texts[0])
        resp = self.http.post("/v1/sessions/vanished/compact", {"budget": budget, "units": units})
        self.assertEqual(resp.status, 200, resp.body)
        spill = self.http.get("/v1/sessions/vanished/spills/fact")
        self.assertEqual(spill.status, 200, spill.body)
        self.assertEqual(spill.json["text"], "v" * 400)

    def test_a_resent_large_commit_whose_text_vanished_writes_it_again(self):
        # Past LAYOUT_PIECE_SPILLS (128): the commit is staged in pieces.
        units = [{"key": "big-%03d" % i, "class": "protected", "tokens": 400,
                  "text": "w%03d " % i + "v" * 200} for i in range(200)]
        body = {"budget": 60 * len(units), "units": units}
        key = {"Idempotency-Key": "large-1"}
        resp = self.http.post("/v1/sessions/bigvanished/compact", body, headers=key)
        self.assertEqual(resp.status, 200, resp.body)
        spilled = [e["key"] for e in resp.json["externalized"]]
        self.assertGreater(len(spilled), 128)
        texts = [k for k in self.redis.keys() if "bigvanished" in k and k.endswith("text")]
        self.assertEqual(len(texts), 1, self.redis.keys())
        self.redis.cli("HDEL", texts[0], self.redis.cli("HKEYS", texts[0]).split()[0])
        again = self.http.post("/v1/sessions/bigvanished/compact", body, headers=key)
        self.assertEqual(again.status, 200, again.body)
        lost = [k for k in spilled
                if self.http.get("/v1/sessions/bigvanished/spills/%s" % k).status != 200]
        self.assertEqual(lost, [], "%d of %d spills not readable" % (len(lost), len(spilled)))

    def test_compactions_that_differ_only_in_what_they_keep_are_two(self):
        # No key: the same spill at the same budget and unit count, but
        # another unit kept (or dropped) in each. Both are decisions the log
        # must hold; neither is a retry of the other.
        units, budget = spilling()
        kept = {"key": "note-a", "class": "redundant", "tokens": 5, "text": "a"}
        other = {"key": "note-b", "class": "redundant", "tokens": 5, "text": "bb"}
        self.compact("apart", units + [kept], budget)
        self.compact("apart", units + [other], budget)
        entries = self.entries("apart")
        self.assertEqual(len(entries), 2, entries)
        # The second sent again right after itself is its retry.
        self.compact("apart", units + [other], budget)
        self.assertEqual(len(self.entries("apart")), 2)

    def test_a_key_without_spills_is_held_too(self):
        # Nothing to spill: the log entry alone is the commit, and its key
        # is checked and recorded as a spilling one's.
        key = {"Idempotency-Key": "turn-nospill"}
        units = [{"key": "goal", "class": "protected", "tokens": 10, "text": "ship it"}]
        body = {"budget": 100, "units": units}
        first = self.http.post("/v1/sessions/nospill/compact", body, headers=key)
        self.assertEqual(first.status, 200, first.body)
        self.assertEqual(first.json["externalized"], [])
        again = self.http.post("/v1/sessions/nospill/compact", body, headers=key)
        self.assertEqual(again.status, 200, again.body)
        self.assertEqual(again.json["preserved"], first.json["preserved"])
        self.assertEqual(len(self.entries("nospill")), 1)
        # The key reused for another body, with or without spills: refused.
        other = {"budget": 100, "units": [dict(units[0], text="ship it now")]}
        resp = self.http.post("/v1/sessions/nospill/compact", other, headers=key)
        self.assertEqual(resp.status, 409, resp.body)
        self.assertIn("Idempotency-Key", resp.json["error"]["message"])
        units_spilling, budget = spilling()
        resp = self.http.post("/v1/sessions/nospill/compact",
                              {"budget": budget, "units": units_spilling}, headers=key)
        self.assertEqual(resp.status, 409, resp.body)
        self.assertEqual(len(self.entries("nospill")), 1)
        self.assertEqual(self.http.get("/v1/sessions/nospill/spills").json["spills"], [])
        # A spilling compaction's key reused for a body that spills nothing.
        self.compact("nospill", units_spilling, budget, {"Idempotency-Key": "turn-spilled"})
        resp = self.http.post("/v1/sessions/nospill/compact", body,
                              headers={"Idempotency-Key": "turn-spilled"})
        self.assertEqual(resp.status, 409, resp.body)
        self.assertEqual(len(self.entries("nospill")), 2)

    def test_a_chat_compactions_key_is_held(self):
        key = {"Idempotency-Key": "chat-turn-1"}
        messages = [{"role": "user", "content": "Keep the build green. " * 40},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": "Go on."}]
        body = {"format": "openai", "tokenizer": "bytes", "budget": 400, "messages": messages}
        for session, spills in (("chatkey", True), ("chatkey-small", False)):
            b = dict(body) if spills else dict(body, budget=4000)
            first = self.http.post("/v1/sessions/%s/messages/compact" % session, b, headers=key)
            self.assertEqual(first.status, 200, first.body)
            again = self.http.post("/v1/sessions/%s/messages/compact" % session, b, headers=key)
            self.assertEqual(again.status, 200, again.body)
            self.assertEqual(again.json["messages"], first.json["messages"])
            self.assertEqual(len(self.entries(session)), 1, session)
            other = dict(b, messages=messages[:-1] + [{"role": "user", "content": "Stop."}])
            resp = self.http.post("/v1/sessions/%s/messages/compact" % session, other,
                                  headers=key)
            self.assertEqual(resp.status, 409, resp.body)
            self.assertIn("Idempotency-Key", resp.json["error"]["message"])
            self.assertEqual(len(self.entries(session)), 1, session)

    def test_one_key_in_two_sessions_is_two_commits(self):
        # The key is scoped to its session: the same key with other bodies
        # in two sessions of one tenant neither conflicts nor is a retry.
        key = {"Idempotency-Key": "turn-shared"}
        for session, text in (("left", "l" * 400), ("right", "r" * 400)):
            units, budget = spilling(text=text)
            self.compact(session, units, budget, key)
        for session, text in (("left", "l" * 400), ("right", "r" * 400)):
            self.assertEqual(len(self.entries(session)), 1)
            spill = self.http.get("/v1/sessions/%s/spills/fact" % session)
            self.assertEqual(spill.json["text"], text)
        for session in ("quiet-left", "quiet-right"):
            units = [{"key": "goal", "class": "protected", "tokens": 10, "text": session}]
            resp = self.http.post("/v1/sessions/%s/compact" % session,
                                  {"budget": 100, "units": units}, headers=key)
            self.assertEqual(resp.status, 200, resp.body)
            self.assertEqual(len(self.entries(session)), 1)

    def test_sessions_do_not_share_names(self):
        units, budget = spilling()
        self.compact("one", units, budget)
        self.compact("two", units, budget)
        self.assertEqual(len(self.entries("one")), 1)
        self.assertEqual(len(self.entries("two")), 1)


if __name__ == "__main__":
    unittest.main()
