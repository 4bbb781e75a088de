"""POST /v1/sessions/{session}/messages/compact against a real compactd and
redis-server: a generated tool-using transcript in both formats compacted at
budgets from generous down to required_budget, every answer checked by the
providers' own clients (check.mjs); bad histories refused with their path and
nothing written."""

import copy
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
POLICY = {"protect_tools": ["apply_migration"], "redundant_tools": ["list_dir"],
          "read_only_tools": ["read_file", "grep"]}
BUDGET_STEPS = 7


def transcripts(*args):
    """The generator's two histories (fixed seed; args: its steps, seed, outputs)."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([NODE, os.path.join(HERE, "transcript.mjs"), d, *args], check=True)
        out = {}
        for f in ("openai", "anthropic"):
            with open(os.path.join(d, f + ".json")) as fh:
                out[f] = json.load(fh)
        return out


class MessagesBase(ServerTest):
    """The generated histories and the requests made of them."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.histories = transcripts()

    def compact(self, session, body):
        # Compact JSON, as JSON.stringify writes it: a spill holds each
        # message's bytes as sent, which check.mjs compares with it.
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)

    def body(self, fmt, budget, **extra):
        h = self.histories[fmt]
        b = {"format": fmt, "budget": budget, "messages": h["messages"], "policy": POLICY}
        if "system" in h:
            b["system"] = h["system"]
        b.update(extra)
        return b

    def spills_of(self, session, answer):
        out = {}
        for d in answer["decisions"]:
            if d["decision"] == "externalized":
                r = self.http.get(d["href"])
                self.assertEqual(r.status, 200, r.body)
                out[d["key"]] = r.json["text"]
        return out


class MessagesTest(MessagesBase):

    def sweep(self, fmt, **extra):
        """Cases from a generous budget down to required_budget."""
        h = self.histories[fmt]
        self.assertGreaterEqual(len(h["messages"]), 80)
        first = self.compact("%s-probe" % fmt, self.body(fmt, 10**7, dry_run=True, **extra))
        self.assertEqual(first.status, 200, first.body)
        full = first.json["used_tokens"]
        required = first.json["required_budget"]
        self.assertLess(required, full, "the transcript must be compressible")
        budgets = [10**7, full] + [required + (full - required) * k // BUDGET_STEPS
                                   for k in range(BUDGET_STEPS - 1, 0, -1)] + [required]
        cases = []
        for n, budget in enumerate(budgets):
            session = "%s-%d%s" % (fmt, n, "-".join(sorted(extra)))
            r = self.compact(session, self.body(fmt, budget, **extra))
            self.assertEqual(r.status, 200, r.body)
            a = r.json
            self.assertEqual(a["required_budget"], required)
            self.assertLessEqual(a["used_tokens"], budget)
            cases.append({"name": "%s budget %d %s" % (fmt, budget, extra), "format": fmt,
                          "input": h, "answer": a, "spills": self.spills_of(session, a)})
        # One token less than required: refused, and nothing written.
        session = "%s-below" % fmt
        r = self.compact(session, self.body(fmt, required - 1, **extra))
        err = self.assertError(r, 422, "CompactionFailure")
        self.assertEqual(err["required_budget"], required)
        self.assertEqual(self.http.get("/v1/sessions/%s/spills" % session).json["spills"], [])
        # The tightest budget must actually compact: drop, externalize or summarize.
        tight = cases[-1]["answer"]["decisions"]
        self.assertTrue(any(d["decision"] != "preserved" for d in tight))
        return cases

    def run_clients(self, cases):
        p = run_node_check(self, "check.mjs", cases)

    def test_openai_sweep_passes_the_clients(self):
        self.run_clients(self.sweep("openai") + self.sweep("openai", mode="discovery"))

    def test_anthropic_sweep_passes_the_clients(self):
        self.run_clients(self.sweep("anthropic") + self.sweep("anthropic", mode="discovery"))

    def test_o200k_sweeps_count_exactly(self):
        # check.mjs then holds used_tokens to gpt-tokenizer's exact count.
        probe = self.compact("o200k-probe", self.body("openai", 10**7, dry_run=True,
                                                      tokenizer="o200k_base"))
        self.assertEqual(probe.status, 200, probe.body)
        self.run_clients(self.sweep("openai", tokenizer="o200k_base") +
                         self.sweep("anthropic", tokenizer="o200k_base"))

    def test_protected_tool_exchange_stays_whole(self):
        a = self.compact("mig", self.body("openai", 10**7, dry_run=True)).json
        msgs = self.histories["openai"]["messages"]
        call = next(i for i, m in enumerate(msgs)
                    if any(c["function"]["name"] == "apply_migration" for c in m.get("tool_calls", [])))
        self.assertEqual(a["decisions"][call]["class"], "protected")
        self.assertEqual(a["decisions"][call + 1]["class"], "protected")

    def test_superseded_and_redundant_tools_are_redundant(self):
        a = self.compact("red", self.body("openai", 10**7, dry_run=True)).json
        msgs = self.histories["openai"]["messages"]
        redundant = 0
        for i, m in enumerate(msgs):
            names = [c["function"]["name"] for c in m.get("tool_calls", [])]
            if names and all(n == "list_dir" for n in names) and i < len(msgs) - 2:
                redundant += not m.get("content")
                # Assistant prose beside the call is protected, and with it the exchange.
                want = "protected" if m.get("content") else "redundant"
                self.assertEqual(a["decisions"][i]["class"], want, i)
                if not m.get("content"):
                    self.assertEqual(a["decisions"][i]["decision"], "dropped")
        self.assertGreater(redundant, 0)
        # Without the policy every tool has side effects: nothing is dropped.
        b = self.body("openai", 10**7, dry_run=True)
        del b["policy"]
        a = self.compact("red2", b).json
        self.assertTrue(all(d["decision"] != "dropped" or d["reason"] == "redundant"
                            for d in a["decisions"]))

    def test_summary_annotation_replaces_text(self):
        msgs = self.histories["openai"]["messages"]
        i = next(i for i, m in enumerate(msgs) if m["role"] == "assistant" and not m.get("tool_calls")
                 and i < len(msgs) - 2)
        body = self.body("openai", 10**7, dry_run=True,
                         annotations=[{"index": i, "priority": -1, "class": "derivable",
                                       "summary": {"text": "status noted"}}])
        full = self.compact("sum", body).json
        # One token short of the whole history, planned down to that budget
        # only (the low-water mark would drop more than the summary saves).
        body["budget"] = body["compact_to"] = full["used_tokens"] - 1
        a = self.compact("sum", body).json
        self.assertEqual(a["decisions"][i]["decision"], "summarized", a["decisions"][i])
        self.assertIn({"role": "assistant", "content": "status noted"}, a["messages"])


