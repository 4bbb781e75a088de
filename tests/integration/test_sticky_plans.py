"""Sticky plans over real HTTP against compactd and Redis, kept by default:
a session's compaction starts from its last plan. On seeded random histories
that grow turn by turn in the three formats (reads, narration beside some of
them, Responses reasoning): an "extended" answer starts with the last
answer's messages byte for byte (less the reasoning of a turn finished
since, which the API drops unread); a "recompacted" one lands at or under its
low-water mark (the answer's low_water: compact_to, or above it what the
required budget and the turn just sent in full need, never above the
budget); no answer passes its budget; a loss marker once sent keeps its
text, messages dropped beside it later getting a marker of their own; the
turn just sent is never behind a pointer; each kind of plan occurs. A turn
a user message finishes, read again without its thinking blocks or its
Responses reasoning and call ids, still extends the plan. A history edited, another budget, a dry run, another format or a deleted
session is planned "fresh", as every plan is with COMPACTD_STICKY_PLANS_BYTES=0; a compact_to
above the budget is a 400 that writes nothing."""

import json
import random
import unittest

from harness import ServerTest

POLICY = {"read_only_tools": ["read_file", "grep"]}
SEED = 20261204
DEFAULT_PERCENT = 45  # COMPACTD_COMPACT_TO_PERCENT's default
MARKER_OPEN = "[compactd: message"


def marker_at(msg):
    """The loss marker message msg is or ends in, or None."""
    c = msg.get("content")
    texts = [c] if isinstance(c, str) else [b.get("text", "") for b in c or [] if isinstance(b, dict)]
    return texts[-1] if texts and texts[-1].startswith(MARKER_OPEN) else None


def reasoning_alone(messages):
    """The index of a Responses reasoning item that the item of its response
    does not follow (the API refuses it), or None."""
    for i, m in enumerate(messages):
        if m.get("type") == "reasoning":
            nxt = messages[i + 1] if i + 1 < len(messages) else {}
            if nxt.get("type") not in ("function_call", "message") or nxt.get("role", "assistant") != "assistant":
                return i
    return None


def raw_messages(body):
    """The answer's messages as the bytes compactd sent, one string each."""
    doc = json.loads(body)
    return [json.dumps(m, separators=(",", ":"), ensure_ascii=False) for m in doc["messages"]]


