"""The Python client against a real compactd and redis-server: every
operation, every error class, the reacquire tools byte for byte, every answer
held to openapi.yaml both ways (tests/clients/exchanges.py), and the drift
check shown to fail on a spec that gains or loses a field."""

import copy
import http.server
import io
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "clients"))

import yaml  # noqa: E402

import exchanges  # noqa: E402
import harness  # noqa: E402
from compactd import (ANTHROPIC_REACQUIRE_TOOL, OPENAI_REACQUIRE_TOOL, REACQUIRE_TOOL_NAME,  # noqa: E402
                      RESPONSES_REACQUIRE_TOOL, Ambiguous, Forbidden, PayloadTooLarge,
                      CompactdError, CompactionFailure, Compactd, InvalidPointer, InvalidRequest, NotFound,
                      Overloaded, StoreUnavailable, Timeout, TransportError, Unauthorized, anthropic_turn, encode_key,
                      openai_turn, parse_pointer, responses_turn, run_reacquire)

LOG = "make: *** [Makefile:42: billing.o] Error 1\r\n\tsrc/billing/invoice.c:88: é ✓ 🚀 \"quoted\" \\ {\"a\":1}\n" * 40


class Recorder:
    """An opener for Compactd that records every answer, for the drift check."""

    def __init__(self):
        self.opener = urllib.request.build_opener()
        self.exchanges = []

    def open(self, req, timeout=None):
        u = urllib.parse.urlsplit(req.full_url)
        path = u.path + ("?" + u.query if u.query else "")
        try:
            resp = self.opener.open(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            body = e.read()
            self.exchanges.append({"method": req.get_method(), "path": path, "status": e.code,
                                   "content_type": e.headers.get("Content-Type"), "body": body.decode("utf-8")})
            raise urllib.error.HTTPError(e.url, e.code, e.msg, e.headers, io.BytesIO(body))
        with resp:
            body = resp.read()
        self.exchanges.append({"method": req.get_method(), "path": path, "status": resp.status,
                               "content_type": resp.headers.get("Content-Type"), "body": body.decode("utf-8")})
        return _Answer(resp.status, resp.headers, body)


class _Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self._body = status, headers, body

    def read(self):
        return self._body

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = harness.Redis()
        cls.server = harness.Compactd(cls.redis.url())
        cls.recorder = Recorder()
        cls.c = Compactd("http://127.0.0.1:%d" % cls.server.port, opener=cls.recorder)

    @classmethod
    def tearDownClass(cls):
        harness.stop_all(cls.server, cls.redis)

    def base(self):
        return "http://127.0.0.1:%d" % self.server.port

    # ---- The shared pointer grammar ----

    def test_pointer_examples_read_as_the_server_reads_them(self):
        """spec/shared.json's examples: parse_pointer gives each one's key (or None), and the
        server's own parser agrees: a pointer it reads is looked up (404 here, nothing
        spilled), one it does not is refused at $.pointer."""
        with open(os.path.join(ROOT, "spec", "shared.json"), encoding="utf-8") as f:
            examples = json.load(f)["pointer"]["examples"]
        for e in examples:
            with self.subTest(text=e["text"][:60]):
                expected = None if e["key"] is None else (e["key"], "0123456789abcdef")
                self.assertEqual(parse_pointer(e["text"]), expected)
                if e["key"] is None:
                    with self.assertRaises(InvalidPointer):
                        self.c.reacquire("grammar", e["text"])
                    with self.assertRaises(InvalidRequest) as cm:
                        self.c.reacquire_call("grammar", {"pointer": e["text"]})
                    self.assertEqual(cm.exception.path, "$.pointer")
                else:
                    with self.assertRaises(NotFound):
                        self.c.reacquire("grammar", e["text"])

    # ---- Operations ----

    def test_anthropic_system_role_messages_are_moved_into_system(self):
        history = [{"role": "system", "content": "You are a coding agent."},
                   {"role": "user", "content": "Why does it fail?"},
                   {"role": "system", "content": "Answer in one line."},
                   {"role": "assistant", "content": "A missing include."}]
        out = self.c.compact_messages("py-anth-sys", history, 4000, format="anthropic", system="Be terse.")
        self.assertEqual(out["system"], "Be terse.\n\nYou are a coding agent.\n\nAnswer in one line.")
        self.assertEqual([m["role"] for m in out["messages"]], ["user", "assistant"])
        blocks = self.c.compact_messages("py-anth-sys2", [
            {"role": "system", "content": [{"type": "text", "text": "Rules."}]},
            {"role": "user", "content": "hi"}], 4000, format="anthropic")
        self.assertEqual(blocks["system"], [{"type": "text", "text": "Rules."}])
        with self.assertRaises(CompactionFailure) as cm:
            self.c.compact_messages("py-anth-sys3", [{"role": "system", "content": "s"},
                                                     {"role": "user", "content": LOG}], 10, format="anthropic",
                                    tokenizer="bytes")
        self.assertEqual(cm.exception.forcing, [{"role": "user", "content": LOG}])


    def test_compact_units_spill_and_reacquire_byte_for_byte(self):
        r = self.c.compact_units("py-units", [
            {"key": "task", "class": "protected", "text": "Never push to main."},
            {"key": "notes/build [x] 100%", "class": "protected", "text": LOG, "metadata": {"role": "tool"}},
            {"key": "ls", "class": "derivable", "tokens": 300, "reacquire": "ls -la /srv"},
            {"key": "old", "class": "redundant", "tokens": 50},
        ], 200)
        self.assertEqual([d["decision"] for d in r["decisions"]], ["preserved", "externalized", "dropped", "dropped"])
        ext = r["externalized"][0]
        self.assertEqual(parse_pointer(ext["pointer"]), (ext["key"], ext["sha256"][:16]))
        self.assertEqual(ext["href"], "/v1/sessions/py-units/spills/%s?sha256=%s" % (encode_key(ext["key"]), ext["sha256"]))
        spill = self.c.reacquire("py-units", ext["pointer"])
        self.assertEqual(spill["text"], LOG)
        self.assertEqual(spill["metadata"], {"role": "tool"})
        self.assertEqual(self.c.get_spill("py-units", ext["key"])["sha256"], ext["sha256"])
        self.assertEqual(self.c.get_spill("py-units", ext["key"], ext["sha256"])["text"], LOG)
        self.assertEqual([(s["key"], s["sha256"]) for s in self.c.list_spills("py-units")["spills"]],
                         [(ext["key"], ext["sha256"])])

    def test_dry_run_and_summaries(self):
        dry = self.c.compact_units("py-dry", [
            {"key": "task", "class": "protected", "text": "Never push to main."},
            {"key": "grep", "class": "derivable", "tokens": 400, "reacquire": "grep -r retry src/"}], 100, dry_run=True)
        self.assertTrue(0 < dry["dropped"][0]["summary_budget"] < 100)
        self.assertEqual(self.c.list_spills("py-dry")["spills"], [])
        history = [{"role": "user", "content": "Where is the limit set?"},
                   {"role": "assistant", "content": "In src/billing/invoice.c by RETRY_LIMIT_MAX." + " padding" * 40},
                   {"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "Anything else?"}]
        out = self.c.compact_messages("py-sum", history, 150, format="openai", tokenizer="bytes",
                                      annotations=[{"index": 1, "class": "derivable",
                                                    "summary": {"text": "The limit is in the billing code."}}])
        self.assertEqual(out["decisions"][1]["decision"], "summarized")
        self.assertIn("src/billing/invoice.c", out["decisions"][1]["lost_identifiers"])

    def test_compact_messages_openai_spill_is_the_message(self):
        history = [{"role": "system", "content": "You are a coding agent."},
                   {"role": "user", "content": "Why does it fail?\n" + LOG},
                   {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"a.c\"}"}}]},
                   {"role": "tool", "tool_call_id": "call_1", "content": "int main(void) { return 1; }" * 30},
                   {"role": "assistant", "content": "The return value is wrong."},
                   {"role": "user", "content": "Fix it."}]
        out = self.c.compact_messages("py-openai", history, 400, format="openai",
                                      policy={"read_only_tools": ["read_file"]})
        self.assertLessEqual(out["used_tokens"], 400)
        ext = [d for d in out["decisions"] if d["decision"] == "externalized"]
        self.assertEqual([d["index"] for d in ext], [1])
        spill = self.c.reacquire("py-openai", ext[0]["pointer"])
        self.assertEqual(spill["text"], json.dumps(history[1], ensure_ascii=False, separators=(",", ":")))
        self.assertEqual(json.loads(spill["text"]), history[1])

    def test_compact_messages_responses_keeps_reasoning_and_instructions(self):
        reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB" + "q" * 200}
        history = [{"role": "user", "content": "Why does it fail?"}, reasoning,
                   {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read_file",
                    "arguments": "{\"path\":\"a.c\"}"},
                   {"type": "function_call_output", "call_id": "c1", "output": LOG}]
        out = self.c.compact_messages("py-responses", history, 800, format="openai-responses",
                                      instructions="You fix builds.", mode="discovery")
        self.assertEqual(out["instructions"], "You fix builds.")
        self.assertEqual(out["tokenizer"], "o200k_base")
        # The turn in flight: its reasoning goes back as it was returned.
        self.assertEqual(out["messages"][1], reasoning)
        self.assertEqual(out["budget_basis"]["encrypted_state"], "decoded_bytes")
        self.assertEqual(out["decisions"][3]["decision"], "externalized")
        self.assertEqual(out["messages"][3]["output"], out["decisions"][3]["pointer"])
        # Once the user speaks again, the API discards it, and so does compactd.
        later = self.c.compact_messages("py-responses", history + [{"role": "user", "content": "Fix it."}], 800,
                                        format="openai-responses", mode="discovery")
        self.assertNotIn(reasoning, later["messages"])
        self.assertEqual(later["decisions"][1]["reason"], "redundant")

    def test_compact_messages_anthropic_drops_finished_thinking(self):
        def think(t):
            return {"type": "thinking", "thinking": t, "signature": "EqQBCkYIBxgCKkB" + str(len(t))}
        use = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.c"}}
        history = [{"role": "user", "content": "Why does it fail?"},
                   {"role": "assistant", "content": [think("Read a.c first."), use]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "int x;"}]},
                   {"role": "assistant", "content": "x is never set."},
                   {"role": "user", "content": "Fix it."}]
        out = self.c.compact_messages("py-think", history, 100000, format="anthropic", tokenizer="o200k_base")
        self.assertEqual(out["decisions"][1]["thinking_dropped"], 1)
        self.assertEqual(out["messages"][1], {"role": "assistant", "content": [use]})

    def test_compact_messages_narration_sticky_plans_and_breakpoints(self):
        """Narration kept while its read goes (calls_dropped); the session's
        plan extended, then planned again down to its low-water mark
        (low_water); Anthropic breakpoints kept, moved back and placed
        (cache_breakpoints)."""
        def read(i, text):
            return [{"role": "assistant", "content": "Reading f%d.c first." % i, "tool_calls": [
                        {"id": "call_%d" % i, "type": "function",
                         "function": {"name": "read_file", "arguments": '{"path":"f%d.c"}' % i}}]},
                    {"role": "tool", "tool_call_id": "call_%d" % i, "content": text}]
        opts = {"tokenizer": "bytes", "policy": {"read_only_tools": ["read_*"], "keep_last": 1}}
        history = [{"role": "user", "content": "Fix the build."}] + read(1, LOG[:900]) + \
            [{"role": "user", "content": "Go on."}]
        first = self.c.compact_messages("py-sticky", history, 700, **opts)
        self.assertEqual(first["plan"], "fresh")
        self.assertEqual(first["decisions"][1]["calls_dropped"], 1)
        self.assertEqual(first["messages"][1], {"role": "assistant", "content": "Reading f1.c first."})
        self.assertLessEqual(first["used_tokens"], first["low_water"])
        history += [{"role": "assistant", "content": "The build needs f2.c."}]
        again = self.c.compact_messages("py-sticky", history, 700, **opts)
        self.assertEqual(again["plan"], "extended")
        self.assertEqual(again["messages"][:len(first["messages"])], first["messages"])
        history += [{"role": "user", "content": "Read it."}] + read(2, LOG[:400])
        later = self.c.compact_messages("py-sticky", history, 700, **opts)
        self.assertEqual(later["plan"], "recompacted")
        self.assertLessEqual(later["used_tokens"], later["low_water"])
        # Anthropic: the dropped result's breakpoint moves back to the prose
        # that stayed; cache_prefix puts one on the last block.
        turns = [{"role": "user", "content": "Fix the build."},
                 {"role": "assistant", "content": [{"type": "text", "text": "Reading f1.c first."},
                                                   {"type": "tool_use", "id": "t1", "name": "read_file",
                                                    "input": {"path": "f1.c"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": LOG[:900],
                                               "cache_control": {"type": "ephemeral"}}]},
                 {"role": "assistant", "content": "Found it."},
                 {"role": "user", "content": "Fix it."}]
        out = self.c.compact_messages("py-cache", turns, 500, format="anthropic", cache_prefix=True, **opts)
        self.assertEqual(out["cache_breakpoints"], [
            {"from": {"index": 2, "block": 0}, "to": {"message": 1, "block": 0}},
            {"from": None, "to": {"message": len(out["messages"]) - 1, "block": 0}}])
        self.assertEqual(out["messages"][1]["content"],
                         [{"type": "text", "text": "Reading f1.c first.", "cache_control": {"type": "ephemeral"}}])

    def test_compact_messages_anthropic_alternates(self):
        history = [{"role": "user", "content": "Why does it fail?\n" + LOG},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.c"}}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 600}]},
                   {"role": "assistant", "content": "The return value is wrong."},
                   {"role": "user", "content": "Fix it."}]
        out = self.c.compact_messages("py-anthropic", history, 500, format="anthropic", system="You fix builds.",
                                      policy={"read_only_tools": ["read_file"]})
        # The read is derivable, and goes with a hint to run it again.
        dropped = [d for d in out["decisions"] if d["decision"] == "dropped"]
        self.assertTrue(dropped and all(d["reacquire"] == 'read_file {"path":"a.c"}' for d in dropped), out["decisions"])
        self.assertEqual(out["system"], "You fix builds.")
        self.assertEqual([m["role"] for m in out["messages"]],
                         ["user", "assistant", "user", "assistant", "user"][:len(out["messages"])])

    def test_verify_and_verify_messages(self):
        units = [{"key": "rule", "class": "protected", "text": "Never push to main."},
                 {"key": "ledger", "class": "protected", "text": "migration 0042 applied"}]
        v = self.c.verify("py-verify", "Goal: ship. Never push to main.", units, budget=1000, context_tokens=100, dry_run=True)
        self.assertEqual(v["verdict"], "silent_truncation")
        self.assertEqual([m["key"] for m in v["missing"]], ["ledger"])
        self.assertEqual([a["text"] for a in v["repair"]["append"]], ["migration 0042 applied"])
        vm = self.c.verify_messages("py-verify", [{"role": "system", "content": "Never push to main."},
                                                  {"role": "user", "content": "Ship it."}], units,
                                    format="openai", budget=1000, context_tokens=100, dry_run=True)
        self.assertEqual(vm["repair_into"], {"message": 1, "as": "text_blocks_at_end"})
        self.assertEqual(self.c.verify("py-verify", "Never push to main. migration 0042 applied", units)["verdict"], "safe")

    def test_count_tokens(self):
        self.assertEqual(self.c.count_tokens(["hello world", "<|endoftext|>"], "o200k_base"),
                         {"tokenizer": "o200k_base", "counts": [2, 7], "total": 9})
        self.assertEqual(self.c.count_tokens(["é✓"]), {"tokenizer": "bytes", "counts": [5], "total": 5})

    def test_delete_session(self):
        r = self.c.compact_units("py-gone", [{"key": "k", "class": "protected", "text": LOG}], 60)
        pointer = r["externalized"][0]["pointer"]
        self.assertEqual(self.c.reacquire("py-gone", pointer)["text"], LOG)
        self.assertIsNone(self.c.delete_session("py-gone"))
        with self.assertRaises(NotFound) as cm:
            self.c.reacquire("py-gone", pointer)
        self.assertEqual(cm.exception.status, 404)

    # ---- Errors ----

    def test_400_invalid_request_with_path(self):
        with self.assertRaises(InvalidRequest) as cm:
            self.c.compact_units("py-bad", [{"key": "a", "class": "protected", "tokens": -1, "text": "x"}], 10)
        self.assertEqual((cm.exception.status, cm.exception.path), (400, "$.units[0].tokens"))
        with self.assertRaises(InvalidRequest) as cm:
            self.c.count_tokens(["x"], "p50k_base")
        self.assertEqual(cm.exception.path, "$.tokenizer")

    def test_422_compaction_failure_with_required_budget_and_forcing(self):
        with self.assertRaises(CompactionFailure) as cm:
            self.c.compact_units("py-fail", [{"key": "big", "class": "protected", "text": LOG}], 10)
        e = cm.exception
        self.assertEqual((e.status, e.budget, e.key), (422, 10, "big"))
        self.assertEqual(e.required_budget, e.pointer_tokens)
        history = [{"role": "user", "content": "short"}, {"role": "user", "content": LOG}]
        with self.assertRaises(CompactionFailure) as cm:
            self.c.compact_messages("py-fail", history, 20)
        self.assertEqual(cm.exception.forcing, [history[cm.exception.index]])
        # The least plan, part by part, adds up to the budget it names.
        by = cm.exception.required_by
        self.assertEqual(by["system_tokens"] + by["tools_tokens"] + by["reserve_tokens"] + by["marker_tokens"]
                         + sum(m["tokens"] for m in by["messages"]), cm.exception.required_budget, by)
        self.assertIn(cm.exception.index, [m["index"] for m in by["messages"]])
        # And by kind, largest first: the largest is named in the message.
        kinds = cm.exception.kinds
        self.assertEqual(sum(k["tokens"] for k in kinds), cm.exception.required_budget, kinds)
        self.assertEqual(kinds, sorted(kinds, key=lambda k: -k["tokens"]))
        self.assertIn("of it is " + kinds[0]["kind"], str(cm.exception))
        ok = self.c.compact_messages("py-fail", history, cm.exception.required_budget)
        self.assertLessEqual(ok["used_tokens"], cm.exception.required_budget)

    def test_409_ambiguous_with_both_candidates(self):
        ext = self.c.compact_units("py-ambiguous", [{"key": "build.log", "class": "protected", "text": LOG}], 60)["externalized"][0]
        sha = ext["sha256"]
        # A second version sharing the first 16 digits, written into Redis directly
        # (no text has such a digest on purpose).
        twin = sha[:16] + "0" * 48
        self.redis.cli("HSET", "compactd:{default:py-ambiguous}:meta", twin + ":build.log", "protected 3 2024-11-30T12:00:00.000Z")
        self.redis.cli("HSET", "compactd:{default:py-ambiguous}:text", twin + ":build.log", "twin")
        with self.assertRaises(Ambiguous) as cm:
            self.c.get_spill("py-ambiguous", "build.log", sha[:16])
        self.assertEqual((cm.exception.status, sorted(cm.exception.candidates)), (409, sorted([sha, twin])))
        with self.assertRaises(Ambiguous):
            self.c.reacquire("py-ambiguous", ext["pointer"])
        # The reacquire tool tells the model, rather than raising.
        text, is_error = run_reacquire(self.c, "py-ambiguous", {"pointer": ext["pointer"]})
        self.assertTrue(is_error and text.startswith("compactd: "), text)
        self.assertEqual(self.c.get_spill("py-ambiguous", "build.log", sha[:17])["text"], LOG)

    def test_403_forbidden_and_413_payload_too_large(self):
        foreign = Compactd(self.base(), opener=self.recorder, headers={"Origin": "https://attacker.example"})
        with self.assertRaises(Forbidden) as cm:
            foreign.count_tokens(["x"])
        self.assertEqual(cm.exception.status, 403)
        small = harness.Compactd(self.redis.url(), env={"COMPACTD_MAX_BODY_BYTES": "4096"})
        try:
            cl = Compactd("http://127.0.0.1:%d" % small.port, opener=self.recorder)
            with self.assertRaises(PayloadTooLarge) as cm:
                cl.compact_units("py-big", [{"key": "k", "class": "protected", "text": LOG * 4}], 100)
            self.assertEqual(cm.exception.status, 413)
            self.assertEqual(cl.list_spills("py-big"), {"spills": []})
        finally:
            small.stop()

    def test_401_unauthorized(self):
        keyed = harness.Compactd(self.redis.url(), env={"COMPACTD_API_KEYS_FILE": self._keys_file()})
        try:
            url = "http://127.0.0.1:%d" % keyed.port
            with self.assertRaises(Unauthorized) as cm:
                Compactd(url, opener=self.recorder).list_spills("s")
            self.assertEqual(cm.exception.status, 401)
            with self.assertRaises(Unauthorized):
                Compactd(url, api_key="wrong-key-0123456789", opener=self.recorder).count_tokens(["x"])
            self.assertEqual(Compactd(url, api_key="key-one-0123456789abcdef", opener=self.recorder).list_spills("s"),
                             {"spills": []})
        finally:
            keyed.stop()

    def _keys_file(self):
        fd, path = tempfile.mkstemp(prefix="compactd-keys-")
        with os.fdopen(fd, "w") as f:
            f.write("key-one-0123456789abcdef tenant-a\n")
        self.addCleanup(os.unlink, path)
        return path

    def test_503_store_unavailable(self):
        r2 = harness.Redis()
        c2 = harness.Compactd(r2.url(), env={"COMPACTD_REDIS_TIMEOUT_MS": "500", "COMPACTD_REDIS_CONNECT_TIMEOUT_MS": "300"})
        try:
            cl = Compactd("http://127.0.0.1:%d" % c2.port, opener=self.recorder)
            pointer = cl.compact_units("s", [{"key": "k", "class": "protected", "text": LOG}], 60)["externalized"][0]["pointer"]
            r2.stop()
            with self.assertRaises(StoreUnavailable) as cm:
                cl.reacquire("s", pointer)
            self.assertEqual(cm.exception.status, 503)
            # A plan that spills nothing is answered without Redis, saying its
            # log entry is not kept.
            plan = cl.compact_units("s", [{"key": "goal", "class": "protected", "text": "ship it"}], 60)
            self.assertIs(plan["logged"], False)
            chat = cl.compact_messages("s", [{"role": "user", "content": "Go on."}], 4000, format="openai")
            self.assertIs(chat["logged"], False)
        finally:
            c2.stop()

    def test_503_overloaded_with_retry_advice(self):
        limit = 4096
        c3 = harness.Compactd(self.redis.url(), env={"COMPACTD_MAX_BODY_BYTES": str(limit),
                                                     "COMPACTD_MAX_INFLIGHT_BYTES": str(limit)})
        sock = socket.create_connection(("127.0.0.1", c3.port))
        try:
            # A request whose body is on its way holds most of the in-flight budget.
            sock.sendall(b"POST /v1/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n{\"texts\":[\"" % (limit - 100) + b"a" * 3000)
            deadline = time.monotonic() + 10
            while True:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % c3.port) as m:
                    line = [x for x in m.read().decode().splitlines() if x.startswith("compactd_inflight_bytes ")]
                if line and int(line[0].split()[1]) >= 3000:
                    break
                self.assertLess(time.monotonic(), deadline, "the held body never showed in compactd_inflight_bytes")
                time.sleep(0.02)
            cl = Compactd("http://127.0.0.1:%d" % c3.port, opener=self.recorder)
            with self.assertRaises(Overloaded) as cm:
                cl.compact_units("s", [{"key": "k", "class": "redundant", "tokens": 1, "reacquire": "x" * 2000}], 10)
            self.assertEqual((cm.exception.status, cm.exception.retry_after_seconds), (503, 1.0))
        finally:
            sock.close()
            c3.stop()

    def test_transport_error_and_invalid_pointer(self):
        with self.assertRaises(TransportError) as cm:
            Compactd("http://127.0.0.1:%d" % harness.free_port(), timeout=5).list_spills("s")
        self.assertEqual(cm.exception.status, 0)
        self.assertIsInstance(cm.exception, CompactdError)
        with self.assertRaises(InvalidPointer):
            self.c.reacquire("s", "not a pointer")

    # ---- Reacquire tools ----

    def test_tool_definitions_are_plain_json(self):
        self.assertEqual(OPENAI_REACQUIRE_TOOL["function"]["name"], REACQUIRE_TOOL_NAME)
        self.assertEqual(ANTHROPIC_REACQUIRE_TOOL["name"], REACQUIRE_TOOL_NAME)
        self.assertEqual(json.loads(json.dumps(ANTHROPIC_REACQUIRE_TOOL)), ANTHROPIC_REACQUIRE_TOOL)
        self.assertEqual(OPENAI_REACQUIRE_TOOL["function"]["parameters"], ANTHROPIC_REACQUIRE_TOOL["input_schema"])

    def test_tool_definitions_are_the_servers_and_calls_go_through_reacquire(self):
        for fmt, tool in (("openai", OPENAI_REACQUIRE_TOOL), ("anthropic", ANTHROPIC_REACQUIRE_TOOL),
                          ("openai-responses", RESPONSES_REACQUIRE_TOOL)):
            with self.subTest(fmt=fmt):
                self.assertEqual(self.c.tools("any-session", fmt), {"format": fmt, "tools": [tool]})
        with self.assertRaises(InvalidRequest):
            self.c.tools("any-session", "gemini")
        pointer = self.c.compact_units("py-route", [{"key": "build.log", "class": "protected", "text": LOG}], 60)["externalized"][0]["pointer"]
        # OpenAI's arguments string, sent as the model wrote it (spaces included).
        self.assertEqual(self.c.reacquire_call("py-route", '{ "pointer" : %s }' % json.dumps(pointer))["text"], LOG)
        self.assertEqual(self.c.reacquire_call("py-route", {"pointer": pointer})["text"], LOG)
        with self.assertRaises(InvalidRequest) as e:
            self.c.reacquire_call("py-route", '{"pointer": 1}')
        self.assertEqual(e.exception.path, "$.pointer")
        with self.assertRaises(NotFound):
            self.c.reacquire_call("py-other", {"pointer": pointer})
        text, is_error = run_reacquire(self.c, "py-route", "not json")
        self.assertTrue(is_error)
        self.assertTrue(text.startswith("compactd: malformed JSON"), text)
        # Read outside the recorder: the drift check holds recorded answers to every field.
        events = Compactd(self.c.base_url).request("GET", "/v1/sessions/py-route/events")["events"]
        self.assertEqual([e["via"] for e in events if e["kind"] == "reacquire"], ["tool", "tool"])

    def test_the_reacquire_tool_pages_a_long_text(self):
        pointer = self.c.compact_units("py-pages", [{"key": "build.log", "class": "protected", "text": LOG}], 60)["externalized"][0]["pointer"]
        offset, joined, pages = None, "", 0
        while True:
            # As a strict-mode model writes the call: every argument, null where it has none.
            page = self.c.reacquire_call("py-pages", json.dumps({"pointer": pointer, "offset": offset, "max_tokens": 500}))
            self.assertEqual(page["offset"], offset or 0)
            self.assertEqual("note" in page, page["next_offset"] is not None)
            joined += page["text"]
            offset, pages = page["next_offset"], pages + 1
            if offset is None:
                break
        self.assertEqual(joined, LOG)
        self.assertGreater(pages, 2)
        # The glue gives the model the page, then the note saying where to read on.
        text, is_error = run_reacquire(self.c, "py-pages", {"pointer": pointer, "offset": None, "max_tokens": 500})
        self.assertFalse(is_error)
        self.assertTrue(text.startswith(LOG[:100]))
        self.assertRegex(text, r"\n\n\[compactd: this is bytes 0 to \d+ of \d+; \d+ tokens \(bytes\) remain\. "
                               r"Call reacquire again with the same pointer and offset \d+ to read on\.\]$")
        text, is_error = run_reacquire(self.c, "py-pages", {"pointer": pointer, "offset": -1})
        self.assertTrue(is_error)
        self.assertIn("offset", text)

    def test_openai_turn_answers_calls_byte_for_byte(self):
        pointer = self.c.compact_units("py-tool-o", [{"key": "build.log", "class": "protected", "text": LOG}], 60)["externalized"][0]["pointer"]
        calls = [{"id": "c1", "type": "function", "function": {"name": REACQUIRE_TOOL_NAME, "arguments": json.dumps({"pointer": pointer})}},
                 {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}},
                 {"id": "c3", "type": "function", "function": {"name": REACQUIRE_TOOL_NAME,
                                                                 "arguments": "{\"pointer\":\"[externalized nope sha256:0000000000000000]\"}"}}]
        reply = {"role": "assistant", "content": None, "refusal": None, "annotations": [], "tool_calls": calls}
        out = openai_turn(self.c, "py-tool-o", reply, {"grep": lambda a: "grep " + a["q"]})
        self.assertEqual(out[0], reply)
        self.assertEqual([(m["role"], m["tool_call_id"]) for m in out[1:]], [("tool", "c1"), ("tool", "c2"), ("tool", "c3")])
        self.assertEqual(out[1]["content"], LOG)
        self.assertEqual(out[2]["content"], "grep x")
        self.assertTrue(out[3]["content"].startswith("compactd: "))

    def test_anthropic_turn_answers_in_one_user_turn(self):
        pointer = self.c.compact_units("py-tool-a", [{"key": "build.log", "class": "protected", "text": LOG}], 60)["externalized"][0]["pointer"]
        content = [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "redacted_thinking", "data": "ZW5j"},
                   {"type": "text", "text": "Reading.", "citations": None},
                   {"type": "tool_use", "id": "tu1", "name": REACQUIRE_TOOL_NAME, "input": {"pointer": pointer}},
                   {"type": "tool_use", "id": "tu2", "name": "unknown_tool", "input": {}}]
        out = anthropic_turn(self.c, "py-tool-a", content)
        # Thinking comes back as the API returned it: tool use with extended thinking needs it.
        self.assertEqual(out, [
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": LOG},
                                         {"type": "tool_result", "tool_use_id": "tu2",
                                          "content": "no handler for tool unknown_tool", "is_error": True}]}])

        # The turn goes back to compactd as it is, the thinking unchanged and in place.
        history = [{"role": "user", "content": "Why does the build fail?"}] + out
        back = self.c.compact_messages("py-tool-a-back", history, 100000, format="anthropic", tokenizer="bytes")
        self.assertEqual(back["messages"][1]["content"][:2], out[0]["content"][:2])

    def test_turns_keep_every_member_and_block_returned(self):
        # OpenAI: annotations, audio referred to by id as a request does, a custom tool call
        # answered with its raw input.
        reply = {"role": "assistant", "content": None, "refusal": None,
                 "annotations": [{"type": "url_citation", "url_citation": {"url": "https://example.com/a", "title": "A",
                                                                          "start_index": 0, "end_index": 3}}],
                 "audio": {"id": "audio_1", "data": "UklGRg==", "expires_at": 1700000000, "transcript": "Patching."},
                 "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}}]}
        out = openai_turn(self.c, "py-keep-o", reply, {"apply_patch": lambda raw: "applied " + raw})
        self.assertEqual(out, [dict(reply, audio={"id": "audio_1"}),
                               {"role": "tool", "tool_call_id": "c1", "content": "applied *** Begin Patch"}])
        history = [{"role": "user", "content": "Patch it."}] + out
        self.assertEqual(self.c.compact_messages("py-keep-o", history, 100000, format="openai")["messages"], history)
        # Anthropic: thinking, a server tool's call and result, citations, a tool_use's caller.
        content = [{"type": "thinking", "thinking": "Search first.", "signature": "EqQBCkYI"},
                   {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "limit"}},
                   {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                    "content": [{"type": "web_search_result", "url": "https://example.com/r", "title": "R",
                                 "encrypted_content": "EuYB", "page_age": None}]},
                   {"type": "text", "text": "It is 17.",
                    "citations": [{"type": "web_search_result_location", "url": "https://example.com/r", "title": "R",
                                   "encrypted_index": "Eo8B", "cited_text": "RETRY_LIMIT=17"}]},
                   {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.c"},
                    "caller": {"type": "direct"}}]
        turn = anthropic_turn(self.c, "py-keep-a", content, {"read_file": lambda a: "int x;"})
        self.assertEqual(turn, [{"role": "assistant", "content": content},
                                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                                              "content": "int x;"}]}])
        history = [{"role": "user", "content": "What is the limit?"}] + turn
        self.assertEqual(self.c.compact_messages("py-keep-a", history, 100000, format="anthropic")["messages"], history)

    def test_responses_turn_gives_back_the_output_then_an_output_per_call(self):
        pointer = self.c.compact_units("py-tool-r", [{"key": "build.log", "class": "protected", "text": LOG}], 60)["externalized"][0]["pointer"]
        output = [
            {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Read it back."}],
             "encrypted_content": "gAAAAB" + "z" * 40},
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]},
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": REACQUIRE_TOOL_NAME,
             "arguments": json.dumps({"pointer": pointer})},
            {"id": "fc_2", "type": "function_call", "status": "completed", "call_id": "call_2", "name": "grep",
             "arguments": "{\"q\":\"x\"}"},
            {"id": "ctc_1", "type": "custom_tool_call", "status": "completed", "call_id": "call_3", "name": "patch",
             "input": "*** raw ***"},
            {"id": "fc_3", "type": "function_call", "status": "completed", "call_id": "call_4", "name": "unknown_tool",
             "arguments": "{}"},
            {"id": "fc_4", "type": "function_call", "status": "completed", "call_id": "call_5", "name": REACQUIRE_TOOL_NAME,
             "arguments": "{\"pointer\":\"[externalized nope sha256:0000000000000000]\"}"},
        ]
        out = responses_turn(self.c, "py-tool-r", output,
                             {"grep": lambda a: "grep " + a["q"], "patch": lambda raw: "patched " + raw})
        self.assertEqual(out[:len(output)], output)
        self.assertEqual(out[len(output):-1], [
            {"type": "function_call_output", "call_id": "call_1", "output": LOG},
            {"type": "function_call_output", "call_id": "call_2", "output": "grep x"},
            {"type": "custom_tool_call_output", "call_id": "call_3", "output": "patched *** raw ***"},
            {"type": "function_call_output", "call_id": "call_4", "output": "no handler for tool unknown_tool"}])
        self.assertEqual((out[-1]["call_id"], out[-1]["output"][:10]), ("call_5", "compactd: "))
        # The items go back to compactd as they are: the reasoning stays whole and in place.
        history = [{"role": "user", "content": "Why does the build fail?"}] + out
        back = self.c.compact_messages("py-tool-r-back", history, 100000, format="openai-responses")
        self.assertEqual(back["messages"], history)

    # ---- Drift between the server and openapi.yaml ----

    def test_zz_answers_match_the_spec_both_ways(self):
        # Named to run last: it checks what every other test recorded.
        self.assertGreater(exchanges.check(self.recorder.exchanges), 30)

    def test_zz_drift_check_fails_on_a_spec_that_gains_or_loses_a_field(self):
        with open(exchanges.SPEC_PATH, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        recorded = self.recorder.exchanges
        # A field the spec gains and the server does not send: coverage fails.
        gained = copy.deepcopy(doc)
        gained["components"]["schemas"]["CompactResult"]["properties"]["added_in_spec"] = {"type": "string"}
        with self.assertRaisesRegex(AssertionError, r"never sent by the server: CompactResult\.added_in_spec"):
            exchanges.check(recorded, self._write_spec(gained))
        # The same for an object declared inline, and for the oneOf branch a value matches.
        inline = copy.deepcopy(doc)
        inline["components"]["schemas"]["MessagesVerifyResult"]["properties"]["repair_into"]["properties"]["added_inline"] = {"type": "string"}
        with self.assertRaisesRegex(AssertionError, r"never sent by the server: MessagesVerifyResult\.repair_into\.added_inline"):
            exchanges.check(recorded, self._write_spec(inline))
        branch = copy.deepcopy(doc)
        branch["components"]["schemas"]["RepairItem"]["oneOf"][0]["properties"]["added_in_branch"] = {"type": "string"}
        with self.assertRaisesRegex(AssertionError, r"never sent by the server: RepairItem/oneOf/0\.added_in_branch"):
            exchanges.check(recorded, self._write_spec(branch))
        tool = copy.deepcopy(doc)
        tool["components"]["schemas"]["ResponsesFunctionTool"]["properties"]["added_to_tool"] = {"type": "string"}
        with self.assertRaisesRegex(AssertionError, r"never sent by the server: ResponsesFunctionTool\.added_to_tool"):
            exchanges.check(recorded, self._write_spec(tool))
        # A field the server sends and the spec loses: strict validation fails.
        lost = copy.deepcopy(doc)
        del lost["components"]["schemas"]["Spill"]["properties"]["created_at"]
        lost["components"]["schemas"]["Spill"]["required"].remove("created_at")
        with self.assertRaisesRegex(AssertionError, r"created_at"):
            exchanges.check(recorded, self._write_spec(lost))
        # An object left open would let such a field through: refused up front.
        opened = copy.deepcopy(doc)
        del opened["components"]["schemas"]["TokensResult"]["additionalProperties"]
        with self.assertRaisesRegex(AssertionError, r"without additionalProperties: false: TokensResult"):
            exchanges.check(recorded, self._write_spec(opened))

    def _write_spec(self, doc):
        fd, path = tempfile.mkstemp(prefix="compactd-openapi-", suffix=".yaml")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, allow_unicode=True, sort_keys=False)
        self.addCleanup(os.unlink, path)
        return path



