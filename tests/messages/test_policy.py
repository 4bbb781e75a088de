"""The chat policy's tool lists and assistant_text over real HTTP: bad
entries, unknown fields and contradictions refused with the field's path
and nothing written; wildcards and the side-effecting default in both
formats; the marker wording when a call with side effects is dropped."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402

BIG = "x" * 600


def openai_history():
    return [
        {"role": "user", "content": "Ship the fix."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"p\":1}"}},
            {"id": "c2", "type": "function", "function": {"name": "write_file", "arguments": "{\"p\":2}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": BIG},
        {"role": "tool", "tool_call_id": "c2", "content": "wrote " + BIG},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "read_config", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c3", "content": BIG},
        {"role": "user", "content": "Next."},
        {"role": "assistant", "content": "On it."}]


def anthropic_history():
    return [
        {"role": "user", "content": "Ship the fix."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"p": 1}},
            {"type": "tool_use", "id": "t2", "name": "write_file", "input": {"p": 2}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": BIG},
            {"type": "tool_result", "tool_use_id": "t2", "content": "wrote " + BIG}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t3", "name": "read_config", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": BIG}]},
        {"role": "assistant", "content": "On it."}]


class PolicyTest(ServerTest):

    def compact(self, session, body):
        return self.http.post("/v1/sessions/%s/messages/compact" % session, body)

    def body(self, fmt, policy, budget=10**6, **extra):
        msgs = openai_history() if fmt == "openai" else anthropic_history()
        b = {"format": fmt, "budget": budget, "tokenizer": "bytes", "messages": msgs, "policy": policy}
        b.update(extra)
        return b

    def refuse(self, policy, path, fmt="openai"):
        session = "bad-policy"
        r = self.compact(session, self.body(fmt, policy, budget=300))
        err = self.assertError(r, 400, "InvalidRequest", path)
        self.assertEqual(self.http.get("/v1/sessions/%s/spills" % session).json["spills"], [])
        self.assertEqual(self.http.get("/v1/sessions/%s/events" % session).json["events"], [])
        return err

    def test_bad_entries_and_fields_are_refused(self):
        for fmt in ("openai", "anthropic"):
            self.refuse({"read_only_tools": ["read_**"]}, "$.policy.read_only_tools[0]", fmt)
            self.refuse({"protect_tools": ["ok", "a b"]}, "$.policy.protect_tools[1]", fmt)
            self.refuse({"redundant_tools": [""]}, "$.policy.redundant_tools[0]", fmt)
            self.refuse({"redundant_tools": ["x" * 129]}, "$.policy.redundant_tools[0]", fmt)
            self.refuse({"read_only_tools": "read_*"}, "$.policy.read_only_tools", fmt)
            self.refuse({"read_only_tools": [3]}, "$.policy.read_only_tools[0]", fmt)
            self.refuse({"readonly_tools": ["read_*"]}, "$.policy.readonly_tools", fmt)
            self.refuse({"assistant_text": "kept"}, "$.policy.assistant_text", fmt)
            self.refuse({"assistant_text": True}, "$.policy.assistant_text", fmt)

    def test_read_only_and_protected_at_once_is_refused(self):
        err = self.refuse({"read_only_tools": ["grep", "read_*"], "protect_tools": ["read_file"]},
                          "$.policy.read_only_tools[1]")
        self.assertIn("protect_tools[0]", err["message"])
        self.refuse({"read_only_tools": ["read_file"], "protect_tools": ["read_*"]},
                    "$.policy.read_only_tools[0]")
        self.refuse({"read_only_tools": ["apply"], "protect_tools": ["apply"]},
                    "$.policy.read_only_tools[0]")

    def classes(self, fmt, policy, **extra):
        r = self.compact("classes-%s" % fmt, self.body(fmt, policy, dry_run=True, **extra))
        self.assertEqual(r.status, 200, r.body)
        return [d["class"] for d in r.json["decisions"]]

    def test_undeclared_tools_have_side_effects(self):
        self.assertEqual(self.classes("openai", {})[1:6], ["protected"] * 5)
        self.assertEqual(self.classes("anthropic", {})[1:5], ["protected"] * 4)
        # read_* covers read_file and read_config; write_file still has side
        # effects, and protects the exchange it shares with read_file.
        self.assertEqual(self.classes("openai", {"read_only_tools": ["read_*"]})[1:6],
                         ["protected"] * 3 + ["derivable"] * 2)
        self.assertEqual(self.classes("anthropic", {"read_only_tools": ["read_*"], "keep_last": 1})[1:5],
                         ["protected"] * 2 + ["derivable"] * 2)
        self.assertEqual(self.classes("openai", {"read_only_tools": ["*"]})[1:6], ["derivable"] * 5)
        self.assertEqual(self.classes("openai", {"redundant_tools": ["*_config"]})[4:6],
                         ["redundant"] * 2)

    def test_assistant_prose(self):
        msgs = openai_history() + [{"role": "user", "content": "And?"},
                                   {"role": "assistant", "content": "Done."}]
        for text, want in ((None, "protected"), ("protected", "protected"), ("derivable", "derivable")):
            policy = {"read_only_tools": ["read_*"], "keep_last": 1}
            if text:
                policy["assistant_text"] = text
            r = self.compact("prose", {"format": "openai", "budget": 10**6, "dry_run": True,
                                       "messages": msgs, "policy": policy})
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json["decisions"][7]["class"], want, text)

    def test_a_dropped_side_effect_is_named_as_already_run(self):
        """Only an annotation drops a call with side effects: the marker then
        says it ran, and offers only the read-only call as a way back."""
        body = self.body("openai", {"read_only_tools": ["read_*"]}, budget=500,
                         annotations=[{"index": i, "class": "derivable"} for i in (1, 2, 3)])
        r = self.compact("ran", body)
        self.assertEqual(r.status, 200, r.body)
        markers = [m["content"] for m in r.json["messages"]
                   if m["role"] == "system" and m["content"].startswith("[compactd:")]
        self.assertEqual(len(markers), 1, r.json["messages"])
        self.assertIn("Re-acquire before relying on them: read_file {\"p\":1}", markers[0])
        self.assertIn(". Already ran, not to be run again (results not kept): write_file (c2)",
                      markers[0])
        self.assertNotIn("write_file {", markers[0])
        d = r.json["decisions"][1]
        self.assertEqual(d["decision"], "dropped")
        self.assertEqual(d["reacquire"], "read_file {\"p\":1}")


if __name__ == "__main__":
    unittest.main()