class SameValueSameBytesTest(ServerTest):
    """A message is its compact JSON however the client wrote it: the same
    value gets the same spill and pointer."""

    MSGS = [{"role": "user", "content": "keep \u00e9 \"this\" \u0001"},
            {"role": "assistant", "content": "x" * 400 + " 1.5e3"},
            {"role": "user", "content": "ok"}]

    def externalized(self, session, messages_json):
        data = ('{"format": "openai", "budget": 200, "tokenizer": "bytes", "messages": %s, '
                '"annotations": [{"index": 1, "class": "protected"}]}' % messages_json).encode()
        r = self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)
        self.assertEqual(r.status, 200, r.body)
        d = r.json["decisions"][1]
        self.assertEqual(d["decision"], "externalized")
        return r, d, self.http.get(d["href"]).json["text"]

    def test_pretty_escaped_and_compact_bodies_agree(self):
        compact = json.dumps(self.MSGS, separators=(",", ":"), ensure_ascii=False)
        forms = [compact,                                   # the writer's own form: used as sent
                 json.dumps(self.MSGS, indent=3),           # whitespace, \u escapes
                 json.dumps(self.MSGS, separators=(",", ":"))]  # \u escapes only
        got = [self.externalized("same%d" % k, f) for k, f in enumerate(forms)]
        for r, d, text in got:
            self.assertEqual(d["sha256"], got[0][1]["sha256"])
            self.assertEqual(json.loads(text), self.MSGS[1])
            self.assertEqual(r.json["messages"][0], self.MSGS[0])
        # jansson's compact form: what JSON.stringify writes, but for the
        # hex case of control-character escapes.
        self.assertEqual(got[0][2], json.dumps(self.MSGS[1], separators=(",", ":"), ensure_ascii=False))

    def test_escaped_member_name_still_decodes(self):
        data = ('{"format": "openai", "budget": 200, "tokenizer": "bytes", "messag\\u0065s": %s, '
                '"annotations": [{"index": 1, "class": "protected"}]}' % json.dumps(self.MSGS)).encode()
        r = self.http.post("/v1/sessions/same9/messages/compact", data, raw=True)
        self.assertEqual(r.json["decisions"][1]["decision"], "externalized")