class AttemptLog:
    """An opener that records each attempt's Idempotency-Key and status."""

    def __init__(self):
        self.opener = urllib.request.build_opener()
        self.attempts = []

    def open(self, req, timeout=None):
        key = req.get_header("Idempotency-key")
        try:
            resp = self.opener.open(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            self.attempts.append((key, e.code))
            raise
        self.attempts.append((key, resp.status))
        return resp


class PausedRedisTest(unittest.TestCase):
    """A real compactd of its own per test, whose Redis a test may pause (SIGSTOP)."""

    def setUp(self):
        self.redis = harness.Redis()
        self.server = harness.Compactd(self.redis.url())
        self.base = "http://127.0.0.1:%d" % self.server.port

    def tearDown(self):
        if self.redis.proc and self.redis.proc.poll() is None:
            self.redis.proc.send_signal(signal.SIGCONT)
        harness.stop_all(self.server, self.redis)


class RetryTest(PausedRedisTest):
    """Timeouts and retries against a real compactd whose Redis is paused."""

    def spill_units(self, text):
        return [{"key": "log", "class": "protected", "tokens": 1000, "text": text},
                {"key": "note", "class": "derivable", "tokens": 5}]

    def compactions(self, session):
        events = Compactd(self.base).request("GET", "/v1/sessions/%s/events" % session)["events"]
        return [e for e in events if e["kind"] == "compact"]

    def test_store_unavailable_compaction_retried_with_one_key_until_redis_is_back(self):
        log = AttemptLog()
        c = Compactd(self.base, opener=log, max_retries=8, backoff=0.3, max_backoff=1.0)
        self.redis.proc.send_signal(signal.SIGSTOP)
        out = {}
        worker = threading.Thread(target=lambda: out.update(r=c.compact_units("py-retry", self.spill_units("kept"), 100)))
        worker.start()
        self.assertTrue(harness.wait_until(lambda: any(s == 503 for _, s in log.attempts), 10, 0.05), log.attempts)
        self.redis.proc.send_signal(signal.SIGCONT)
        worker.join(30)
        self.assertEqual(out["r"]["externalized"][0]["key"], "log")
        self.assertGreaterEqual(len(log.attempts), 2)
        self.assertEqual(log.attempts[-1][1], 200)
        keys = {k for k, _ in log.attempts}
        self.assertEqual(len(keys), 1, log.attempts)
        self.assertIsNotNone(keys.pop())
        self.assertEqual(len(self.compactions("py-retry")), 1)

    def test_no_retry_when_disabled_and_never_on_4xx(self):
        log = AttemptLog()
        c = Compactd(self.base, opener=log, max_retries=0, backoff=0.1)
        self.redis.proc.send_signal(signal.SIGSTOP)
        with self.assertRaises(StoreUnavailable):
            c.compact_units("py-noretry", self.spill_units("x"), 100)
        self.assertEqual([s for _, s in log.attempts], [503])
        self.redis.proc.send_signal(signal.SIGCONT)
        log.attempts.clear()
        c = Compactd(self.base, opener=log, max_retries=3, backoff=0.1)
        with self.assertRaises(InvalidRequest):
            c.compact_units("py-noretry", [], -1)
        self.assertEqual([s for _, s in log.attempts], [400])

    def test_callers_key_is_sent_and_a_fresh_one_per_call(self):
        log = AttemptLog()
        c = Compactd(self.base, opener=log)
        c.compact_units("py-keys", self.spill_units("a"), 100, idempotency_key="mine-1")
        c.compact_units("py-keys", self.spill_units("b"), 100)
        c.compact_units("py-keys", self.spill_units("c"), 100)
        keys = [k for k, _ in log.attempts]
        self.assertEqual(keys[0], "mine-1")
        self.assertNotEqual(keys[1], keys[2])

    def test_timeout_is_a_typed_error(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)  # accepts, never answers
        try:
            c = Compactd("http://127.0.0.1:%d" % listener.getsockname()[1], timeout=0.3, max_retries=1, backoff=0.05)
            t0 = time.monotonic()
            with self.assertRaises(Timeout):
                c.count_tokens(["x"])
            self.assertLess(time.monotonic() - t0, 3)
        finally:
            listener.close()

    def test_overloaded_honours_retry_after(self):
        answers = []
        srv = overloaded_server(answers)
        try:
            c = Compactd("http://127.0.0.1:%d" % srv.server_port, backoff=0.01)
            self.assertEqual(c.count_tokens(["x"]), {"texts": []})
            check_retried_after(self, answers)
        finally:
            srv.shutdown()
            srv.server_close()


def overloaded_server(answers, chunked=False):
    """A server that answers two POSTs 503 Overloaded with Retry-After: 1, then {"texts": []}
    (in chunks when `chunked`); each POST's time and Idempotency-Key go into `answers`."""

    class Overload(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            answers.append((time.monotonic(), self.headers.get("Idempotency-Key")))
            busy = len(answers) < 3
            body = b'{"error":{"type":"Overloaded","message":"busy"}}' if busy else b'{"texts":[]}'
            self.send_response(503 if busy else 200)
            if busy:
                self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "application/json")
            if chunked and not busy:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for k in range(0, len(body), 5):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(body[k:k + 5]), body[k:k + 5]))
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Overload)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def check_retried_after(test, answers):
    """Three attempts, each retry at least the Retry-After of one second after the one before."""
    test.assertEqual(len(answers), 3)
    test.assertGreaterEqual(answers[1][0] - answers[0][0], 0.95)
    test.assertGreaterEqual(answers[2][0] - answers[1][0], 0.95)


if __name__ == "__main__":
    unittest.main()
