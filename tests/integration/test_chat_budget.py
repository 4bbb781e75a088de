"""What a chat budget counts, over real HTTP against compactd and Redis: the
tokenizer each format defaults to and the budget_basis every answer carries;
tools and reserve_tokens priced before any message (tools as one message of
their compact JSON, plus Anthropic's tool-use system prompt bound); bad
values refused with their path and nothing written; and the 422's
required_by adding up to a required_budget that is tight (one token less is
refused, the budget itself succeeds)."""

import json
import unittest

from harness import ServerTest

READ_ONLY = {"read_only_tools": ["read_file"]}
ANTHROPIC_TOOL_PROMPT = 530  # the largest tool-use system prompt Anthropic lists
FRAME = 4  # compactd's framing of a message

OPENAI_TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
ANTHROPIC_TOOLS = [{"name": "read_file", "description": "Read a file",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def openai_history(exchanges):
    msgs = [{"role": "user", "content": "Fix the failing test in src/a.c"}]
    for k in range(exchanges):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_%d" % k, "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": "src/f%d.c" % k})}}]})
        msgs.append({"role": "tool", "tool_call_id": "call_%d" % k,
                     "content": "int f%d(void) { return %d; } /* and 80 more lines */ " % (k, k) * 4})
    msgs += [{"role": "assistant", "content": "The bug is the return value."},
             {"role": "user", "content": "Fix it."}]
    return msgs


def anthropic_history(exchanges):
    msgs = [{"role": "user", "content": "Fix the failing test in src/a.c"}]
    for k in range(exchanges):
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": "tu_%d" % k, "name": "read_file", "input": {"path": "src/f%d.c" % k}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_%d" % k,
             "content": "int f%d(void) { return %d; } /* and 80 more lines */ " % (k, k) * 4}]})
    msgs += [{"role": "assistant", "content": "The bug is the return value."},
             {"role": "user", "content": "Fix it."}]
    return msgs


HISTORIES = {"openai": openai_history, "anthropic": anthropic_history}
TOOLS = {"openai": OPENAI_TOOLS, "anthropic": ANTHROPIC_TOOLS}


def compact_json(v):
    return json.dumps(v, separators=(",", ":"))


