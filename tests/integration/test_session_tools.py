"""The reacquire tool for the model, per session: GET .../tools (its
definition in a provider's tool schema), POST .../reacquire (a call of it)
and POST .../mcp (MCP bound to the session): answers, errors that change
nothing, API keys and the Host and Origin checks."""

import hashlib
import json
import os
import signal
import threading
import unittest

from harness import VALGRIND, Compactd, Redis, ServerTest, stop_all
from test_tenants import KEY_A, KEY_B, write_keys_file

TRICKY = "é ü 中文 🚀 \u0000\u0001\u001f\u007f \\ \" ' </script> \r\n end"
FORMATS = ("openai", "anthropic", "openai-responses")


def spill_units(text):
    return [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
            {"key": "build.log", "class": "protected", "tokens": 100000, "text": text}]


def pointer_of(text, key="build.log"):
    return "[externalized %s sha256:%s]" % (key, hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])


def rpc(method, params=None, id=1):
    msg = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def reacquire_call(arguments):
    return rpc("tools/call", {"name": "reacquire", "arguments": arguments})


class SessionTools(ServerTest):
    def setUp(self):
        r = self.http.compact("s", spill_units(TRICKY), 200)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["externalized"][0]["pointer"], pointer_of(TRICKY))

    def events(self, session="s"):
        r = self.http.get("/v1/sessions/%s/events" % session)
        self.assertEqual(r.status, 200, r.body)
        return r.json["events"]

    def definition(self, fmt):
        r = self.http.get("/v1/sessions/s/tools?format=" + fmt)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["format"], fmt)
        self.assertEqual(len(r.json["tools"]), 1)
        return r.json["tools"][0]

    def test_each_format_wraps_the_per_session_mcp_reacquire_tool(self):
        mcp = self.http.post("/v1/sessions/s/mcp", rpc("tools/list"))
        self.assertEqual(mcp.status, 200, mcp.body)
        tool = [t for t in mcp.json["result"]["tools"] if t["name"] == "reacquire"][0]
        openai, anthropic, responses = (self.definition(f) for f in FORMATS)
        self.assertEqual(sorted(openai), ["function", "type"])
        self.assertEqual(openai["type"], "function")
        self.assertEqual(sorted(anthropic), ["description", "input_schema", "name"])
        self.assertEqual(sorted(responses), ["description", "name", "parameters", "strict", "type"])
        for name, desc, schema in ((openai["function"]["name"], openai["function"]["description"],
                                    openai["function"]["parameters"]),
                                   (anthropic["name"], anthropic["description"], anthropic["input_schema"]),
                                   (responses["name"], responses["description"], responses["parameters"])):
            self.assertEqual(name, "reacquire")
            self.assertEqual(desc, tool["description"])
            self.assertIn("[externalized build.log sha256:5d1e0a3b9c7f2e41]", desc)
            # Strict mode: every property required, the page's as nullable.
            self.assertEqual(schema["required"], ["pointer", "offset", "max_tokens"])
            self.assertEqual(list(schema["properties"]), ["pointer", "offset", "max_tokens"])
            self.assertIs(schema["additionalProperties"], False)
            # OpenAI's strict mode refuses minLength (and, once, minimum).
            self.assertNotIn("minLength", schema["properties"]["pointer"])
            for name in ("offset", "max_tokens"):
                self.assertEqual(schema["properties"][name]["type"], ["integer", "null"])
                self.assertNotIn("minimum", schema["properties"][name])
        self.assertIs(openai["function"]["strict"], True)
        self.assertIs(responses["strict"], True)

    def test_a_bad_format_is_refused_naming_it(self):
        for query in ("", "?format=", "?format=OpenAI", "?format=gemini", "?fmt=openai"):
            with self.subTest(query=query):
                err = self.assertError(self.http.get("/v1/sessions/s/tools" + query), 400, "InvalidRequest")
                self.assertIn("format", err["message"])

    def test_a_tool_call_round_trip_returns_the_exact_bytes_and_is_logged(self):
        before = len(self.events())
        # The arguments as OpenAI hands them over: a JSON string, sent as it is.
        args = json.dumps({"pointer": pointer_of(TRICKY)})
        r = self.http.post("/v1/sessions/s/reacquire", args.encode("utf-8"), raw=True)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["text"], TRICKY)
        self.assertEqual(r.json["sha256"], hashlib.sha256(TRICKY.encode("utf-8")).hexdigest())
        events = self.events()
        self.assertEqual(len(events), before + 1)
        self.assertEqual((events[-1]["kind"], events[-1]["via"], events[-1]["key"]),
                         ("reacquire", "tool", "build.log"))
        # Surrounding white space, as a model may quote it, is ignored.
        r = self.http.post("/v1/sessions/s/reacquire", {"pointer": "  " + pointer_of(TRICKY) + "\n"})
        self.assertEqual(r.json["text"], TRICKY)

    def test_bad_arguments_are_400_naming_the_field_and_change_nothing(self):
        keys, n_events = sorted(self.redis.keys()), len(self.events())
        cases = [({}, "$.pointer"), ({"pointer": 7}, "$.pointer"), ({"pointer": None}, "$.pointer"),
                 ({"pointer": ""}, "$.pointer"), ({"pointer": "build.log"}, "$.pointer"),
                 ({"pointer": "[externalized build.log sha256:XYZ]"}, "$.pointer"),
                 ({"pointer": pointer_of(TRICKY)[:-1]}, "$.pointer"),
                 ({"pointer": pointer_of(TRICKY), "session": "s"}, "$.session"),
                 ({"key": "build.log", "sha256": "0" * 16}, "$.key"),
                 ([pointer_of(TRICKY)], "$"), ("just text", "$")]
        for body, path in cases:
            with self.subTest(body=body):
                self.assertError(self.http.post("/v1/sessions/s/reacquire", body), 400, "InvalidRequest", path)
        for raw in (b"", b"{", b'{"pointer": "a", "pointer": "b"}'):
            with self.subTest(raw=raw):
                self.assertError(self.http.post("/v1/sessions/s/reacquire", raw, raw=True), 400, "InvalidRequest")
        r = self.http.post("/v1/sessions/s/reacquire", b'{"pointer":"x"}', raw=True,
                           headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "UnsupportedMediaType")
        self.assertError(self.http.post("/v1/sessions/b%20ad/reacquire", {"pointer": pointer_of(TRICKY)}),
                         400, "InvalidRequest")
        self.assertEqual(sorted(self.redis.keys()), keys)
        self.assertEqual(len(self.events()), n_events)

    def test_a_pointer_this_session_does_not_hold_is_404(self):
        other = self.http.compact("t", spill_units("the other session's log"), 200)
        self.assertEqual(other.status, 200, other.body)
        for session, pointer in (("s", pointer_of("the other session's log")),
                                 ("t", pointer_of(TRICKY)), ("never-used", pointer_of(TRICKY)),
                                 ("s", pointer_of(TRICKY, key="other.log"))):
            with self.subTest(session=session, pointer=pointer):
                r = self.http.post("/v1/sessions/%s/reacquire" % session, {"pointer": pointer})
                self.assertError(r, 404, "NotFound")
                self.assertNotIn("the other session", r.body.decode())

    def test_the_session_mcp_endpoint_offers_two_tools_bound_to_its_session(self):
        r = self.http.post("/v1/sessions/s/mcp", rpc("initialize", {"protocolVersion": "2025-06-18"}))
        self.assertEqual(r.json["result"]["protocolVersion"], "2025-06-18")
        self.assertNotIn("session id", r.json["result"]["instructions"])
        names = [t["name"] for t in self.http.post("/v1/sessions/s/mcp", rpc("tools/list")).json["result"]["tools"]]
        self.assertEqual(names, ["reacquire", "list_spills"])
        full = [t["name"] for t in self.http.post("/mcp", rpc("tools/list")).json["result"]["tools"]]
        self.assertEqual(full, ["reacquire", "list_spills", "compact", "compact_messages", "verify"])
        r = self.http.post("/v1/sessions/s/mcp", reacquire_call({"pointer": pointer_of(TRICKY)}))
        self.assertEqual(r.json["result"]["content"][0]["text"], TRICKY)
        self.assertEqual(self.events()[-1]["via"], "mcp")
        r = self.http.post("/v1/sessions/s/mcp", rpc("tools/call", {"name": "list_spills"}))
        self.assertEqual([s["key"] for s in r.json["result"]["structuredContent"]["spills"]], ["build.log"])

    def test_the_session_mcp_endpoint_refuses_what_it_does_not_offer(self):
        keys = sorted(self.redis.keys())
        for tool in ("compact", "compact_messages", "verify", "nope"):
            with self.subTest(tool=tool):
                r = self.http.post("/v1/sessions/s/mcp", rpc("tools/call", {"name": tool, "arguments": {
                    "session": "s", "budget": 1000, "units": spill_units("x")}}))
                self.assertEqual(r.json["error"]["code"], -32602)
        for args in ({"session": "s", "pointer": pointer_of(TRICKY)}, {},
                     {"key": "build.log", "sha256": pointer_of(TRICKY)[-17:-1]},
                     {"pointer": "not a pointer"}, {"pointer": 5}):
            with self.subTest(args=args):
                r = self.http.post("/v1/sessions/s/mcp", reacquire_call(args))
                self.assertIs(r.json["result"]["isError"], True)
        r = self.http.post("/v1/sessions/s/mcp", rpc("tools/call", {"name": "list_spills",
                                                                      "arguments": {"session": "t"}}))
        self.assertIs(r.json["result"]["isError"], True)
        r = self.http.post("/v1/sessions/t/mcp", reacquire_call({"pointer": pointer_of(TRICKY)}))
        self.assertIs(r.json["result"]["isError"], True)
        self.assertTrue(r.json["result"]["content"][0]["text"].startswith("NotFound"))
        self.assertEqual(self.http.get("/v1/sessions/s/mcp").status, 405)
        self.assertError(self.http.post("/v1/sessions/s/mcp", b"{}", raw=True,
                                        headers={"Content-Type": "text/plain"}), 415, "UnsupportedMediaType")
        self.assertEqual(sorted(self.redis.keys()), keys)


