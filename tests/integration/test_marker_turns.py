"""compactd's loss markers appended to an Anthropic turn, sent back: a user
turn kept between two dropped runs takes a marker from each side, and fed
back it must read as that turn followed by two markers, never as a turn
whose text holds a marker (priced as the user's words, and hidden behind
the turn's pointer when a later compaction spills it)."""

import unittest

from harness import ServerTest

FILLER = "filler text " * 40
# Long enough that a pointer in its place saves room.
RULE = "Keep the public API stable: " + "no signature of include/api.h may change. " * 12
MARKER_A = ("[compactd: messages 2-3 were dropped to fit the token budget; "
            "no re-acquire hint was given]")
MARKER_B = ("[compactd: messages 5-6 were dropped to fit the token budget; "
            "no re-acquire hint was given]")


def history():
    return [{"role": "user", "content": "Task: fix the build."},
            {"role": "assistant", "content": "I will look."},
            {"role": "user", "content": "Old detail one. " + FILLER},
            {"role": "assistant", "content": "Old reply one. " + FILLER},
            {"role": "user", "content": RULE},
            {"role": "assistant", "content": "Old reply two. " + FILLER},
            {"role": "user", "content": "Old detail two. " + FILLER},
            {"role": "assistant", "content": "Working on it."},
            {"role": "user", "content": "Go on."}]


def body(messages, budget, annotations=()):
    # Planned as full as the budget holds (compact_to at the budget): what is
    # kept here is decided by the markers, not by the low-water mark.
    return {"format": "anthropic", "tokenizer": "bytes", "messages": messages, "budget": budget,
            "compact_to": budget, "policy": {"keep_last": 0}, "annotations": list(annotations)}


class MarkerTurnsTest(ServerTest):
    def compact(self, session, b):
        resp = self.http.post("/v1/sessions/%s/messages/compact" % session, b)
        self.assertEqual(resp.status, 200, resp.body)
        return resp.json

    def marker_texts(self, turn):
        return [b["text"] for b in turn["content"]
                if b["type"] == "text" and b["text"].startswith("[compactd: message")]

    def assert_rule_spilled_apart(self, session, answer):
        """The turn of RULE behind a pointer, and both markers after it,
        still markers that the model reads (the spill keeps the turn as it
        was sent)."""
        turn = [m for m in answer["messages"] if m["role"] == "user"
                and isinstance(m["content"], list)
                and any("[externalized " in b.get("text", "") for b in m["content"])]
        self.assertEqual(len(turn), 1, answer["messages"])
        texts = [b["text"] for b in turn[0]["content"]]
        self.assertTrue(texts[0].startswith("[externalized "), texts)
        self.assertEqual("\n".join(texts[1:]), MARKER_A + "\n" + MARKER_B)
        spilled = [e for e in answer["decisions"] if e["decision"] == "externalized"]
        self.assertEqual(len(spilled), 1, spilled)
        spill = self.http.get("/v1/sessions/%s/spills/%s" % (session, spilled[0]["key"]))
        self.assertEqual(spill.status, 200, spill.body)
        self.assertIn(RULE, spill.json["text"])

    def test_a_turn_between_two_dropped_runs_fed_back(self):
        derivable = [{"index": i, "class": "derivable"} for i in (2, 3, 5, 6)]
        first = self.compact("twice", body(history(), 1100, derivable))
        turn = first["messages"][2]
        self.assertEqual(turn["content"][0], {"type": "text", "text": RULE})
        self.assertEqual(self.marker_texts(turn), [MARKER_A + "\n" + MARKER_B])
        # Sent back as it came, at the same budget: the same history.
        again = self.compact("twice", body(first["messages"], 1100))
        self.assertEqual(again["messages"], first["messages"])
        # With less room the rule goes behind a pointer, the markers stay.
        self.assert_rule_spilled_apart("twice", self.compact("twice", body(first["messages"], 400)))

    def test_an_older_answers_marker_blocks_are_all_recognised(self):
        # As a compactd before this one wrote it: a block per marker.
        messages = [history()[0], history()[1],
                    {"role": "user", "content": [{"type": "text", "text": RULE},
                                                 {"type": "text", "text": MARKER_A},
                                                 {"type": "text", "text": MARKER_B}]},
                    history()[7], history()[8]]
        self.assert_rule_spilled_apart("older", self.compact("older", body(messages, 400)))


if __name__ == "__main__":
    unittest.main()
