"""Narration beside read-only calls, against a real compactd and
redis-server: the coding transcript (transcript.mjs, responses_transcript.mjs),
where about half the assistant messages that call tools also say why ("Let
me check budget spill."), compacted in the three formats with its reads
declared read-only and run_tests left undeclared (side effects), from a
generous budget down to required_budget. At the tighter budgets read-only
outputs are dropped while their narration stays: the narration is in the
answer (verbatim, or behind a pointer that reads it back), without its calls
where they went (calls_dropped), and a loss marker offers those calls as the
way back. A side-effecting exchange is never split: every call of one is in
the answer with its result. Every answer is checked against the providers'
rules: check.mjs and responses_check.mjs (a structural validator, the exact
o200k_base count, tsc against the openai and @anthropic-ai/sdk types)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402
from node_check import run_node_check  # noqa: E402

NODE = os.environ.get("NODE", "node")
READS = {"read_file", "grep"}
POLICY = {"read_only_tools": sorted(READS), "redundant_tools": ["list_dir"],
          "protect_tools": ["apply_migration"]}
SIDE_EFFECTS = {"run_tests", "apply_migration"}
# An agent loop's: every read declared (bench/cache/cache_loop.mjs).
LOOP_POLICY = dict(POLICY, read_only_tools=sorted(READS | {"run_tests"}))
STEPS = 4  # budgets between the history whole and required_budget
MARKER_OPEN = "[compactd: message"


def transcripts():
    with tempfile.TemporaryDirectory() as d:
        for script in ("transcript.mjs", "responses_transcript.mjs"):
            subprocess.run([NODE, os.path.join(HERE, script), d], check=True)
        out = {}
        for name, fmt in (("openai", "openai"), ("anthropic", "anthropic"),
                          ("responses", "openai-responses")):
            with open(os.path.join(d, name + ".json")) as fh:
                out[fmt] = json.load(fh)
        return out


def items_of(fmt, history):
    return history["input"] if fmt == "openai-responses" else history["messages"]


def calls_of(fmt, m):
    """(id, tool, arguments) of each call message m makes."""
    if fmt == "openai":
        return [(c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in m.get("tool_calls") or []]
    if fmt == "anthropic":
        return [(b["id"], b["name"], json.dumps(b["input"], separators=(",", ":")))
                for b in m["content"] if b["type"] == "tool_use"] if isinstance(m["content"], list) else []
    return [(m["call_id"], m["name"], m["arguments"])] if m.get("type") == "function_call" else []


def answers_of(fmt, m):
    if fmt == "openai":
        return [m["tool_call_id"]] if m["role"] == "tool" else []
    if fmt == "anthropic":
        return [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"] \
            if isinstance(m["content"], list) else []
    return [m["call_id"]] if m.get("type") == "function_call_output" else []


def prose_of(fmt, m):
    """The assistant prose message m states beside or before its calls."""
    if fmt == "openai":
        return m.get("content") if m["role"] == "assistant" and isinstance(m.get("content"), str) else None
    if fmt == "anthropic":
        if m["role"] != "assistant" or not isinstance(m["content"], list):
            return None
        text = [b["text"] for b in m["content"] if b["type"] == "text"]
        return text[0] if text else None
    if m.get("type") == "message" and m.get("role") == "assistant":
        return m["content"][0]["text"]
    return None


def narration(fmt, items):
    """{index of narration: [(call id, tool, arguments)]}: assistant prose
    that calls tools (openai, anthropic), or a Responses message item of a
    response that does (its calls are the response's function_call items)."""
    out = {}
    for i, m in enumerate(items):
        if prose_of(fmt, m) is None:
            continue
        if fmt != "openai-responses":
            if calls_of(fmt, m):
                out[i] = calls_of(fmt, m)
            continue
        calls, j = [], i + 1
        while j < len(items) and items[j].get("type") == "function_call":
            calls += calls_of(fmt, items[j])
            j += 1
        if calls:
            out[i] = calls
    return out


def led_by_reasoning(items, i):
    """Whether Responses narration i follows reasoning of the turn in
    flight (no user message after it): the reasoning that led to it."""
    if i == 0 or items[i - 1].get("type") != "reasoning":
        return False
    return not any(m.get("role") == "user" and m.get("type", "message") == "message"
                   for m in items[i:])


def one_text(item):
    """Whether a Responses message holds one text (a string, or one
    output_text or refusal part): it renders the same without its id."""
    c = item.get("content")
    return isinstance(c, str) or (isinstance(c, list) and len(c) == 1 and
                                  c[0].get("type") in ("output_text", "refusal"))


def texts(v):
    """Every string in v, deeply."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [t for x in v for t in texts(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in texts(x)]
    return []


class NarrationTest(ServerTest):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.histories = transcripts()
        # The Responses loop in flight: up to its last user message, so
        # that the reasoning before each narration is the turn's own.
        h = dict(cls.histories["openai-responses"])
        last_user = max(i for i, m in enumerate(h["input"]) if m.get("role") == "user")
        h["input"] = h["input"][:last_user]
        cls.histories["in-flight"] = h

    def compact(self, session, fmt, budget, history=None, **extra):
        h = self.histories[history or fmt]
        body = {"format": fmt, "budget": budget, "tokenizer": "o200k_base", "policy": POLICY,
                "compact_to": budget, "messages": items_of(fmt, h)}
        if fmt == "openai-responses":
            body["instructions"] = h["instructions"]
        elif "system" in h:
            body["system"] = h["system"]
        body.update(extra)
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        r = self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)
        self.assertEqual(r.status, 200, r.body[:400])
        return r.json

    def spills(self, answer):
        return {d["key"]: self.http.get(d["href"]).json["text"]
                for d in answer["decisions"] if d["decision"] == "externalized"}

    def check_answer(self, fmt, answer, where, history=None):
        """Narration kept; read-only outputs beside it dropped with their
        hints; side-effecting exchanges whole. Returns how many narrated
        exchanges lost their results, how many of them after the reasoning
        of the turn in flight that led to the narration (which went with
        the results where the narration holds one text), and the
        spills."""
        items = items_of(fmt, self.histories[history or fmt])
        out = answer["messages"]
        dec = answer["decisions"]
        out_texts = [t for m in out for t in texts(m)]
        markers = [t for t in out_texts if t.startswith(MARKER_OPEN)]
        spills = self.spills(answer)
        split = led = 0
        for i, calls in narration(fmt, items).items():
            d = dec[i]
            reads = all(tool in READS for _, tool, _ in calls)
            if not reads or len(items) - i <= 2:
                continue
            self.assertEqual(d["class"], "protected", "%s: narration %d" % (where, i))
            self.assertIn(d["decision"], ("preserved", "externalized"), "%s: narration %d" % (where, i))
            prose = prose_of(fmt, items[i])
            if d["decision"] == "preserved":
                self.assertIn(prose, out_texts, "%s: the prose of %d" % (where, i))
            else:
                self.assertIn(prose, spills[d["key"]], "%s: the spill of %d" % (where, i))
            results = [j for j in range(i + 1, len(items))
                       if set(answers_of(fmt, items[j])) & {c for c, _, _ in calls}]
            gone = all(dec[j]["decision"] == "dropped" for j in results)
            if fmt != "openai-responses":
                self.assertEqual(d.get("calls_dropped"), len(calls) if gone else None,
                                 "%s: narration %d" % (where, i))
            if gone and dec[results[0]]["reason"] == "over_budget":
                split += 1
                if fmt == "openai-responses" and led_by_reasoning(items, i):
                    led += 1
                    if one_text(items[i]):
                        # The reasoning went with the read it led to, and the
                        # narration stays without its id.
                        self.assertEqual(dec[i - 1]["decision"], "dropped", "%s: reasoning %d" % (where, i - 1))
                        self.assertFalse(any(m.get("id") == items[i]["id"] for m in out),
                                         "%s: narration %d keeps its id" % (where, i))
                    else:
                        # Two texts would not render the same without it: the
                        # reasoning stays before the item it led to.
                        self.assertNotEqual(dec[i - 1]["decision"], "dropped", "%s: reasoning %d" % (where, i - 1))
                for _, tool, args in calls:
                    hint = "%s %s" % (tool, args)
                    self.assertTrue(any(hint in t for t in markers), "%s: no marker offers %s" % (where, hint))
        # A side-effecting exchange stays whole: each of its calls is made
        # and answered in the answer (verbatim or behind a pointer, which
        # keeps ids).
        made = {c for m in out for c, _, _ in calls_of(fmt, m)}
        answered = {a for m in out for a in answers_of(fmt, m)}
        for m in items:
            for cid, tool, _ in calls_of(fmt, m):
                if tool in SIDE_EFFECTS:
                    self.assertIn(cid, made, "%s: %s dropped" % (where, cid))
                    self.assertIn(cid, answered, "%s: the result of %s dropped" % (where, cid))
        return split, led, spills

    def sweep(self, fmt, history=None):
        key = history or fmt
        probe = self.compact("narr-%s-probe" % key, fmt, 10**7, history, dry_run=True)
        full, required = probe["used_tokens"], probe["required_budget"]
        budgets = [full] + [required + (full - required) * k // STEPS for k in range(STEPS - 1, 0, -1)] + [required]
        cases, split, led = [], 0, 0
        for n, budget in enumerate(budgets):
            session = "narr-%s-%d" % (key, n)
            a = self.compact(session, fmt, budget, history)
            self.assertLessEqual(a["used_tokens"], budget)
            s, ld, spills = self.check_answer(fmt, a, "%s at %d" % (key, budget), history)
            split += s
            led += ld
            h = self.histories[key]
            if fmt == "openai-responses":
                cases.append({"name": "narration %d" % budget, "input": h, "answer": a,
                              "spills": {"msg%d" % d["index"]: spills[d["key"]]
                                         for d in a["decisions"] if d["decision"] == "externalized"}})
            else:
                cases.append({"name": "%s narration %d" % (fmt, budget), "format": fmt, "input": h,
                              "answer": a, "spills": spills})
        # Read-only outputs went while the narration beside them stayed.
        self.assertGreater(split, 5, "%s: no narrated read lost its output" % fmt)
        if history == "in-flight":
            # Also where the turn in flight's reasoning led to the narration.
            self.assertGreater(led, 5, "no narration after in-flight reasoning lost its read")
        run_node_check(self, "responses_check.mjs" if fmt == "openai-responses" else "check.mjs", cases)

    def test_openai(self):
        self.sweep("openai")

    def test_anthropic(self):
        self.sweep("anthropic")

    def test_responses(self):
        self.sweep("openai-responses")

    def test_responses_in_flight(self):
        self.sweep("openai-responses", "in-flight")

    def test_responses_loop_turn_over_turn(self):
        """The Responses transcript as an agent loop sends it: the history
        compacted before every model call, in one session (sticky plans
        extended, recompacted, read anew as turns finish), its reads and
        run_tests declared read-only as bench/cache declares them, at 12,000
        and 6,000 tokens. Every call is answered within the budget, none
        refused (the narrated reads' reasoning goes with them), and every
        answer passes responses_check.mjs: narration
        whose reasoning went with its read is sent without its id, and so
        is a finished turn's message."""
        h = self.histories["openai-responses"]
        items = h["input"]
        ends, open_calls = [], set()
        for i, m in enumerate(items):
            if m.get("type") == "function_call_output":
                open_calls.discard(m["call_id"])
            if m.get("type") == "function_call":
                open_calls.add(m["call_id"])
            if i >= 22 and not open_calls and m.get("type") != "reasoning":
                ends.append(i + 1)
        cases, plans, unlinked = [], {}, 0
        for budget in (12000, 6000):
            session = "narr-loop-%d" % budget
            for end in ends:
                body = {"format": "openai-responses", "budget": budget, "tokenizer": "o200k_base",
                        "policy": LOOP_POLICY, "instructions": h["instructions"],
                        "messages": items[:end]}
                data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
                r = self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)
                where = "%d items at %d" % (end, budget)
                self.assertEqual(r.status, 200, "%s: %s" % (where, r.body[:300]))
                a = r.json
                self.assertLessEqual(a["used_tokens"], budget, where)
                plans[a["plan"]] = plans.get(a["plan"], 0) + 1
                ids = {m.get("id") for m in a["messages"]}
                unlinked += sum(1 for m in items[:end] if m.get("type") == "message"
                                and m.get("role") == "assistant" and m.get("id") and m["id"] not in ids)
                cases.append({"name": "loop %s" % where, "answer": a,
                              "input": dict(h, input=items[:end]),
                              "spills": {"msg%d" % d["index"]: self.http.get(d["href"]).json["text"]
                                         for d in a["decisions"] if d["decision"] == "externalized"}})
        self.assertGreater(len(ends), 40)
        self.assertGreater(plans.get("extended", 0), len(ends) // 2, plans)
        self.assertGreater(plans.get("recompacted", 0), 0, plans)
        self.assertGreater(unlinked, 0, "no message went without its id")
        run_node_check(self, "responses_check.mjs", cases)


if __name__ == "__main__":
    unittest.main()
