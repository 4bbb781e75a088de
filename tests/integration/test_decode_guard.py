"""One shape guard for every route: /mcp and /messages/verify are scanned
before any parse tree is built, against the same limits as /compact, and the
JSON text of a tool call's arguments counts against the same value count as
the body it came in. And a NUL inside a name that must be one of a set (the
JSON-RPC version, an MCP method or tool, a chat role, a part or block type)
is refused, never read as the name before it."""

import json
import unittest

from harness import Compactd, Redis, ServerTest, stop_all
from test_hostile import vm_kib
from test_memory import under_asan


def rpc(method, id_=1, **params):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params:
        msg["params"] = params
    return msg


def many_values(n, per_array=1000):
    """JSON text of n empty arrays in arrays of per_array: no array is longer
    than the unit limit, so only the count of values can refuse it."""
    chunk = "[" + ",".join(["[]"] * per_array) + "]"
    return "[" + ",".join([chunk] * (n // per_array)) + "]"


def openai_history(arguments):
    return [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "f", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "user", "content": "go"}]


def verify_body(arguments):
    return {"format": "openai", "messages": openai_history(arguments),
            "units": [{"key": "k", "class": "protected", "text": "hi"}]}


class SmallUnitLimit(ServerTest):
    """With COMPACTD_MAX_UNITS=100 a request may hold 16 + 21 * 100 values.
    (The batch limit of its own, COMPACTD_MCP_MAX_BATCH, is raised past it
    here, so that the unit limit is the one met.)"""

    compactd_env = {"COMPACTD_MAX_UNITS": "100", "COMPACTD_MCP_MAX_BATCH": "1000"}

    def test_mcp_is_refused_past_the_value_count_before_it_is_parsed(self):
        body = json.dumps(rpc("tools/call", name="compact",
                              arguments={"session": "s", "budget": 1,
                                         "units": json.loads(many_values(3000, 50))}))
        r = self.http.post("/mcp", body.encode(), raw=True)
        self.assertEqual(r.status, 400, r.body)
        self.assertEqual(r.json["error"]["code"], -32600)
        self.assertIn("COMPACTD_MAX_UNITS", r.json["error"]["message"])

    def test_mcp_is_refused_past_the_nesting_limit(self):
        deep = b"[" * 200 + b"]" * 200
        body = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"compact",'
                b'"arguments":{"x":' + deep + b"}}}")
        r = self.http.post("/mcp", body, raw=True)
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("deeper", r.json["error"]["message"])

    def test_mcp_batch_longer_than_the_unit_limit_is_refused(self):
        body = json.dumps([rpc("ping", i) for i in range(101)]).encode()
        r = self.http.post("/mcp", body, raw=True)
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("COMPACTD_MAX_UNITS", r.json["error"]["message"])
        ok = self.http.post("/mcp", json.dumps([rpc("ping", i) for i in range(100)]).encode(),
                            raw=True)
        self.assertEqual(ok.status, 200, ok.body)

    def test_verify_counts_the_arguments_json_against_the_request(self):
        r = self.http.post("/v1/sessions/g/messages/verify",
                           verify_body(many_values(3000, 50)))
        err = self.assertError(r, 400, "InvalidRequest", "$.messages[1]")
        self.assertIn("COMPACTD_MAX_UNITS", err["message"])
        deep = "[" * 40 + "]" * 40
        r = self.http.post("/v1/sessions/g/messages/verify", verify_body(deep))
        err = self.assertError(r, 400, "InvalidRequest", "$.messages[1]")
        self.assertIn("deeper", err["message"])
        # Arguments within the count are still read as the tool reads them.
        r = self.http.post("/v1/sessions/g/messages/verify",
                           verify_body(json.dumps({"path": "hi"})))
        self.assertEqual(r.status, 200, r.body)

    def test_chat_routes_hold_the_same_value_count(self):
        # 2116 values in all: a chat body past them is refused unparsed,
        # however short each of its arrays.
        history = []
        for _ in range(10):
            history += [{"role": "user", "content": [{"type": "text", "text": "t"}] * 90},
                        {"role": "assistant", "content": "a"}]
        body = {"format": "openai", "budget": 1000, "messages": history}
        r = self.http.post("/v1/sessions/g/messages/compact", body)
        err = self.assertError(r, 400, "InvalidRequest")
        self.assertIn("COMPACTD_MAX_UNITS", err["message"])


