"""The SDKs' own histories through POST /v1/sessions/{s}/messages/compact
against a real compactd and redis-server: OpenAI ChatCompletion messages and
Anthropic responses with thinking and tool_use pushed back as is, and
LangChain's converters' output, compacted at several budgets and checked by
sdk_check.mjs (pairing, byte-identical pass-through and thinking, tsc
against the SDK types); random unknown fields in every message and block
kept byte for byte; thinking edited or moved refused with its path, nothing
written."""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402
from node_check import run_node_check  # noqa: E402

NODE = os.environ.get("NODE", "node")
POLICY = {"keep_last": 0}


def sdk_histories():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "h.json")
        subprocess.run([NODE, os.path.join(HERE, "sdk_histories.mjs"), path], check=True, cwd=HERE)
        with open(path) as f:
            return json.load(f)


def compact_json(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


class SdkBase(ServerTest):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.histories = sdk_histories()

    def post(self, session, h, budget, **extra):
        body = {"format": h["format"], "budget": budget, "tokenizer": "bytes",
                "messages": h["messages"], "policy": POLICY}
        if h.get("system") is not None:
            body["system"] = h["system"]
        body.update(extra)
        return self.http.post("/v1/sessions/%s/messages/compact" % session,
                              compact_json(body).encode(), raw=True)

    def spills_of(self, answer):
        out = {}
        for d in answer["decisions"]:
            if d["decision"] == "externalized":
                r = self.http.get(d["href"])
                self.assertEqual(r.status, 200, r.body)
                out[d["key"]] = r.json["text"]
        return out

    def budgets(self, session, h, **extra):
        probe = self.post(session, h, 10**7, dry_run=True, **extra)
        self.assertEqual(probe.status, 200, probe.body)
        full, req = probe.json["used_tokens"], probe.json["required_budget"]
        self.assertLess(req, full, "%s must be compressible" % h["name"])
        return [10**7, (full + req) // 2, req + (full - req) // 8, req]


class SdkHistoriesTest(SdkBase):

    def test_sdk_histories_pass_the_clients_at_every_budget(self):
        cases = []
        for n, h in enumerate(self.histories):
            for tok in ("bytes", "o200k_base"):
                for b, budget in enumerate(self.budgets("sdk%d-%s" % (n, tok), h, tokenizer=tok)):
                    session = "sdk%d-%s-%d" % (n, tok, b)
                    r = self.post(session, h, budget, tokenizer=tok)
                    self.assertEqual(r.status, 200, r.body)
                    a = r.json
                    self.assertLessEqual(a["used_tokens"], budget)
                    cases.append({"name": "%s (%s)" % (h["name"], tok), "history": h, "answer": a,
                                  "spills": self.spills_of(a)})
            # The tightest budget compacts: something is not preserved.
            self.assertTrue(any(d["decision"] != "preserved" for d in cases[-1]["answer"]["decisions"]))
        p = run_node_check(self, "sdk_check.mjs", cases)

    def test_thinking_of_the_loop_in_flight_is_kept_at_the_tightest_budget(self):
        h = next(h for h in self.histories if h["name"].startswith("Anthropic"))
        budget = self.budgets("think-probe", h)[-1]
        a = self.post("think", h, budget).json
        last = len(h["messages"]) - 2  # the assistant turn the last tool results answer
        self.assertEqual(a["decisions"][last]["decision"], "preserved")
        self.assertEqual(a["decisions"][last]["class"], "protected")
        self.assertIn(compact_json(h["messages"][last]), [compact_json(m) for m in a["messages"]])
        # Earlier turns' thinking is not needed back: some of it went.
        self.assertTrue(any(d["decision"] != "preserved" for d in a["decisions"][:last]))


# ---- Random unknown fields ----

KNOWN = {"role", "content", "name", "refusal", "tool_call_id", "tool_calls", "type", "text", "id",
         "function", "arguments", "input", "tool_use_id", "is_error", "source", "thinking",
         "signature", "data", "image_url", "cache_control", "citations", "title", "context"}


def random_value(rng, depth=0):
    k = rng.randrange(8 if depth < 2 else 5)
    if k == 0:
        return None
    if k == 1:
        return rng.random() < 0.5
    if k == 2:
        return rng.randint(-10**12, 10**12)
    if k == 3:
        return "".join(rng.choice("aZ9 _-\"\\/\u00e9\u65e5\U0001F600\n\t") for _ in range(rng.randint(0, 12)))
    if k == 4:
        return rng.choice(["", "x", "null", "[]"])
    if k == 5:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {random_name(rng): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def random_name(rng):
    while True:
        name = "x_" + "".join(rng.choice("abcdefghij_") for _ in range(rng.randint(1, 8)))
        if name not in KNOWN:
            return name


def plant(rng, obj):
    """Adds 1 to 3 unknown members to obj, at random places among its own."""
    items = list(obj.items())
    for _ in range(rng.randint(1, 3)):
        items.insert(rng.randint(0, len(items)), (random_name(rng), random_value(rng)))
    obj.clear()
    obj.update(items)


def planted(rng, h):
    h = json.loads(json.dumps(h))
    for m in h["messages"]:
        for c in m.get("tool_calls") or []:
            plant(rng, c)
            plant(rng, c["function"])
        if isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") in ("thinking", "redacted_thinking"):
                    continue  # opaque and whole: not compactd's to read
                if isinstance(b.get("content"), list):
                    for inner in b["content"]:
                        plant(rng, inner)
                plant(rng, b)
        plant(rng, m)
    return h


class UnknownFieldsTest(SdkBase):

    def test_unknown_fields_come_back_byte_identical(self):
        rng = random.Random(20261202)
        checked = 0
        for n, base in enumerate(self.histories):
            for trial in range(3):
                h = planted(rng, base)
                sent = [compact_json(m) for m in h["messages"]]
                for b, budget in enumerate(self.budgets("pf%d-%d" % (n, trial), h)):
                    r = self.post("pf%d-%d-%d" % (n, trial, b), h, budget)
                    self.assertEqual(r.status, 200, r.body)
                    out = [compact_json(m) for m in r.json["messages"]]
                    spills = self.spills_of(r.json)
                    for d in r.json["decisions"]:
                        if d.get("thinking_dropped"):
                            # A finished turn, less the thinking the API strips.
                            m = dict(h["messages"][d["index"]])
                            m["content"] = m["content"][d["thinking_dropped"]:]
                            sent[d["index"]] = compact_json(m)
                        if d["decision"] == "preserved" and not (
                                h["format"] == "anthropic" and h["messages"][d["index"]]["role"] == "user"):
                            self.assertIn(sent[d["index"]], out, "message %d" % d["index"])
                            checked += 1
                        elif d["decision"] == "externalized":
                            # The spill is the message's bytes as sent.
                            self.assertEqual(spills[d["key"]], sent[d["index"]])
                            checked += 1
        self.assertGreater(checked, 200)

    def test_unknown_fields_are_priced(self):
        h = self.histories[0]
        plain = self.post("price0", h, 10**7, dry_run=True).json
        more = json.loads(json.dumps(h))
        more["messages"][1]["x_extra"] = {"note": "a" * 100}
        planted_answer = self.post("price1", more, 10**7, dry_run=True).json
        # "x_extra":{"note":"aaa..."} is 121 bytes, priced with its message.
        self.assertEqual(planted_answer["decisions"][1]["tokens"] - plain["decisions"][1]["tokens"],
                         len(compact_json({"x_extra": {"note": "a" * 100}})) - 2)


# ---- Bad input ----

USER = {"role": "user", "content": "Fix it."}
THINK = {"type": "thinking", "thinking": "Read the file first.", "signature": "c2ln"}
USE = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.c"}}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}


class BadThinkingTest(ServerTest):

    def refuse(self, messages, path):
        body = {"format": "anthropic", "budget": 10**6, "messages": messages}
        r = self.http.post("/v1/sessions/badthink/messages/compact", body)
        self.assertError(r, 400, "InvalidRequest", path)
        self.assertEqual(self.http.get("/v1/sessions/badthink/spills").json["spills"], [])
        self.assertEqual(self.http.get("/v1/sessions/badthink/events").json["events"], [])

    def test_the_valid_history_is_taken(self):
        r = self.http.post("/v1/sessions/goodthink/messages/compact", {
            "format": "anthropic", "budget": 10**6,
            "messages": [USER, {"role": "assistant", "content": [THINK, USE]}, RESULT]})
        self.assertEqual(r.status, 200, r.body)

    def test_a_thinking_block_edited(self):
        edited = dict(THINK)
        del edited["signature"]
        self.refuse([USER, {"role": "assistant", "content": [edited, USE]}, RESULT],
                    "$.messages[1].content[0].signature")
        self.refuse([USER, {"role": "assistant", "content": [dict(THINK, signature=""), USE]}, RESULT],
                    "$.messages[1].content[0].signature")
        self.refuse([USER, {"role": "assistant", "content": [dict(THINK, thinking=["x"]), USE]}, RESULT],
                    "$.messages[1].content[0].thinking")
        self.refuse([USER, {"role": "assistant", "content": [{"type": "redacted_thinking"}, USE]}, RESULT],
                    "$.messages[1].content[0].data")

    def test_a_thinking_block_moved(self):
        self.refuse([USER, {"role": "assistant", "content": [USE, THINK]}, RESULT],
                    "$.messages[1].content[1]")
        self.refuse([{"role": "user", "content": [THINK, {"type": "text", "text": "x"}]}],
                    "$.messages[0].content[0].type")
        self.refuse([USER, {"role": "assistant", "content": [USE]},
                     {"role": "user", "content": [RESULT["content"][0], THINK]}],
                    "$.messages[2].content[1].type")

    def test_the_providers_structure_still_holds(self):
        # An orphaned result, a call without its result, broken alternation.
        self.refuse([USER, {"role": "assistant", "content": [THINK, {"type": "text", "text": "t"}]},
                     RESULT], "$.messages[2].content[0].tool_use_id")
        self.refuse([USER, {"role": "assistant", "content": [THINK, USE]}, USER],
                    "$.messages[1].content[1].id")
        self.refuse([USER, {"role": "assistant", "content": [THINK, USE]},
                     {"role": "assistant", "content": "x"}], "$.messages[2].role")


if __name__ == "__main__":
    unittest.main()