class ChatBudgetTest(ServerTest):

    def compact(self, session, fmt, budget, exchanges=3, **extra):
        body = {"format": fmt, "budget": budget, "messages": HISTORIES[fmt](exchanges)}
        body.update(extra)
        return self.http.post("/v1/sessions/%s/messages/compact" % session, body)

    def ok(self, *args, **kw):
        r = self.compact(*args, **kw)
        self.assertEqual(r.status, 200, r.body)
        return r.json

    def assertNoSpills(self, session):
        """A 422 writes no spill (its log entry is the only write)."""
        self.assertEqual(self.http.get("/v1/sessions/%s/spills" % session).json["spills"], [])

    def assertNothingWritten(self, session):
        self.assertEqual(self.http.get("/v1/sessions/%s/spills" % session).json["spills"], [])
        self.assertEqual(self.http.get("/v1/sessions/%s/events" % session).json["events"], [])

    def test_default_tokenizer_and_basis_by_format(self):
        a = self.ok("basis-o", "openai", 10**6, dry_run=True)
        self.assertEqual(a["tokenizer"], "o200k_base")
        self.assertEqual(a["budget_basis"], {"tokenizer": "o200k_base", "exact": True, "upper_bound": True})
        a = self.ok("basis-a", "anthropic", 10**6, dry_run=True)
        self.assertEqual(a["tokenizer"], "bytes")
        self.assertEqual(a["budget_basis"], {"tokenizer": "bytes", "exact": False, "upper_bound": True})
        named = {("openai", "bytes"): (False, True), ("openai", "cl100k_base"): (False, False),
                 ("anthropic", "o200k_base"): (False, False)}
        for (fmt, tok), (exact, bound) in named.items():
            a = self.ok("basis-n", fmt, 10**6, dry_run=True, tokenizer=tok)
            self.assertEqual(a["budget_basis"], {"tokenizer": tok, "exact": exact, "upper_bound": bound},
                             (fmt, tok))

    def test_o200k_default_counts_fewer_than_bytes(self):
        o = self.ok("cnt-o", "openai", 10**6, dry_run=True)
        b = self.ok("cnt-b", "openai", 10**6, dry_run=True, tokenizer="bytes")
        self.assertLess(o["used_tokens"] * 2, b["used_tokens"])

    def test_tools_are_priced_as_their_json_plus_the_framing(self):
        for fmt, prompt in (("openai", 0), ("anthropic", ANTHROPIC_TOOL_PROMPT)):
            plain = self.ok("tools-0", fmt, 10**6, dry_run=True, tokenizer="bytes")
            a = self.ok("tools-1", fmt, 10**6, dry_run=True, tokenizer="bytes", tools=TOOLS[fmt])
            want = FRAME + len(compact_json(TOOLS[fmt])) + prompt
            self.assertEqual(a["tools_tokens"], want, fmt)
            self.assertEqual(plain["tools_tokens"], 0)
            self.assertEqual(a["used_tokens"], plain["used_tokens"] + want, fmt)
            self.assertEqual(a["required_budget"], plain["required_budget"] + want, fmt)
            # An empty list is still tools: Anthropic's prompt is added all the same.
            e = self.ok("tools-2", fmt, 10**6, dry_run=True, tokenizer="bytes", tools=[])
            self.assertEqual(e["tools_tokens"], FRAME + 2 + prompt, fmt)

    def test_reserve_tokens_take_room_never_used(self):
        for fmt in ("openai", "anthropic"):
            plain = self.ok("res-0", fmt, 10**6, dry_run=True)
            a = self.ok("res-1", fmt, 10**6, dry_run=True, reserve_tokens=500)
            self.assertEqual(a["reserve_tokens"], 500)
            self.assertEqual(a["used_tokens"], plain["used_tokens"])
            self.assertEqual(a["remaining_tokens"], 10**6 - a["used_tokens"] - 500)
            self.assertEqual(a["required_budget"], plain["required_budget"] + 500)
            need = self.ok("res-2", fmt, 10**6, dry_run=True, reserve_tokens=500,
                           tools=TOOLS[fmt])["required_budget"]
            at = self.ok("res-3", fmt, need, reserve_tokens=500, tools=TOOLS[fmt])
            self.assertLessEqual(at["used_tokens"] + 500, need)
            self.assertGreaterEqual(at["remaining_tokens"], 0)
            r = self.compact("res-4", fmt, need - 1, reserve_tokens=500, tools=TOOLS[fmt])
            err = self.assertError(r, 422, "CompactionFailure")
            self.assertEqual(err["required_budget"], need)
            self.assertNoSpills("res-4")

    def test_bad_tools_and_reserve_tokens(self):
        bad = [({"tools": {"name": "f"}}, "$.tools"), ({"tools": "f"}, "$.tools"),
               ({"tools": [OPENAI_TOOLS[0], 3]}, "$.tools[1]"), ({"tools": [None]}, "$.tools[0]"),
               ({"reserve_tokens": -1}, "$.reserve_tokens"), ({"reserve_tokens": "5"}, "$.reserve_tokens"),
               ({"reserve_tokens": 1.5}, "$.reserve_tokens"), ({"reserve_tokens": 2**31}, "$.reserve_tokens"),
               ({"reserve_tokens": None}, "$.reserve_tokens")]
        for fmt in ("openai", "anthropic"):
            for extra, path in bad:
                r = self.compact("bad-budget", fmt, 10**6, **extra)
                self.assertError(r, 400, "InvalidRequest", path)
        self.assertNothingWritten("bad-budget")

    def test_required_by_adds_up_and_is_tight(self):
        for fmt in ("openai", "anthropic"):
            for exchanges in (1, 3, 6):
                # read_file declared read-only, so that its exchanges may go.
                probe = self.ok("tight-p", fmt, 10**6, exchanges, dry_run=True, reserve_tokens=7,
                                tools=TOOLS[fmt], policy=READ_ONLY)
                need = probe["required_budget"]
                a = self.ok("tight-a", fmt, need, exchanges, reserve_tokens=7, tools=TOOLS[fmt],
                            policy=READ_ONLY)
                self.assertLessEqual(a["used_tokens"] + 7, need)
                r = self.compact("tight-b", fmt, need - 1, exchanges, reserve_tokens=7,
                                 tools=TOOLS[fmt], policy=READ_ONLY)
                err = self.assertError(r, 422, "CompactionFailure")
                self.assertEqual(err["required_budget"], need)
                by = err["required_by"]
                total = (by["system_tokens"] + by["tools_tokens"] + by["reserve_tokens"]
                         + by["marker_tokens"] + sum(m["tokens"] for m in by["messages"]))
                self.assertEqual(total, need, (fmt, exchanges, by))
                self.assertEqual(by["reserve_tokens"], 7)
                self.assertEqual(by["tools_tokens"], probe["tools_tokens"])
                # The dropped exchanges share one marker: none of them is kept.
                kept = {m["index"] for m in by["messages"]}
                self.assertEqual(kept, {0, 2 * exchanges + 1, 2 * exchanges + 2}, (fmt, exchanges))
                self.assertIn(err["index"], kept)
                self.assertNoSpills("tight-b")

    def test_the_refusal_names_its_largest_kind_and_its_advice_works(self):
        # read_file in no policy list: its six exchanges are protected (it
        # may have had side effects), and they fill most of what is needed.
        for fmt in ("openai", "anthropic"):
            with self.subTest(fmt=fmt):
                budget = self.ok("kinds-p", fmt, 10**6, 6, dry_run=True,
                                 policy=READ_ONLY)["required_budget"]
                r = self.compact("kinds-" + fmt, fmt, budget, 6)
                err = self.assertError(r, 422, "CompactionFailure")
                kinds = err["required_by"]["kinds"]
                self.assertEqual(sum(k["tokens"] for k in kinds), err["required_budget"], kinds)
                self.assertEqual([k["tokens"] for k in kinds],
                                 sorted((k["tokens"] for k in kinds), reverse=True))
                top = kinds[0]
                self.assertEqual(top["kind"], "tool calls and results", kinds)
                self.assertGreaterEqual(top["percent"], 50, kinds)
                self.assertEqual(top["percent"], top["tokens"] * 100 // err["required_budget"])
                self.assertIn("policy.read_only_tools", top["advice"])
                self.assertIn("%d%% of it is tool calls and results" % top["percent"],
                              err["message"])
                # Following the advice: the same history and budget fits.
                after = self.ok("kinds-" + fmt, fmt, budget, 6, policy=READ_ONLY)
                self.assertLessEqual(after["used_tokens"], budget)


if __name__ == "__main__":
    unittest.main()
