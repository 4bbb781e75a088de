"""A coding agent's session (agent_loop.mjs) compacted turn by turn at
12,000 o200k_base tokens against a real compactd and redis-server, in both
formats and both modes: what a later step needs (every constraint the user
stated, the agent's latest plan, every call with side effects and its
result) is on every turn verbatim or behind a pointer that reads back the
original; no loss marker offers a call with side effects as a way back; and
fed its own answers back, compactd neither stacks markers nor grows what it
protects beyond what the new turns bring."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402

NODE = os.environ.get("NODE", "node")
BUDGET = 12000
TURNS = 40
READ_ONLY = ["read_*", "grep", "list_dir"]
READ_ONLY_NAMES = {"read_file", "grep", "list_dir"}
SIDE_EFFECTS = {"write_file", "run_shell", "run_tests", "apply_migration"}
MARKER_OPEN = "[compactd: message"
REACQUIRE = ". Re-acquire before relying on them: "
RAN = ". Already ran, not to be run again (results not kept): "


def sessions_of_the_agent():
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([NODE, os.path.join(HERE, "agent_loop.mjs"), d], check=True)
        out = {}
        for f in ("openai", "anthropic"):
            with open(os.path.join(d, f + ".json")) as fh:
                out[f] = json.load(fh)
        return out


# ---- Reading a history as the model does ----

def texts(msg):
    """Every text of a message: content strings, text blocks, tool results."""
    c = msg.get("content")
    if isinstance(c, str):
        return [c]
    out = []
    for b in c or []:
        if b.get("type") == "text":
            out.append(b["text"])
        elif b.get("type") == "tool_result":
            out.extend(texts(b))
    return out


def calls(msg):
    """(id, tool) of each call a message makes."""
    out = [(c["id"], c["function"]["name"]) for c in msg.get("tool_calls") or []]
    if isinstance(msg.get("content"), list):
        out += [(b["id"], b["name"]) for b in msg["content"] if b.get("type") == "tool_use"]
    return out


def answers(msg):
    """Ids of the calls a message answers."""
    if msg.get("role") == "tool":
        return [msg["tool_call_id"]]
    if isinstance(msg.get("content"), list):
        return [b["tool_use_id"] for b in msg["content"] if b.get("type") == "tool_result"]
    return []


def is_marker(text):
    return text.startswith(MARKER_OPEN) and text.endswith("]")


def marker_lists(text):
    """The re-acquire items and the already-ran items of a marker."""
    body = text[:-1]
    ran = ""
    if RAN in body:
        body, ran = body.split(RAN, 1)
    reacquire = body.split(REACQUIRE, 1)[1] if REACQUIRE in body else ""
    return reacquire, ran


POINTER = re.compile(r"\[externalized [^\[\]]+ sha256:[0-9a-f]{16}\]")


def is_pointer(text):
    return POINTER.fullmatch(text) is not None


def kept_as_sent(sent, out):
    """out is the message sent, or (an Anthropic turn a marker was appended
    to) its blocks unchanged and then loss markers only."""
    if out == sent:
        return True
    if out.get("role") != sent.get("role") or not isinstance(out.get("content"), list):
        return False
    mine = sent["content"] if isinstance(sent.get("content"), list) else [
        {"type": "text", "text": sent.get("content")}]
    rest = out["content"][len(mine):]
    return (out["content"][:len(mine)] == mine and len(rest) > 0
            and all(b.get("type") == "text" and is_marker(b["text"]) for b in rest))


def boundaries(messages):
    """Where the model is called next: after a user turn or a run of results."""
    out = []
    for k in range(2, len(messages) + 1):
        last = messages[k - 1]
        nxt = messages[k] if k < len(messages) else None
        if last["role"] == "user" or (last["role"] == "tool" and (nxt is None or nxt["role"] != "tool")):
            out.append(k)
    step = (len(out) - 1) / (TURNS - 1)
    return [out[round(i * step)] for i in range(TURNS)]


class AgentLoopTest(ServerTest):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sessions = sessions_of_the_agent()
        cls.originals = {}  # pointer text -> the message it stands for

    def compact(self, session, fmt, messages, mode, policy):
        h = self.sessions[fmt]
        body = {"format": fmt, "budget": BUDGET, "tokenizer": "o200k_base", "mode": mode,
                "messages": messages, "policy": policy}
        if "system" in h:
            body["system"] = h["system"]
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        r = self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)
        self.assertEqual(r.status, 200, r.body[:400])
        a = r.json
        self.assertLessEqual(a["used_tokens"], BUDGET)
        for d in a["decisions"]:
            if d["decision"] == "externalized":
                self.remember(d, messages[d["index"]])
        return a

    def remember(self, decision, original):
        """An externalized message's pointer, read back once: the original."""
        if decision["pointer"] in self.originals:
            return
        r = self.http.get(decision["href"])
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(json.loads(r.json["text"]), original)
        self.originals[decision["pointer"]] = original

    # ---- What every answer must hold ----

    def carried(self, answer, want):
        """want (a text) is in the answer verbatim or behind a pointer to a
        message that holds it."""
        for m in answer["messages"]:
            for t in texts(m):
                if want in t:
                    return True
                for p in POINTER.findall(t):
                    o = self.originals.get(p)
                    if o is not None and any(want in ot for ot in texts(o)):
                        return True
        return False

    def check_markers(self, answer, where):
        """No marker offers a call with side effects as a way back, in its
        text or in a decision's reacquire."""
        n = 0
        for m in answer["messages"]:
            for t in texts(m):
                if not is_marker(t):
                    continue
                n += 1
                reacquire, ran = marker_lists(t)
                for item in filter(None, reacquire.split("; ")):
                    self.assertTrue(item.split(" ", 1)[0] in READ_ONLY_NAMES or is_pointer(item),
                                    "%s: %s" % (where, t))
                for tool in SIDE_EFFECTS:
                    self.assertNotIn(tool + " {", reacquire, "%s: %s" % (where, t))
                self.assertNotIn(MARKER_OPEN, t[1:], "%s: a marker inside a marker: %s" % (where, t))
        for d in answer["decisions"]:
            for item in filter(None, d.get("reacquire", "").split("; ")):
                self.assertTrue(item.split(" ", 1)[0] in READ_ONLY_NAMES or is_pointer(item), where)
        return n

    def check_turn(self, answer, seen, where):
        """What a later step needs is carried: every constraint, the latest
        plan, each side-effecting call with its result."""
        for c in seen["constraints"]:
            self.assertTrue(self.carried(answer, c), "%s: constraint lost: %s" % (where, c))
        if seen["plan"]:
            self.assertTrue(self.carried(answer, seen["plan"]), "%s: plan lost" % where)
        called, answered = set(), set()
        for m in answer["messages"]:
            called.update(i for i, _ in calls(m))
            answered.update(answers(m))
            for t in texts(m):  # calls and results behind a pointer the marker names
                for p in POINTER.findall(t) if is_marker(t) else []:
                    o = self.originals.get(p, {})
                    called.update(i for i, _ in calls(o))
                    answered.update(answers(o))
        for cid in seen["side_effects"]:
            self.assertIn(cid, called, "%s: call %s dropped" % (where, cid))
            self.assertIn(cid, answered, "%s: the result of %s dropped" % (where, cid))
        return self.check_markers(answer, where)

    def note(self, seen, new_messages):
        for m in new_messages:
            for t in texts(m):
                if m["role"] == "user" and ("Fix it." in t or t.startswith("One more thing: ")):
                    seen["constraints"].append(t.split("Fix it. ")[-1].replace("One more thing: ", ""))
                if m["role"] == "assistant" and t.startswith("Next step: "):
                    seen["plan"] = t
            seen["side_effects"].extend(i for i, tool in calls(m) if tool not in READ_ONLY_NAMES)

    # ---- The loops ----

    def direct_loop(self, fmt, mode, policy):
        """Each turn, the caller's full history so far."""
        msgs = self.sessions[fmt]["messages"]
        seen = {"constraints": [], "plan": None, "side_effects": []}
        prev, markers, dropped_turns = 0, 0, 0
        for turn, k in enumerate(boundaries(msgs)):
            self.note(seen, msgs[prev:k])
            prev = k
            where = "%s %s %s turn %d" % (fmt, mode, policy, turn)
            a = self.compact("loop-%s-%s-%d" % (fmt, mode, len(policy)), fmt, msgs[:k], mode, policy)
            markers += self.check_turn(a, seen, where)
            dropped_turns += any(d["decision"] == "dropped" for d in a["decisions"])
        self.assertGreaterEqual(len(seen["constraints"]), 5)
        self.assertTrue(seen["side_effects"])
        return markers, dropped_turns

    def test_openai_strict(self):
        markers, dropped = self.direct_loop("openai", "strict", {"read_only_tools": READ_ONLY})
        self.assertGreater(markers, 0, "the loop must compact hard enough to drop")
        self.assertGreater(dropped, 10)

    def test_anthropic_strict(self):
        markers, dropped = self.direct_loop("anthropic", "strict", {"read_only_tools": READ_ONLY})
        self.assertGreater(markers, 0)
        self.assertGreater(dropped, 10)

    def test_openai_discovery(self):
        self.direct_loop("openai", "discovery", {"read_only_tools": READ_ONLY})

    def test_anthropic_discovery(self):
        self.direct_loop("anthropic", "discovery", {"read_only_tools": READ_ONLY})

    def test_nothing_declared_keeps_every_call(self):
        """With no tool declared, every call has side effects: nothing of
        them is dropped, and no marker offers one."""
        for fmt in ("openai", "anthropic"):
            self.direct_loop(fmt, "strict", {})

    def feedback_loop(self, fmt, mode):
        """Each turn, the last answer's messages and the new ones."""
        msgs = self.sessions[fmt]["messages"]
        seen = {"constraints": [], "plan": None, "side_effects": []}
        prev, history, protected, marker_total = 0, [], None, 0
        fed_back = {"markers": 0, "pointers": 0}
        for turn, k in enumerate(boundaries(msgs)):
            new = msgs[prev:k]
            self.note(seen, new)
            prev = k
            sent = history + new
            where = "%s %s feedback turn %d" % (fmt, mode, turn)
            a = self.compact("feedback-%s-%s" % (fmt, mode), fmt, sent, mode,
                             {"read_only_tools": READ_ONLY})
            marker_total += self.check_turn(a, seen, where)
            self.check_no_stacking(a["messages"], where)
            for d in a["decisions"]:
                m = sent[d["index"]]
                ts = texts(m)
                if d["index"] < len(history) and any(is_marker(t) for t in ts):
                    fed_back["markers"] += 1
                if len(ts) == 1 and is_marker(ts[0]) and not calls(m) and not answers(m):
                    self.assertEqual(d["class"], "derivable", "%s: a marker fed back" % where)
                if ts and all(is_pointer(t) for t in ts) and d["index"] < len(history):
                    # A pointer fed back stays the same pointer (or, dropped,
                    # is named by its run's marker, unless a later identical
                    # read supersedes its exchange), is never spilled again,
                    # and reads back the original.
                    fed_back["pointers"] += 1
                    self.assertIn(ts[0], self.originals, where)
                    self.assertIn(d["decision"], ("preserved", "dropped"), where)
                    if d["decision"] == "preserved":
                        self.assertTrue(any(kept_as_sent(m, o) for o in a["messages"]), where)
                    elif d["reason"] == "over_budget":
                        self.assertTrue(any(ts[0] in t for o in a["messages"] for t in texts(o)
                                            if is_marker(t)), where)
            now = sum(d["tokens"] for d in a["decisions"] if d["class"] == "protected")
            added = sum(d["tokens"] for d in a["decisions"]
                        if d["class"] == "protected" and d["index"] >= len(history))
            if protected is not None:
                self.assertLessEqual(now, protected + added,
                                     "%s: protected tokens grew beyond the new turns" % where)
            protected = now
            history = a["messages"]
        self.assertGreater(marker_total, 0, "the loop must drop something")
        self.assertGreater(fed_back["markers"], 0, "markers must come back")
        if mode == "discovery":  # strict spills only what is protected, which fits here
            self.assertGreater(fed_back["pointers"], 0, "pointers must come back")
        return fed_back

    def check_no_stacking(self, messages, where):
        """At most one marker per run: never two markers side by side, in
        one turn or in neighbouring ones."""
        flags = []
        for m in messages:
            ts = texts(m)
            n = sum(is_marker(t) for t in ts)
            self.assertLessEqual(n, 1, "%s: two markers in one turn" % where)
            flags.append((bool(ts) and is_marker(ts[0]), bool(ts) and is_marker(ts[-1])))
        for i in range(1, len(flags)):
            self.assertFalse(flags[i - 1][1] and flags[i][0], "%s: markers side by side at %d" % (where, i))

    def test_openai_feedback(self):
        self.feedback_loop("openai", "strict")

    def test_anthropic_feedback(self):
        self.feedback_loop("anthropic", "strict")

    def test_openai_feedback_discovery(self):
        self.feedback_loop("openai", "discovery")

    def test_anthropic_feedback_discovery(self):
        self.feedback_loop("anthropic", "discovery")


if __name__ == "__main__":
    unittest.main()
