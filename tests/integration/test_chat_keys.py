"""Spill keys of chat messages come from what identifies a message, not its
place: delete one early exchange and compact again, and every unchanged
message keeps its pointer; every pointer returned before still resolves."""

import json
import unittest

from harness import ServerTest

READ = "read_file"
N_EXCHANGES = 6


def log_text(k):
    return "file %d: " % k + " ".join("line%d_%d" % (k, j) for j in range(60))


def args(k):
    # Large enough that the call, too, is cheaper behind a pointer.
    return {"path": "src/f%d.c" % k, "why": "look for the broken include " * 6}


def openai_history(skip=None):
    msgs = [{"role": "system", "content": "You are a coding agent. " * 4},
            {"role": "user", "content": "Read every file and say what breaks the build."}]
    for k in range(N_EXCHANGES):
        if k == skip:
            continue
        cid = "call_%d" % k
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": READ, "arguments": json.dumps(args(k))}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": log_text(k)})
        msgs.append({"role": "assistant", "content": "Read f%d; nothing broken there yet. " % k * 3})
    msgs.append({"role": "user", "content": "Go on."})
    return msgs


def anthropic_history(skip=None):
    msgs = [{"role": "user", "content": "Read every file and say what breaks the build."}]
    for k in range(N_EXCHANGES):
        if k == skip:
            continue
        tid = "toolu_%02d" % k
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": "Reading f%d. " % k * 3},
            {"type": "tool_use", "id": tid, "name": READ, "input": args(k)}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": log_text(k)}]})
    msgs.append({"role": "assistant", "content": "Every file is read."})
    msgs.append({"role": "user", "content": "Go on."})
    return msgs


class ChatKeysTest(ServerTest):

    def compact(self, session, fmt, messages, budget=None):
        body = {"format": fmt, "tokenizer": "bytes", "messages": messages,
                "policy": {"protect_tools": [READ], "keep_last": 0}}
        if budget is None:
            probe = self.http.post("/v1/sessions/%s/messages/compact" % session,
                                   dict(body, budget=10**7, dry_run=True))
            self.assertEqual(probe.status, 200, probe.body)
            budget = probe.json["required_budget"]
        r = self.http.post("/v1/sessions/%s/messages/compact" % session, dict(body, budget=budget))
        self.assertEqual(r.status, 200, r.body)
        return r.json

    def pointers(self, messages, answer):
        """{message JSON: (key, pointer, href)} of the externalized ones."""
        out = {}
        for d in answer["decisions"]:
            if d["decision"] == "externalized":
                out[json.dumps(messages[d["index"]], sort_keys=True)] = (
                    d["key"], d["pointer"], d["href"])
        return out

    def check_stable(self, fmt, history):
        full, cut = history(), history(skip=1)
        before = self.pointers(full, self.compact("keys-" + fmt, fmt, full))
        after = self.pointers(cut, self.compact("keys-" + fmt, fmt, cut))
        # Every call and result left (protected, larger than a pointer) is spilled.
        self.assertGreaterEqual(len(after), 2 * (N_EXCHANGES - 1), list(after.values()))
        unchanged = [m for m in before if m in after]
        self.assertEqual(len(unchanged), len(after), "the same messages go behind pointers")
        for m in unchanged:
            self.assertEqual(before[m], after[m], m)
        # Every pointer of the first compaction still resolves, to its message.
        for m, (_key, _ptr, href) in before.items():
            got = self.http.get(href)
            self.assertEqual(got.status, 200, got.body)
            self.assertEqual(json.loads(got.json["text"]), json.loads(m))

    def test_openai_pointers_survive_a_deleted_exchange(self):
        self.check_stable("openai", openai_history)

    def test_anthropic_pointers_survive_a_deleted_exchange(self):
        self.check_stable("anthropic", anthropic_history)

    def test_keys_name_the_call_the_result_and_the_digest(self):
        msgs = openai_history()
        a = self.compact("keys-names", "openai", msgs)
        keys = {d["index"]: d["key"] for d in a["decisions"] if d["decision"] == "externalized"}
        self.assertEqual(keys.get(2), "call_0")
        self.assertEqual(keys.get(3), "call_0.result")
        self.assertEqual(keys.get(5), "call_1")
        self.assertRegex(keys.get(0, ""), r"^msg-[0-9a-f]{16}$")

    def test_a_call_id_used_again_gets_a_key_of_its_own(self):
        # OpenAI lets a later exchange reuse an id; its key is told apart.
        msgs = openai_history()
        for m in msgs[5:8]:
            if m.get("tool_calls"):
                m["tool_calls"][0]["id"] = "call_0"
            if m.get("tool_call_id"):
                m["tool_call_id"] = "call_0"
        a = self.compact("keys-again", "openai", msgs)
        keys = [d["key"] for d in a["decisions"] if d["decision"] == "externalized"]
        self.assertEqual(len(keys), len(set(keys)), keys)
        self.assertIn("call_0~2", keys)
        self.assertIn("call_0.result~2", keys)

    def test_an_id_that_is_no_plain_key_is_digested(self):
        msgs = openai_history()
        msgs[2]["tool_calls"][0]["id"] = "call/with spaces [and] brackets"
        msgs[3]["tool_call_id"] = "call/with spaces [and] brackets"
        a = self.compact("keys-odd", "openai", msgs)
        keys = {d["index"]: d["key"] for d in a["decisions"] if d["decision"] == "externalized"}
        self.assertRegex(keys[2], r"^id-[0-9a-f]{16}$")
        self.assertEqual(keys[3], keys[2] + ".result")


if __name__ == "__main__":
    unittest.main()