class MessagesVerifyTest(MessagesBase):
    """POST /v1/sessions/{session}/messages/verify."""

    def verify(self, session, body):
        return self.http.post("/v1/sessions/%s/messages/verify" % session, body)

    def test_units_found_in_texts_not_in_json(self):
        msgs = [{"role": "system", "content": "Never push to main."},
                {"role": "user", "content": "Fix \"it\"\nnow"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "write_file", "arguments": json.dumps({"text": "a\nb"})}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
        units = [{"key": "rule", "class": "protected", "tokens": 5, "text": "Never push to main."},
                 {"key": "quoted", "class": "protected", "tokens": 5, "text": "Fix \"it\"\nnow"},
                 {"key": "written", "class": "protected", "tokens": 5, "text": "a\nb"},
                 # Across two texts, and in escaped form: neither is there.
                 {"key": "across", "class": "protected", "tokens": 5, "text": "main.Fix"},
                 {"key": "escaped", "class": "protected", "tokens": 5, "text": "Fix \\\"it"}]
        r = self.verify("mv1", {"format": "openai", "messages": msgs, "units": units})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual([p["key"] for p in r.json["present"]], ["rule", "quoted", "written"])
        self.assertEqual([m["key"] for m in r.json["missing"]], ["across", "escaped"])

    def test_pointers_of_a_compaction_and_where_a_repair_goes(self):
        body = self.body("anthropic", 0, dry_run=False)
        # The tail's large tool results become protected: some must be spilled.
        body["policy"] = dict(POLICY, keep_last=20)
        body["budget"] = self.compact("mv2", dict(body, dry_run=True, budget=10**7)).json["required_budget"]
        a = self.compact("mv2", body).json
        ext = [d for d in a["decisions"] if d["class"] == "protected" and d["decision"] == "externalized"]
        self.assertTrue(ext, "the tightest budget externalizes protected messages")
        units = [{"key": d["key"], "class": "protected", "tokens": 10,
                  "text": self.http.get(d["href"]).json["text"]} for d in ext]
        units.append({"key": "lost", "class": "protected", "tokens": 10, "text": "migration 0043 applied"})
        r = self.verify("mv2", {"format": "anthropic", "messages": a["messages"], "system": a["system"],
                                "units": units, "budget": 10**6, "context_tokens": a["used_tokens"],
                                "dry_run": True})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual([p["as"] for p in r.json["present"]], ["pointer"] * len(ext))
        self.assertEqual([m["key"] for m in r.json["missing"]], ["lost"])
        into = r.json["repair_into"]
        self.assertEqual(a["messages"][into["message"]]["role"], "user")
        self.assertEqual(into["message"], max(i for i, m in enumerate(a["messages"]) if m["role"] == "user"))
        # In another session the same pointers resolve to nothing.
        r = self.verify("mv3", {"format": "anthropic", "messages": a["messages"], "units": units[:1]})
        self.assertEqual(r.json["verdict"], "silent_truncation")

    def test_bad_history_is_refused(self):
        r = self.verify("mv4", {"format": "anthropic", "units": [],
                                "messages": [{"role": "assistant", "content": "x"}]})
        self.assertError(r, 400, "InvalidRequest", "$.messages[0].role")

    def test_only_what_the_model_reads_as_text_counts(self):
        secret = "rotate the key on Friday"
        b64 = "cm90YXRlIHRoZSBrZXkgb24gRnJpZGF5"
        unit = [{"key": "fact", "class": "protected", "tokens": 5, "text": secret}]
        openai = [
            {"role": "user", "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "https://x.example/" + secret}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": secret, "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": secret, "content": "done"}]
        anthropic = [
            {"role": "user", "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": secret}},
                {"type": "image", "source": {"type": "url", "url": "https://x.example/" + secret}}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": [{"type": "image", "source": {
                                              "type": "base64", "media_type": "image/png",
                                              "data": b64}}]}]}]
        for fmt, msgs in (("openai", openai), ("anthropic", anthropic)):
            r = self.verify("mv5", {"format": fmt, "messages": msgs, "units": unit})
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual([m["key"] for m in r.json["missing"]], ["fact"], fmt)
        # The same fact in a text, a tool result or an argument is found.
        said = [
            ("openai", [{"role": "user", "content": "note: " + secret}]),
            ("openai", openai[:2] + [{"role": "tool", "tool_call_id": secret, "content": secret}]),
            ("anthropic", anthropic[:1] + [{"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"what": secret}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}]),
            # A plain-text document is read as text; so is a content one.
            ("anthropic", [{"role": "user", "content": [{"type": "document", "source": {
                "type": "text", "media_type": "text/plain", "data": "memo: " + secret}}]}]),
            ("anthropic", [{"role": "user", "content": [{"type": "document", "source": {
                "type": "content", "content": [{"type": "text", "text": secret}]}}]}]),
        ]
        for fmt, msgs in said:
            r = self.verify("mv5", {"format": fmt, "messages": msgs, "units": unit})
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual([p["key"] for p in r.json["present"]], ["fact"], msgs)


class RefusingTest(ServerTest):
    """Histories a provider would refuse: 400 with the path, nothing written."""

    def refuse(self, body, path):
        r = self.http.post("/v1/sessions/bad/messages/compact", body)
        self.assertError(r, 400, "InvalidRequest", path)
        self.assertEqual(self.http.get("/v1/sessions/bad/spills").json["spills"], [])
        self.assertEqual(self.http.get("/v1/sessions/bad/events").json["events"], [])

    def openai(self, messages):
        return {"format": "openai", "budget": 10, "messages": messages}

    def anthropic(self, messages):
        return {"format": "anthropic", "budget": 10, "messages": messages}


class BadHistoryTest(RefusingTest):
    """Histories that break the rules of turns and calls."""

    CALL = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}

    def test_orphaned_result(self):
        self.refuse(self.openai([{"role": "user", "content": "x"},
                                 {"role": "tool", "tool_call_id": "c9", "content": "r"}]),
                    "$.messages[1].tool_call_id")
        self.refuse(self.anthropic([
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"},
                                         {"type": "tool_result", "tool_use_id": "t2"}]}]),
            "$.messages[2].content[1].tool_use_id")

    def test_unanswered_call(self):
        self.refuse(self.openai([{"role": "user", "content": "x"}, self.CALL,
                                 {"role": "tool", "tool_call_id": "c1", "content": "r"},
                                 {"role": "user", "content": "y"}]),
                    "$.messages[1].tool_calls[1].id")
        self.refuse(self.anthropic([
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": [{"type": "text", "text": "t"},
                                              {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": "no result"}]),
            "$.messages[1].content[1].id")

    def test_anthropic_system_role_names_where_the_prompt_goes(self):
        r = self.http.post("/v1/sessions/bad/messages/compact", self.anthropic(
            [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "x"}]))
        self.assertError(r, 400, "InvalidRequest", "$.messages[0].role")
        self.assertIn('top-level \"system\"', r.json["error"]["message"])

    def test_wrong_alternation(self):
        self.refuse(self.anthropic([{"role": "user", "content": "x"}, {"role": "user", "content": "y"}]),
                    "$.messages[1].role")
        self.refuse(self.anthropic([{"role": "assistant", "content": "x"}]), "$.messages[0].role")

    def test_unknown_block_is_kept_whole(self):
        # Not bad input: a block or part of a type compactd does not know is
        # kept whole, its message protected, priced by its bytes; and a
        # member it does not know is kept as sent.
        video = {"type": "video", "url": "u"}
        for body, raw in ((self.anthropic([{"role": "user", "content": [video]}]), video),
                          (self.openai([{"role": "user", "content": [{"type": "video"}]}]),
                           {"type": "video"})):
            r = self.http.post("/v1/sessions/kept/messages/compact",
                               dict(body, budget=1000, tokenizer="bytes"))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json["messages"], body["messages"])
            d = r.json["decisions"][0]
            self.assertEqual(d["class"], "protected")
            # framing 4 + "user" 4 + the block's compact JSON.
            self.assertEqual(d["tokens"], 8 + len(json.dumps(raw, separators=(",", ":"))))
        for name in ("", " type", "type text"):
            msgs = [{"role": "user", "content": [{"type": "text", "text": "x", name: 1}]}]
            r = self.http.post("/v1/sessions/kept/messages/compact",
                               dict(self.anthropic(msgs), budget=1000))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json["messages"], msgs)

    def test_custom_tool_calls(self):
        # Chat Completions custom tools: the call carries {name, input}, its
        # input raw text; replaced, the input is the pointer itself.
        patch = "*** Begin Patch\n*** Update File: a.c\n-int x;\n+int y;\n*** End Patch\n" * 40
        call = {"role": "assistant", "content": None, "refusal": None, "annotations": [],
                "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": patch}}]}
        msgs = [{"role": "user", "content": "Rename x."}, call,
                {"role": "tool", "tool_call_id": "c1", "content": "Done."}]
        r = self.http.post("/v1/sessions/custom/messages/compact",
                           dict(self.openai(msgs), budget=100000, tokenizer="bytes"))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["messages"], msgs)
        r = self.http.post("/v1/sessions/custom/messages/compact",
                           dict(self.openai(msgs), budget=400, tokenizer="bytes"))
        self.assertEqual(r.status, 200, r.body)
        d = r.json["decisions"][1]
        self.assertEqual(d["decision"], "externalized")
        self.assertEqual(r.json["messages"][1]["tool_calls"],
                         [{"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": d["pointer"]}}])
        spill = self.http.get(d["href"])
        self.assertEqual(json.loads(spill.json["text"]), call)
        # A read-only custom call dropped is named by its raw input in the marker.
        grep = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "g1", "type": "custom", "custom": {"name": "grep", "input": "retry_limit src/"}}]}
        out = {"role": "tool", "tool_call_id": "g1", "content": "src/a.c:1: retry_limit\n" * 200}
        r = self.http.post("/v1/sessions/custom/messages/compact", dict(
            self.openai([{"role": "user", "content": "Find it."}, grep, out, {"role": "user", "content": "Go on."}]),
            budget=300, tokenizer="bytes", policy={"read_only_tools": ["grep"], "keep_last": 0}))
        self.assertEqual(r.status, 200, r.body)
        self.assertIn("grep retry_limit src/", str(r.json["messages"][1].get("content")), r.json)
        # The type names the member: a custom call with a function member, or both, is refused.
        for bad in ({"id": "c1", "type": "custom", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "c1", "type": "function", "custom": {"name": "f", "input": "x"}},
                    {"id": "c1", "type": "custom", "custom": {"name": "f"}},
                    {"id": "c1", "type": "custom", "custom": {"name": "f", "input": "x"},
                     "function": {"name": "f", "arguments": "{}"}}):
            self.refuse(self.openai([{"role": "user", "content": "x"},
                                     {"role": "assistant", "content": None, "tool_calls": [bad]},
                                     {"role": "tool", "tool_call_id": "c1", "content": "r"}]),
                        "$.messages[1].tool_calls[0]" + (".custom" if "input" not in bad.get("custom", {"input": 1}) else ""))

    def test_unknown_role_and_fields(self):
        self.refuse(self.openai([{"role": "function", "content": "x"}]), "$.messages[0].role")
        self.refuse(self.openai([{"role": "user", "content": "x", "tool_calls": []}]),
                    "$.messages[0].tool_calls")
        self.refuse(dict(self.openai([]), tokenizer="nope"), "$.tokenizer")

    def test_image_is_priced_by_its_bound(self):
        # A URL says nothing of the image's size: the formula's largest, 1445.
        msgs = [{"role": "user", "content": [{"type": "text", "text": "look"},
                                             {"type": "image_url", "image_url": {"url": "data:x"}}]}]
        r = self.http.post("/v1/sessions/img/messages/compact",
                           dict(self.openai(msgs), budget=2000, tokenizer="bytes"))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["messages"], msgs)
        self.assertEqual(r.json["used_tokens"], 4 + 4 + 4 + 1445)
        # The caller's annotation stands for the bound.
        body = dict(self.openai(msgs), budget=1000, tokenizer="bytes",
                    annotations=[{"index": 0, "tokens": 85}])
        r = self.http.post("/v1/sessions/img/messages/compact", body)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["messages"], msgs)
        # 4 framing + "user" + "look" + the annotated 85.
        self.assertEqual(r.json["used_tokens"], 4 + 4 + 4 + 85)
        # Audio is priced by a bound too (test_media.py has every kind): 3
        # bytes that are no WAV, at 8 kbit/s and 10 tokens a second, are 1.
        audio = [{"role": "user", "content": [{"type": "input_audio",
                                               "input_audio": {"data": "AAAA", "format": "wav"}}]}]
        r = self.http.post("/v1/sessions/img/messages/compact",
                           dict(self.openai(audio), budget=1000, tokenizer="bytes"))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["used_tokens"], 4 + 4 + 1)