class Grower:
    """A history in one format, grown by one agent turn at a time: a read
    and its result (20 to 160 lines), sometimes a user message or the
    assistant's prose."""

    def __init__(self, fmt, rng):
        self.fmt, self.rng, self.k = fmt, rng, 0
        self.items = [self.user("Fix the failing test in src/app.c; never touch migrations/.")]

    def user(self, text):
        if self.fmt == "openai-responses":
            return {"type": "message", "role": "user", "content": text}
        return {"role": "user", "content": text}

    def output(self):
        lines = self.rng.randint(20, 160)
        return "\n".join("line %d of f%d: value = %d;" % (i, self.k, self.rng.randint(0, 10**6))
                         for i in range(lines))

    def turn(self):
        self.k += 1
        call, path, out = "call_%d" % self.k, "src/f%d.c" % self.k, self.output()
        args = json.dumps({"path": path})
        # Narration beside the call, now and then: kept while the read goes.
        say = "Reading %s next." % path if self.rng.random() < 0.3 else None
        if self.fmt == "openai":
            self.items += [{"role": "assistant", "content": say, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "read_file", "arguments": args}}]},
                {"role": "tool", "tool_call_id": call, "content": out}]
        elif self.fmt == "anthropic":
            self.items += [{"role": "assistant", "content": ([{"type": "text", "text": say}] if say else []) + [
                {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": path}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": out}]}]
        else:
            if self.rng.random() < 0.5:  # the response's reasoning comes before its call
                self.items.append({"type": "reasoning", "id": "rs_%d" % self.k, "summary": [],
                                   "encrypted_content": "gAAAAA" + "x" * self.rng.randint(100, 800)})
            if say:
                self.items.append({"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": say}]})
            self.items += [{"type": "function_call", "call_id": call, "name": "read_file", "arguments": args},
                           {"type": "function_call_output", "call_id": call, "output": out}]
        if self.rng.random() < 0.2:
            if self.fmt == "openai-responses":
                self.items.append({"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "f%d is fine." % self.k}]})
            else:
                self.items.append({"role": "assistant", "content": "f%d is fine." % self.k})
            self.items.append(self.user("Go on with the next file."))


class StickyPlansTest(ServerTest):

    def compact(self, session, fmt, items, budget, **extra):
        body = {"format": fmt, "budget": budget, "tokenizer": "bytes", "policy": POLICY,
                "messages": items}
        body.update(extra)
        return self.http.post("/v1/sessions/%s/messages/compact" % session, body)

    def test_random_growing_histories(self):
        rng = random.Random(SEED)
        kinds = {"fresh": 0, "extended": 0, "recompacted": 0}
        markers_kept_beside = 0
        for fmt in ("openai", "anthropic", "openai-responses"):
            for loop in range(4):
                session = "sticky-%s-%d" % (fmt, loop)
                budget = rng.choice([12000, 20000, 40000])
                compact_to = rng.choice([None, budget * 3 // 4, budget // 2])
                extra = {"compact_to": compact_to} if compact_to else {}
                g, prev = Grower(fmt, rng), None
                for turn in range(40):
                    for _ in range(rng.choice([1, 1, 2])):
                        g.turn()
                    r = self.compact(session, fmt, g.items, budget, **extra)
                    self.assertEqual(r.status, 200, r.body[:400])
                    a, msgs = r.json, raw_messages(r.body)
                    where = "%s loop %d turn %d" % (fmt, loop, turn)
                    kinds[a["plan"]] += 1
                    self.assertLessEqual(a["used_tokens"] + a["reserve_tokens"], budget, where)
                    self.assertEqual(a["compact_to"], compact_to or budget * DEFAULT_PERCENT // 100, where)
                    if prev is None:
                        self.assertEqual(a["plan"], "fresh", where)
                    else:
                        self.assertIn(a["plan"], ("extended", "recompacted"), where)
                    self.assertIsNone(reasoning_alone(a["messages"]), where)
                    # The turn just sent (keep_last, 2) stays in full.
                    for d in a["decisions"][-2:]:
                        self.assertNotEqual(d["decision"], "externalized", where)
                    if a["plan"] == "extended":
                        # The last answer, less the reasoning of a turn a user
                        # message has finished since (the API drops it unread,
                        # and so does compactd), then the new messages.
                        stale = [json.dumps(g.items[d["index"]], separators=(",", ":"), ensure_ascii=False)
                                 for d in a["decisions"] if d.get("reason") == "redundant"
                                 and g.items[d["index"]].get("type") == "reasoning"]
                        kept = [m for m in prev if m not in stale]
                        self.assertEqual(msgs[:len(kept)], kept, where)
                        self.assertNotIn("low_water", a, where)
                    if a["plan"] == "recompacted":
                        low = a["low_water"]
                        self.assertLessEqual(a["used_tokens"], low, where)
                        self.assertGreaterEqual(low, max(a["compact_to"], a["required_budget"]), where)
                        self.assertLessEqual(low, budget, where)
                        markers_kept_beside += self.markers_stay(prev, msgs, a["messages"], where)
                    prev = msgs
        for kind, n in kinds.items():
            self.assertGreater(n, 0, "no %s plan in %s" % (kind, kinds))
        self.assertGreater(markers_kept_beside, 0, "no marker kept beside a new one")

    def markers_stay(self, prev, msgs, out, where):
        """Where a recompacted answer parts from the last one right after a
        marker, the message there is a new marker: the old one kept its text
        though messages beside it went. Returns how often that happened."""
        k = 0
        while k < min(len(prev), len(msgs)) and prev[k] == msgs[k]:
            k += 1
        if k == 0 or k >= len(msgs) or marker_at(out[k - 1]) is None:
            return 0
        if marker_at(out[k]) is None or marker_at(out[k]) == marker_at(out[k - 1]):
            return 0
        self.assertNotIn(out[k], [json.loads(m) for m in prev], where)
        return 1

    def test_what_plans_fresh(self):
        g = Grower("openai", random.Random(SEED))
        for _ in range(30):
            g.turn()
        budget = 9000
        plan = lambda session, items, **extra: self.compact(session, "openai", items, budget,
                                                            compact_to=4500, **extra).json["plan"]
        self.assertEqual(plan("fresh-a", g.items), "fresh")
        # A turn that fits in what the low-water mark left: appended.
        g.items.append(g.user("Go on."))
        self.assertEqual(plan("fresh-a", g.items), "extended")
        # Another budget: a larger one may bring back what was dropped.
        g.items.append(g.user("Still there?"))
        r = self.compact("fresh-a", "openai", g.items, budget + 1000, compact_to=4500).json
        self.assertEqual(r["plan"], "fresh")
        # An edited history: another message where one was.
        edited = json.loads(json.dumps(g.items))
        edited[0]["content"] = "Fix the failing test in src/app.c."
        self.assertEqual(plan("fresh-a", edited), "fresh")
        # A dry run plans from the last plan but does not become it.
        self.assertEqual(plan("fresh-b", g.items), "fresh")
        self.assertEqual(plan("fresh-b", g.items + [g.user("And then?")], dry_run=True), "extended")
        # Another turn than the dry run's still extends the plan before it.
        g.items.append(g.user("Well?"))
        self.assertEqual(plan("fresh-b", g.items), "extended")
        # Another format of the same session: no plan of that format.
        items = [{"role": "user", "content": m["content"]} if m["role"] == "user" else m
                 for m in g.items if m["role"] == "user"]
        r = self.compact("fresh-b", "anthropic", [items[0]], budget)
        self.assertEqual((r.status, r.json["plan"]), (200, "fresh"))
        # A deleted session is forgotten.
        self.assertEqual(self.http.delete("/v1/sessions/fresh-b").status, 204)
        self.assertEqual(plan("fresh-b", g.items), "fresh")

    def test_a_finished_turn_read_anew_still_extends(self):
        """Once a user message finishes a turn, compactd reads the turn
        without what the API drops from it unread (Anthropic's thinking
        blocks; Responses reasoning, and the id linking each call and
        message to it, here a response with two reasoning items before its
        call, its message now an input message of its own): the
        turn's messages are the same ones the last plan knew, so the plan
        extends, rewriting only them."""
        out = "\n".join("line %d: value = %d;" % (i, i * 7) for i in range(60))
        thinking = {"type": "thinking", "thinking": "The README says how tests run.", "signature": "EqQB" + "s" * 200}
        task = "Fix the failing test in src/app.c; never touch migrations/."
        anthropic = [
            {"role": "user", "content": task},
            {"role": "assistant", "content": [thinking, {"type": "text", "text": "Reading the README."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                               "input": {"path": "README.md"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": out}]},
            {"role": "assistant", "content": [{"type": "text", "text": "The tests run with make check."}]},
        ]
        reasoning = lambda k: {"type": "reasoning", "id": "rs_%d" % k, "summary": [],
                               "encrypted_content": "gAAAAA" + "x" * 300}
        responses = [
            {"type": "message", "role": "user", "content": task},
            reasoning(1),
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Reading the README.", "annotations": []}]},
            reasoning(2),
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file",
             "arguments": json.dumps({"path": "README.md"})},
            {"type": "function_call_output", "call_id": "call_1", "output": out},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "make check."}]},
        ]
        # Each history's messages once the turn is finished: (index, what
        # it is now, or None where it is as it was).
        finished = {
            "anthropic": [(0, None), (1, dict(anthropic[1], content=anthropic[1]["content"][1:])),
                          (2, None), (3, None)],
            "openai-responses": [(0, None),
                                 (2, {"type": "message", "role": "assistant", "content": "Reading the README."}),
                                 (4, {k: v for k, v in responses[4].items() if k != "id"}),
                                 (5, None), (6, None)],
        }
        for fmt, items in (("anthropic", anthropic), ("openai-responses", responses)):
            session = "read-anew-" + fmt
            first = self.compact(session, fmt, items, 40000)
            self.assertEqual((first.status, first.json["plan"]), (200, "fresh"), first.body[:400])
            prev = raw_messages(first.body)
            self.assertEqual([json.loads(m) for m in prev], items, fmt)  # in flight: as sent
            later = items + [Grower(fmt, random.Random(SEED)).user("Now fix it.")]
            r = self.compact(session, fmt, later, 40000)
            self.assertEqual((r.status, r.json["plan"]), (200, "extended"), fmt)
            msgs = raw_messages(r.body)
            self.assertEqual(len(msgs), len(finished[fmt]) + 1, fmt)
            for m, (i, now) in zip(msgs, finished[fmt]):
                if now is None:
                    self.assertEqual(m, prev[i], "%s message %d" % (fmt, i))
                else:
                    self.assertEqual(json.loads(m), now, "%s message %d" % (fmt, i))
            self.assertEqual(json.loads(msgs[-1]), later[-1], fmt)
            self.assertLessEqual(r.json["used_tokens"] + r.json["reserve_tokens"], 40000, fmt)

    def test_compact_to_above_the_budget_is_refused(self):
        g = Grower("anthropic", random.Random(SEED))
        g.turn()
        r = self.compact("low-water", "anthropic", g.items, 5000, compact_to=5001)
        self.assertError(r, 400, "InvalidRequest", "$.compact_to")
        self.assertEqual(self.http.get("/v1/sessions/low-water/events").json["events"], [])
        r = self.compact("low-water", "anthropic", g.items, 5000, compact_to=0)
        self.assertError(r, 400, "InvalidRequest", "$.compact_to")


class NoPlansKeptTest(ServerTest):
    """COMPACTD_STICKY_PLANS_BYTES=0 keeps no plan: every plan is fresh."""

    compactd_env = {"COMPACTD_STICKY_PLANS_BYTES": "0"}

    def test_every_plan_is_fresh(self):
        g = Grower("openai", random.Random(SEED))
        kinds = set()
        for turn in range(8):
            for _ in range(5):
                g.turn()
            body = {"format": "openai", "budget": 9000, "tokenizer": "bytes", "policy": POLICY,
                    "messages": g.items}
            r = self.http.post("/v1/sessions/none-kept/messages/compact", body)
            self.assertEqual(r.status, 200, r.body[:400])
            kinds.add(r.json["plan"])
            self.assertTrue(any(d["decision"] == "dropped" for d in r.json["decisions"]) or turn < 2)
        self.assertEqual(kinds, {"fresh"})


if __name__ == "__main__":
    unittest.main()
