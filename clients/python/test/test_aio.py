"""The asyncio client (compactd.aio) against a real compactd and redis-server: the
operations and their answers equal to the blocking client's, the typed errors, many
concurrent calls over one client, the turns with coroutine handlers, and the retries and
timeouts of the blocking client (a compaction refused while Redis is paused retried with one
Idempotency-Key and logged once; Retry-After honoured; an answer in chunks read whole)."""

import asyncio
import json
import os
import signal
import socket
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
from compactd import (REACQUIRE_TOOL_NAME, Compactd, CompactionFailure, InvalidPointer, InvalidRequest,  # noqa: E402
                      NotFound, StoreUnavailable, Timeout, TransportError)
from compactd.aio import AsyncCompactd, anthropic_turn, openai_turn, responses_turn, run_reacquire  # noqa: E402
from test_client import PausedRedisTest, check_retried_after, overloaded_server  # noqa: E402

LOG = "make: *** [Makefile:42: billing.o] Error 1\r\n\tsrc/billing/invoice.c:88: é ✓ 🚀 \"quoted\" \\ {\"a\":1}\n" * 40


def run(coro):
    return asyncio.run(coro)


class AsyncClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = harness.Redis()
        cls.server = harness.Compactd(cls.redis.url())
        cls.base = "http://127.0.0.1:%d" % cls.server.port
        cls.sync = Compactd(cls.base)

    @classmethod
    def tearDownClass(cls):
        harness.stop_all(cls.server, cls.redis)

    def test_operations_answer_what_the_blocking_client_answers(self):
        async def go():
            c = AsyncCompactd(self.base)
            r = await c.compact_units("aio-units", [{"key": "task", "class": "protected", "text": "Never push."},
                                                    {"key": "log", "class": "protected", "text": LOG}], 60)
            ext = r["externalized"][0]
            spill = await c.reacquire("aio-units", ext["pointer"])
            self.assertEqual(spill["text"], LOG)
            self.assertEqual(await c.get_spill("aio-units", "log"), self.sync.get_spill("aio-units", "log"))
            self.assertEqual(await c.list_spills("aio-units"), self.sync.list_spills("aio-units"))
            self.assertEqual(await c.count_tokens(["héllo"], "o200k_base"), self.sync.count_tokens(["héllo"], "o200k_base"))
            self.assertEqual(await c.tools("aio-units", "anthropic"), self.sync.tools("aio-units", "anthropic"))
            page = await c.reacquire_call("aio-units", json.dumps({"pointer": ext["pointer"], "max_tokens": 50}))
            self.assertTrue(LOG.startswith(page["text"]) and "note" in page)
            units = [{"key": "task", "class": "protected", "text": "Never push."}]
            self.assertEqual(await c.verify("aio-units", "Never push.", units),
                             self.sync.verify("aio-units", "Never push.", units))
            history = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Why?\n" + LOG}]
            out = await c.compact_messages("aio-msgs", history, 4000, format="anthropic", tokenizer="bytes")
            self.assertEqual(out["system"], "Be terse.")
            self.assertEqual(out["decisions"][0]["decision"], "externalized")
            vm = await c.verify_messages("aio-msgs", out["messages"], [], format="anthropic")
            self.assertIn("verdict", vm)
            self.assertIsNone(await c.delete_session("aio-units"))
            with self.assertRaises(NotFound):
                await c.get_spill("aio-units", "log")
        run(go())

    def test_errors_are_the_typed_errors(self):
        async def go():
            c = AsyncCompactd(self.base)
            with self.assertRaises(InvalidRequest) as cm:
                await c.compact_units("aio-bad", [], -1)
            self.assertEqual(cm.exception.path, "$.budget")
            with self.assertRaises(CompactionFailure) as cm:
                await c.compact_messages("aio-422", [{"role": "system", "content": "s"},
                                                     {"role": "user", "content": LOG}], 10,
                                         format="anthropic", tokenizer="bytes")
            self.assertEqual(cm.exception.forcing, [{"role": "user", "content": LOG}])
            self.assertGreater(cm.exception.required_budget, 10)
            with self.assertRaises(InvalidPointer):
                await c.reacquire("aio-bad", "not a pointer")
            closed = socket.socket()
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
            closed.close()
            with self.assertRaises(TransportError) as cm:
                await AsyncCompactd("http://127.0.0.1:%d" % port, max_retries=0).count_tokens(["x"])
            self.assertEqual(cm.exception.status, 0)
        run(go())
        with self.assertRaises(ValueError):
            AsyncCompactd("ftp://example.com")

    def test_concurrent_calls_over_one_client(self):
        async def go():
            c = AsyncCompactd(self.base)
            texts = ["%d %s" % (i, LOG) for i in range(24)]
            answers = await asyncio.gather(*(c.compact_units("aio-many-%d" % i, [
                {"key": "log", "class": "protected", "text": t}], 60) for i, t in enumerate(texts)))
            back = await asyncio.gather(*(c.reacquire("aio-many-%d" % i, a["externalized"][0]["pointer"])
                                          for i, a in enumerate(answers)))
            self.assertEqual([b["text"] for b in back], texts)
        run(go())

    def test_a_large_answer_comes_whole(self):
        big = "x" * (3 << 20) + "é"

        async def go():
            c = AsyncCompactd(self.base)
            r = await c.compact_units("aio-big", [{"key": "big", "class": "protected", "text": big}], 60)
            return (await c.reacquire("aio-big", r["externalized"][0]["pointer"]))["text"]
        self.assertEqual(run(go()), big)

    def test_turns_answer_with_coroutine_handlers(self):
        async def read_file(args):
            await asyncio.sleep(0)
            return "read " + args["path"]

        async def go():
            c = AsyncCompactd(self.base)
            pointer = (await c.compact_units("aio-turn", [{"key": "log", "class": "protected", "text": LOG}],
                                             60))["externalized"][0]["pointer"]
            reply = {"role": "assistant", "content": None, "refusal": None, "annotations": [], "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": REACQUIRE_TOOL_NAME,
                                                              "arguments": json.dumps({"pointer": pointer})}},
                {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.c"}'}},
                {"id": "c3", "type": "custom", "custom": {"name": "patch", "input": "raw"}}]}
            out = await openai_turn(c, "aio-turn", reply, {"read_file": read_file, "patch": lambda raw: "ok " + raw})
            self.assertEqual(out, [reply, {"role": "tool", "tool_call_id": "c1", "content": LOG},
                                   {"role": "tool", "tool_call_id": "c2", "content": "read a.c"},
                                   {"role": "tool", "tool_call_id": "c3", "content": "ok raw"}])
            content = [{"type": "text", "text": "Reading.", "citations": None},
                       {"type": "tool_use", "id": "tu1", "name": REACQUIRE_TOOL_NAME, "input": {"pointer": pointer}},
                       {"type": "tool_use", "id": "tu2", "name": "nope", "input": {}}]
            turn = await anthropic_turn(c, "aio-turn", content)
            self.assertEqual(turn, [{"role": "assistant", "content": content},
                                    {"role": "user", "content": [
                                        {"type": "tool_result", "tool_use_id": "tu1", "content": LOG},
                                        {"type": "tool_result", "tool_use_id": "tu2",
                                         "content": "no handler for tool nope", "is_error": True}]}])
            output = [{"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read_file",
                       "arguments": '{"path":"b.c"}', "status": "completed"}]
            items = await responses_turn(c, "aio-turn", output, {"read_file": read_file})
            self.assertEqual(items, output + [{"type": "function_call_output", "call_id": "call_1", "output": "read b.c"}])
            text, is_error = await run_reacquire(c, "aio-turn", {"pointer": "[externalized nope sha256:0000000000000000]"})
            self.assertTrue(is_error and text.startswith("compactd: "))
        run(go())