class ProviderRulesTest(RefusingTest):
    """What the providers themselves refuse (their own error in a comment),
    refused up front with the path; and nothing they accept."""

    USER = {"role": "user", "content": "x"}
    TOOL_USE = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}

    def accept(self, body):
        r = self.http.post("/v1/sessions/ok/messages/compact", dict(body, budget=10000))
        self.assertEqual(r.status, 200, r.body)
        self.assertTrue(r.json["messages"], "an answer always holds a message")
        return r.json

    def test_an_empty_history(self):
        # "messages: at least one message is required"; OpenAI: "empty array".
        self.refuse(self.openai([]), "$.messages")
        self.refuse(self.anthropic([]), "$.messages")

    def test_text_before_a_tool_result(self):
        # "tool_result blocks must come first in the content array".
        self.refuse(self.anthropic([self.USER, self.TOOL_USE, {"role": "user", "content": [
            {"type": "text", "text": "here:"},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}]}]),
            "$.messages[2].content[1]")
        self.accept(self.anthropic([self.USER, self.TOOL_USE, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"},
            {"type": "text", "text": "and then"}]}]))

    def test_a_tool_use_id_used_again(self):
        # "`tool_use` ids must be unique", across the whole request.
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}
        self.refuse(self.anthropic([self.USER, self.TOOL_USE, result, self.TOOL_USE, result]),
                    "$.messages[3].content[0].id")
        # OpenAI documents no such rule: an id of an earlier message is taken.
        call = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
        answer = {"role": "tool", "tool_call_id": "c1", "content": "r"}
        self.accept(self.openai([self.USER, call, answer, call, answer]))

    def test_empty_text_ids_and_names(self):
        # "text content blocks must be non-empty"; "all messages must have
        # non-empty content except for the optional final assistant message";
        # ids: "String should match pattern '^[a-zA-Z0-9_-]+$'".
        self.refuse(self.anthropic([{"role": "user", "content": [{"type": "text", "text": ""}]}]),
                    "$.messages[0].content[0].text")
        self.refuse(self.anthropic([{"role": "user", "content": ""}]), "$.messages[0].content")
        self.refuse(self.anthropic([self.USER, {"role": "assistant", "content": ""}, self.USER]),
                    "$.messages[1].content")
        self.accept(self.anthropic([self.USER, {"role": "assistant", "content": ""}]))
        for field in ("id", "name"):
            use = copy.deepcopy(self.TOOL_USE)
            use["content"][0][field] = ""
            self.refuse(self.anthropic([self.USER, use]), "$.messages[1].content[0].%s" % field)
        self.refuse(self.anthropic([self.USER, self.TOOL_USE, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": ""}]}]), "$.messages[2].content[0].tool_use_id")
        self.refuse(self.anthropic([self.USER, self.TOOL_USE, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": ""}]}]}]),
            "$.messages[2].content[0].content[0].text")
        # OpenAI: "Invalid 'messages[1].tool_calls[0].function.name': empty string".
        self.refuse(self.openai([self.USER, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{}"}}]}]),
            "$.messages[1].tool_calls[0].function.name")
        # OpenAI takes empty content.
        self.accept(self.openai([{"role": "user", "content": ""}]))

    def test_trailing_whitespace_in_the_final_assistant_turn(self):
        # "final assistant content cannot end with trailing whitespace".
        self.refuse(self.anthropic([self.USER, {"role": "assistant", "content": "Sure, "}]),
                    "$.messages[1].content")
        self.refuse(self.anthropic([self.USER, {"role": "assistant", "content": [
            {"type": "text", "text": "Sure\n"}]}]), "$.messages[1].content[0].text")
        # Anywhere else, whitespace is text like any other.
        self.accept(self.anthropic([self.USER, {"role": "assistant", "content": "Sure, "},
                                    {"role": "user", "content": "go on "}]))

    def test_an_image_without_a_source(self):
        for source in ({}, {"data": "AAAA"}, ""):
            self.refuse(self.anthropic([{"role": "user", "content": [
                {"type": "image", "source": source}]}]), "$.messages[0].content[0].source" +
                (".type" if isinstance(source, dict) else ""))
        self.refuse(self.openai([{"role": "user", "content": [
            {"type": "image_url", "image_url": {}}]}]), "$.messages[0].content[0].image_url.url")

    def test_an_assistant_message_with_nothing_in_it(self):
        # content: "Required unless tool_calls or function_call is specified".
        self.refuse(self.openai([self.USER, {"role": "assistant", "content": None}]),
                    "$.messages[1].content")
        self.accept(self.openai([self.USER, {"role": "assistant", "content": None,
                                             "refusal": "I can't help with that."}]))

    def test_a_history_of_one_redundant_message_is_not_answered_empty(self):
        for fmt, role in (("openai", "system"), ("anthropic", "user")):
            a = self.accept({"format": fmt, "messages": [self.USER],
                             "annotations": [{"index": 0, "class": "redundant"}]})
            self.assertEqual(a["decisions"][0]["decision"], "dropped")
            self.assertEqual([m["role"] for m in a["messages"]], [role])
            self.assertEqual(a["marker_count"], 1)
            self.assertIn("message 0 was dropped", a["messages"][0]["content"])


class PassedThroughButRefusedTest(RefusingTest):
    """Histories the providers refuse in parts compactd keeps as sent: ids
    of the wrong shape, and block or part types the provider's own types
    exclude where they stand. Each is a 400 naming its path on compact and
    on verify; what a provider may grow (a new type in user content, a new
    block in either Anthropic turn) is still kept whole."""

    USER = {"role": "user", "content": "x"}

    def use(self, **block):
        return {"role": "assistant", "content": [dict({"type": "tool_use", "id": "toolu_1",
                                                       "name": "f", "input": {}}, **block)]}

    def result(self, *content):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                             "content": list(content)}]}

    def call(self, role_content):
        return {"role": "assistant", "content": role_content, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}

    # (name, body, path), each one a 200 before these rules.
    CASES = [
        # "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'".
        ("a tool_use id with a dot and a colon",
         lambda t: t.anthropic([t.USER, t.use(id="functions.read:0"),
                                dict(t.result(), content=[{"type": "tool_result",
                                                           "tool_use_id": "functions.read:0"}])]),
         "$.messages[1].content[0].id"),
        # "content.2.server_tool_use.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'".
        ("a server_tool_use id of another shape",
         lambda t: t.anthropic([t.USER, {"role": "assistant", "content": [
             {"type": "server_tool_use", "id": "toolu_1", "name": "web_search",
              "input": {"query": "q"}}]}]),
         "$.messages[1].content[0].id"),
        # ToolResultBlockParam.content: text, image, search_result, document, ... blocks.
        ("a tool_use inside a tool_result",
         lambda t: t.anthropic([t.USER, t.use(), t.result(
             {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}})]),
         "$.messages[2].content[0].content[0].type"),
        ("a thinking block inside a tool_result",
         lambda t: t.anthropic([t.USER, t.use(), t.result(
             {"type": "thinking", "thinking": "t", "signature": "s"})]),
         "$.messages[2].content[0].content[0].type"),
        # ChatCompletionSystemMessageParam / Developer: text parts only.
        ("a Responses input_text part in a system message",
         lambda t: t.openai([{"role": "system", "content": [{"type": "input_text", "text": "x"}]},
                             t.USER]),
         "$.messages[0].content[0].type"),
        ("an unknown part in a developer message",
         lambda t: t.openai([{"role": "developer", "content": [{"type": "video", "url": "u"}]},
                             t.USER]),
         "$.messages[0].content[0].type"),
        # ChatCompletionAssistantMessageParam: text and refusal parts only.
        ("a Responses output_text part in an assistant message",
         lambda t: t.openai([t.USER, {"role": "assistant", "content": [
             {"type": "output_text", "text": "x", "annotations": []}]}]),
         "$.messages[1].content[0].type"),
        # ChatCompletionToolMessageParam: text parts only.
        ("an input_image part in a tool message",
         lambda t: t.openai([t.USER, t.call(None), {"role": "tool", "tool_call_id": "c1",
                                                     "content": [{"type": "input_image",
                                                                  "image_url": "https://x/a.png"}]}]),
         "$.messages[2].content[0].type"),
    ]

    # A budget that holds each: without these rules, each is a 200.
    BUDGET = 10**5

    def test_each_is_refused_with_its_path(self):
        for name, body, path in self.CASES:
            with self.subTest(name):
                self.refuse(dict(body(self), budget=self.BUDGET), path)

    def test_verify_refuses_them_alike(self):
        for name, body, path in self.CASES:
            with self.subTest(name):
                b = {k: v for k, v in body(self).items() if k != "budget"}
                r = self.http.post("/v1/sessions/bad/messages/verify", dict(b, units=[]))
                self.assertError(r, 400, "InvalidRequest", path)

    def test_what_the_provider_may_grow_is_still_kept(self):
        kept = [
            # A server_tool_use of the API's shape, and its result block.
            self.anthropic([self.USER, {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_01A", "name": "web_search",
                 "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": []},
                {"type": "text", "text": "found"}]}]),
            # A search_result inside a tool_result; ids of every allowed character.
            self.anthropic([self.USER, self.use(id="toolu_01-Ab_9"), {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01-Ab_9", "content": [
                    {"type": "search_result", "source": "s", "title": "t",
                     "content": [{"type": "text", "text": "x"}]}]}]}]),
            # A part of a type compactd does not know, in user content.
            self.openai([{"role": "user", "content": [{"type": "video", "url": "u"}]}]),
            self.openai([self.USER, self.call([{"type": "refusal", "refusal": "no"}]),
                         {"role": "tool", "tool_call_id": "c1",
                          "content": [{"type": "text", "text": "r"}]}]),
        ]
        for body in kept:
            r = self.http.post("/v1/sessions/ok/messages/compact", dict(body, budget=self.BUDGET))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json["messages"], body["messages"])


