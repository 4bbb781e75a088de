"""Anthropic's cache_control breakpoints through compaction, against a real
compactd and redis-server: the coding transcript (transcript.mjs, with its
narration) given breakpoints on the system prompt and on blocks of three
messages (a narrated call, its result, a later turn), compacted from the
history whole down to required_budget. In every answer: at most four blocks
carry cache_control (system and messages together); every breakpoint sent
is reported in cache_breakpoints, and the block it names carries one; a
breakpoint on a block kept as sent stays there; one whose block went moves
to a block of a message at or before its own, never after it, nor is it
lost while anything is kept before it; with cache_prefix, one more is
placed on the answer's last block while fewer than four are used, and none
where four are. The answers pass check.mjs (the structural validator, the
o200k_base count, tsc against @anthropic-ai/sdk's MessageParam). A fifth
breakpoint, a cache_control that is not an object, and cache_prefix in
another format are a 400 at their path that writes nothing."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402
from node_check import run_node_check  # noqa: E402
from test_narration import transcripts  # noqa: E402

POLICY = {"read_only_tools": ["read_file", "grep"], "redundant_tools": ["list_dir"],
          "protect_tools": ["apply_migration"]}
STEPS = 4
EPHEMERAL = {"type": "ephemeral"}


def with_breakpoints(history):
    """The history with a breakpoint on its system prompt and on three
    message blocks: the tool_use of the first narrated call, its result,
    and the last block of the turn two from the end. Returns it and the
    (index, block) of each message breakpoint."""
    h = json.loads(json.dumps(history))
    h["system"] = [{"type": "text", "text": h["system"], "cache_control": EPHEMERAL}]
    msgs = h["messages"]
    marks = []
    narrated = next(i for i, m in enumerate(msgs)
                    if m["role"] == "assistant" and isinstance(m["content"], list)
                    and m["content"][0]["type"] == "text" and m["content"][-1]["type"] == "tool_use")
    for i in (narrated, narrated + 1, len(msgs) - 3):
        if isinstance(msgs[i]["content"], str):
            msgs[i]["content"] = [{"type": "text", "text": msgs[i]["content"]}]
        k = len(msgs[i]["content"]) - 1
        msgs[i]["content"][k]["cache_control"] = EPHEMERAL
        marks.append((i, k))
    return h, marks


def breakpoints(answer):
    """(message, block) of every block of the answer's messages with a
    cache_control, and how many the system prompt has."""
    out = [(o, k) for o, m in enumerate(answer["messages"]) if isinstance(m["content"], list)
           for k, b in enumerate(m["content"]) if "cache_control" in b]
    system = answer.get("system")
    return out, sum(1 for b in system if "cache_control" in b) if isinstance(system, list) else 0


class CacheControlTest(ServerTest):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.history, cls.marks = with_breakpoints(transcripts()["anthropic"])

    def compact(self, session, budget, history=None, **extra):
        h = history or self.history
        body = {"format": "anthropic", "budget": budget, "tokenizer": "o200k_base", "policy": POLICY,
                "compact_to": budget, "system": h["system"], "messages": h["messages"]}
        body.update(extra)
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)

    def check_answer(self, a, prefix, where):
        placed, in_system = breakpoints(a)
        self.assertEqual(in_system, 1, where)
        self.assertLessEqual(len(placed) + in_system, 4, where)
        reports = a["cache_breakpoints"]
        sent = [r for r in reports if r["from"] is not None]
        self.assertEqual([(r["from"]["index"], r["from"]["block"]) for r in sent], self.marks, where)
        # Every breakpoint said to be somewhere is there, and no block has
        # one nobody reported.
        to = {(r["to"]["message"], r["to"]["block"]) for r in reports if r["to"] is not None}
        self.assertEqual(to, set(placed), where)
        # Which answer message renders each input message (None: dropped).
        at, o = {}, 0
        for d in a["decisions"]:
            while o < len(a["messages"]) and self.is_marker_only(a["messages"][o]) and \
                    d["decision"] != "dropped":
                o += 1
            if d["decision"] == "dropped":
                at[d["index"]] = None
            else:
                at[d["index"]] = o
                o += 1
        for r in sent:
            i, k = r["from"]["index"], r["from"]["block"]
            d = a["decisions"][i]
            kept_as_sent = d["decision"] == "preserved" and "calls_dropped" not in d
            if kept_as_sent:  # stays on its block
                self.assertEqual((r["to"]["message"], r["to"]["block"]), (at[i], k), where)
                continue
            if r["to"] is None:  # only where nothing is kept before it
                self.assertTrue(all(at[j] is None for j in range(i)), where)
                continue
            # Moved: to a block of its message's rendering or of one before it.
            limit = at[i] if at[i] is not None else min(
                [at[j] for j in range(i + 1, len(at)) if at[j] is not None] or [len(a["messages"])])
            self.assertLessEqual(r["to"]["message"], limit, where)
        mine = [r for r in reports if r["from"] is None]
        self.assertEqual(len(mine), 1 if prefix else 0, where)
        if prefix and mine[0]["to"] is None:  # only where four are in use
            self.assertEqual(len(placed) + in_system, 4, where)
        elif prefix:  # on the last block
            last = len(a["messages"]) - 1
            self.assertEqual(mine[0]["to"], {"message": last, "block": len(a["messages"][last]["content"]) - 1},
                             where)

    @staticmethod
    def is_marker_only(m):
        c = m["content"]
        t = c if isinstance(c, str) else (c[0].get("text", "") if len(c) == 1 else "")
        return t.startswith("[compactd: message")

    def test_breakpoints_kept_or_moved_back(self):
        probe = self.compact("cc-probe", 10**7, dry_run=True)
        self.assertEqual(probe.status, 200, probe.body[:400])
        full, required = probe.json["used_tokens"], probe.json["required_budget"]
        budgets = [full] + [required + (full - required) * k // STEPS for k in range(STEPS - 1, 0, -1)] \
            + [required]
        cases, moved = [], 0
        for n, budget in enumerate(budgets):
            for prefix in (False, True):
                session = "cc-%d-%d" % (n, prefix)
                r = self.compact(session, budget, cache_prefix=prefix)
                self.assertEqual(r.status, 200, r.body[:400])
                a = r.json
                self.check_answer(a, prefix, "budget %d prefix %s" % (budget, prefix))
                moved += sum(1 for x in a["cache_breakpoints"] if x["from"] is not None
                             and a["decisions"][x["from"]["index"]]["decision"] != "preserved")
                spills = {d["key"]: self.http.get(d["href"]).json["text"]
                          for d in a["decisions"] if d["decision"] == "externalized"}
                cases.append({"name": "cache_control %d %s" % (budget, prefix), "format": "anthropic",
                              "input": self.history, "answer": a, "spills": spills})
        self.assertGreater(moved, 0, "no breakpoint had to move")
        run_node_check(self, "check.mjs", cases)

    def test_four_in_use_leave_no_room_for_the_prefix(self):
        # The system prompt's and three in messages, none of them moved.
        r = self.compact("cc-four", 10**7, cache_prefix=True)
        self.assertEqual(r.status, 200, r.body[:400])
        placed, in_system = breakpoints(r.json)
        self.assertEqual(len(placed) + in_system, 4)
        self.assertEqual([x["to"] for x in r.json["cache_breakpoints"] if x["from"] is None], [None])

    def test_refused(self):
        h = json.loads(json.dumps(self.history))
        for m in h["messages"][:6]:
            if isinstance(m["content"], list):
                m["content"][0]["cache_control"] = EPHEMERAL
        r = self.compact("cc-five", 10**7, history=h)
        err = self.assertError(r, 400, "InvalidRequest")
        self.assertRegex(err["path"], r"^\$\.messages\[\d+\]\.content\[\d+\]\.cache_control$")
        self.assertIn("limit of 4", err["message"])
        h = json.loads(json.dumps(self.history))
        h["system"][0]["cache_control"] = "ephemeral"
        self.assertError(self.compact("cc-bad", 10**7, history=h), 400, "InvalidRequest")
        body = {"format": "openai", "budget": 100, "cache_prefix": True,
                "messages": [{"role": "user", "content": "hi"}]}
        r = self.http.post("/v1/sessions/cc-openai/messages/compact", body)
        self.assertEqual(self.assertError(r, 400, "InvalidRequest")["path"], "$.cache_prefix")
        for s in ("cc-five", "cc-bad", "cc-openai"):
            self.assertEqual(self.http.get("/v1/sessions/%s/events" % s).json["events"], [])


if __name__ == "__main__":
    unittest.main()