NEW_ROUTES = [("GET", "/v1/sessions/s/tools?format=openai", None),
              ("POST", "/v1/sessions/s/reacquire", {"pointer": pointer_of(TRICKY)}),
              ("POST", "/v1/sessions/s/mcp", reacquire_call({"pointer": pointer_of(TRICKY)}))]


class HostAndOrigin(ServerTest):
    def test_a_foreign_host_or_origin_is_refused_and_changes_nothing(self):
        self.assertEqual(self.http.compact("s", spill_units(TRICKY), 200).status, 200)
        keys = sorted(self.redis.keys())
        for headers in ({"Host": "evil.example"}, {"Host": "127.0.0.1.evil.example"},
                        {"Origin": "http://evil.example"}, {"Origin": "null"}):
            for method, path, body in NEW_ROUTES:
                with self.subTest(headers=headers, path=path):
                    r = self.http.request(method, path, body, headers=headers)
                    err = self.assertError(r, 403, "Forbidden")
                    self.assertIn(list(headers)[0], err["message"])
        self.assertEqual(sorted(self.redis.keys()), keys)
        for method, path, body in NEW_ROUTES:
            with self.subTest(path=path, host="localhost"):
                self.assertEqual(self.http.request(method, path, body, headers={"Host": "localhost"}).status, 200)