class LongOutputsTest(MessagesBase):
    """The generator's long tool outputs (whole files, full logs) grown to a
    size in bytes, as the benchmark's 1 MB histories are: valid histories
    for the providers' clients, compacted with exact o200k_base counts."""

    SIZE = 300_000

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.histories = transcripts("%dk" % (cls.SIZE // 1000), "5", "long")

    def test_grown_to_the_size_asked(self):
        for fmt in ("openai", "anthropic"):
            size = len(json.dumps(self.histories[fmt], separators=(",", ":"),
                                  ensure_ascii=False).encode())
            self.assertGreaterEqual(size, self.SIZE, fmt)
            self.assertLess(size, self.SIZE * 1.1, fmt)

    def test_files_are_read_whole(self):
        msgs = self.histories["openai"]["messages"]
        reads = {c["id"] for m in msgs for c in m.get("tool_calls", [])
                 if c["function"]["name"] == "read_file"}
        results = [m["content"] for m in msgs if m["role"] == "tool" and m["tool_call_id"] in reads]
        self.assertGreater(len(results), 10)
        for c in results:
            text = c if isinstance(c, str) else c[0]["text"]
            self.assertGreaterEqual(text.count("\n") + 1, 60)

    def test_compacted_under_o200k_passes_the_clients(self):
        cases = []
        for fmt in ("openai", "anthropic"):
            probe = self.compact("long-probe-" + fmt, self.body(fmt, 10**8, dry_run=True,
                                                                tokenizer="o200k_base"))
            self.assertEqual(probe.status, 200, probe.body)
            budget = probe.json["used_tokens"] // 2
            session = "long-" + fmt
            r = self.compact(session, self.body(fmt, budget, tokenizer="o200k_base"))
            self.assertEqual(r.status, 200, r.body)
            a = r.json
            self.assertLessEqual(a["used_tokens"], budget)
            self.assertTrue(any(d["decision"] != "preserved" for d in a["decisions"]))
            cases.append({"name": "%s long outputs, budget %d" % (fmt, budget), "format": fmt,
                          "input": self.histories[fmt], "answer": a,
                          "spills": self.spills_of(session, a)})
        run_node_check(self, "check.mjs", cases)


if __name__ == "__main__":
    unittest.main()