class Recording(AsyncCompactd):
    """Records each attempt's Idempotency-Key and what it ended in."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.attempts = []

    async def _send(self, method, path, body, raw_body, extra):
        key = extra.get("Idempotency-Key")
        try:
            out = await super()._send(method, path, body, raw_body, extra)
        except Exception as e:
            self.attempts.append((key, type(e).__name__))
            raise
        self.attempts.append((key, "ok"))
        return out


class AsyncRetryTest(PausedRedisTest):

    def test_store_unavailable_compaction_retried_with_one_key_until_redis_is_back(self):
        c = Recording(self.base, max_retries=8, backoff=0.3, max_backoff=1.0)
        units = [{"key": "log", "class": "protected", "tokens": 1000, "text": "kept"},
                 {"key": "note", "class": "derivable", "tokens": 5}]

        async def go():
            task = asyncio.ensure_future(c.compact_units("aio-retry", units, 100))
            while not any(s == "StoreUnavailable" for _, s in c.attempts):
                await asyncio.sleep(0.05)
            self.redis.proc.send_signal(signal.SIGCONT)
            return await task
        self.redis.proc.send_signal(signal.SIGSTOP)
        out = run(go())
        self.assertEqual(out["externalized"][0]["key"], "log")
        self.assertEqual(c.attempts[-1][1], "ok")
        self.assertEqual(len({k for k, _ in c.attempts}), 1, c.attempts)
        events = Compactd(self.base).request("GET", "/v1/sessions/aio-retry/events")["events"]
        self.assertEqual(len([e for e in events if e["kind"] == "compact"]), 1)

    def test_no_retry_when_disabled(self):
        c = Recording(self.base, max_retries=0)
        self.redis.proc.send_signal(signal.SIGSTOP)
        with self.assertRaises(StoreUnavailable):
            run(c.compact_units("aio-noretry", [{"key": "log", "class": "protected", "tokens": 1000, "text": "x"}], 100))
        self.assertEqual([s for _, s in c.attempts], ["StoreUnavailable"])

    def test_timeout_is_a_typed_error(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)  # accepts, never answers
        try:
            c = Recording("http://127.0.0.1:%d" % listener.getsockname()[1], timeout=0.3, max_retries=1, backoff=0.05)
            with self.assertRaises(Timeout):
                run(c.count_tokens(["x"]))
            self.assertEqual([s for _, s in c.attempts], ["Timeout"])
            c.attempts.clear()
            with self.assertRaises(Timeout):
                run(c.list_spills("s"))
            # A read is safe to resend: one retry, then the Timeout.
            self.assertEqual([s for _, s in c.attempts], ["Timeout", "Timeout"])
        finally:
            listener.close()

    def test_overloaded_honours_retry_after_and_chunks_are_read_whole(self):
        answers = []
        srv = overloaded_server(answers, chunked=True)
        try:
            c = AsyncCompactd("http://127.0.0.1:%d" % srv.server_port, backoff=0.01)
            self.assertEqual(run(c.count_tokens(["x"])), {"texts": []})
            check_retried_after(self, answers)
        finally:
            srv.shutdown()
            srv.server_close()


if __name__ == "__main__":
    unittest.main()