@unittest.skipIf(VALGRIND, "an ordering against Redis timeouts, not a memory check")
class StalledStore(unittest.TestCase):
    """The tool definitions and the per-session tools/list need no Redis: they
    are answered while every store thread waits on a stalled one."""

    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={"COMPACTD_THREADS": "2"})
        self.http = self.server.client(validate=False)
        self.redis.proc.send_signal(signal.SIGSTOP)

    def tearDown(self):
        self.redis.proc.send_signal(signal.SIGCONT)
        stop_all(self.server, self.redis)

    def test_definitions_are_not_queued_behind_the_store(self):
        spillers = [threading.Thread(target=self.http.compact, args=("s%d" % i, spill_units(TRICKY), 200))
                    for i in range(6)]
        for t in spillers:
            t.start()
        # Six compactions of one Redis timeout (1 s) each on two threads: the
        # queue drains in about 3 s; the answers below come long before.
        for t in spillers[:2]:
            t.join(0.3)
        tools = self.http.get("/v1/sessions/s/tools?format=anthropic")
        listed = self.http.post("/v1/sessions/s/mcp", rpc("tools/list"))
        still_waiting = sum(t.is_alive() for t in spillers)
        for t in spillers:
            t.join(60)
        self.assertEqual((tools.status, listed.status), (200, 200))
        self.assertEqual(len(listed.json["result"]["tools"]), 2)
        self.assertGreaterEqual(still_waiting, 3, "answered only after the store queue drained")


class WithApiKeys(unittest.TestCase):
    def setUp(self):
        self.keys_file = write_keys_file("%s alpha\n%s beta\n" % (KEY_A, KEY_B))
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={"COMPACTD_API_KEYS_FILE": self.keys_file})
        self.a = self.server.client(token=KEY_A)
        self.b = self.server.client(token=KEY_B)

    def tearDown(self):
        stop_all(self.server, self.redis)
        os.unlink(self.keys_file)

    def test_every_new_route_needs_a_key_and_sees_only_its_tenant(self):
        self.assertEqual(self.a.compact("s", spill_units(TRICKY), 200).status, 200)
        keys = sorted(self.redis.keys())
        anonymous = self.server.client()
        for method, path, body in NEW_ROUTES:
            for auth in (None, "Bearer not-a-key-0000000000", "Basic " + KEY_A):
                with self.subTest(path=path, auth=auth):
                    r = anonymous.request(method, path, body, headers={"Authorization": auth} if auth else {})
                    self.assertEqual(r.status, 401, r.body)
                    self.assertEqual(r.json["error"]["type"], "Unauthorized")
                    self.assertEqual(r.header("www-authenticate"), 'Bearer realm="compactd"')
        self.assertEqual(sorted(self.redis.keys()), keys)
        r = self.a.post("/v1/sessions/s/reacquire", {"pointer": pointer_of(TRICKY)})
        self.assertEqual(r.json["text"], TRICKY)
        r = self.b.post("/v1/sessions/s/reacquire", {"pointer": pointer_of(TRICKY)})
        self.assertEqual(r.status, 404, r.body)
        r = self.a.post("/v1/sessions/s/mcp", reacquire_call({"pointer": pointer_of(TRICKY)}))
        self.assertEqual(r.json["result"]["content"][0]["text"], TRICKY)
        r = self.b.post("/v1/sessions/s/mcp", reacquire_call({"pointer": pointer_of(TRICKY)}))
        self.assertIs(r.json["result"]["isError"], True)
        r = self.b.post("/v1/sessions/s/mcp", rpc("tools/call", {"name": "list_spills"}))
        self.assertEqual(r.json["result"]["structuredContent"]["spills"], [])


if __name__ == "__main__":
    unittest.main()