class LargeBodies(unittest.TestCase):
    """Peak memory stays near the body's size for the largest bodies."""

    def test_large_mcp_and_verify_bodies_do_not_become_parse_trees(self):
        redis = Redis()
        server = Compactd(redis.url())
        try:
            http = server.client(timeout=60)
            before = vm_kib(server.proc.pid, "VmHWM")
            # 3 million values (about 8 MiB): past 16 + 21 * 100000.
            mcp = json.dumps(rpc("tools/call", name="compact",
                                 arguments={"x": json.loads(many_values(3000000))}))
            r = http.post("/mcp", mcp.encode(), raw=True)
            self.assertEqual(r.status, 400, r.body[:200])
            r = http.post("/v1/sessions/big/messages/verify",
                          verify_body(many_values(3000000)))
            self.assertEqual(r.status, 400, r.body[:200])
            self.assertIn("COMPACTD_MAX_UNITS", r.json["error"]["message"])
            grown = vm_kib(server.proc.pid, "VmHWM") - before
            # As parse trees the two would take about 300 MiB each. (Not
            # under ASan, whose quarantine keeps freed memory resident.)
            if not under_asan(server.proc.pid):
                self.assertLess(grown, 96 * 1024, "peak memory grew by %d KiB" % grown)
        finally:
            stop_all(server, redis)


class NulInNames(ServerTest):

    def test_mcp_names_with_a_nul_are_400(self):
        bodies = [
            b'{"jsonrpc":"2.0\\u0000","id":1,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":1,"method":"ping\\u0000x"}',
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call\\u0000","params":'
            b'{"name":"list_spills","arguments":{"session":"s"}}}',
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
            b'{"name":"list_spills\\u0000x","arguments":{"session":"s"}}}',
        ]
        for body in bodies:
            with self.subTest(body=body):
                r = self.http.post("/mcp", body, raw=True)
                self.assertEqual(r.status, 400, r.body)
                self.assertEqual(r.json["error"]["code"], -32600)
        # The same without the NUL works.
        r = self.http.post("/mcp", rpc("ping"))
        self.assertEqual(r.status, 200, r.body)

    def test_chat_names_with_a_nul_are_400(self):
        openai = [{"role": "user", "content": "hi"}]
        anthropic = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        cases = [
            ("openai", [{"role": "user\u0000x", "content": "hi"}], "$.messages[0].role"),
            ("openai", [{"role": "user", "content": [{"type": "text\u0000x", "text": "hi"}]}],
             "$.messages[0].content[0].type"),
            ("anthropic", [{"role": "user\u0000x", "content": "hi"}], "$.messages[0].role"),
            ("anthropic", [{"role": "user", "content": [{"type": "text\u0000x", "text": "hi"}]}],
             "$.messages[0].content[0].type"),
            ("openai\u0000", openai, "$.format"),
        ]
        for fmt, messages, path in cases:
            with self.subTest(format=fmt, messages=messages):
                r = self.http.post("/v1/sessions/n/messages/compact",
                                   {"format": fmt, "budget": 1000, "messages": messages})
                self.assertError(r, 400, "InvalidRequest", path)
        for fmt, messages in [("openai", openai), ("anthropic", anthropic)]:
            r = self.http.post("/v1/sessions/n/messages/compact",
                               {"format": fmt, "budget": 1000, "messages": messages})
            self.assertEqual(r.status, 200, r.body)


if __name__ == "__main__":
    unittest.main()
