"""/mcp and the spill read by digest prefix over plain HTTP, every answer
checked against openapi.yaml; and the MCP tools' input schemas against the
REST request schemas they mirror. (tests/mcp drives /mcp with the official
MCP SDK client.)"""

import copy
import unittest

from harness import ServerTest
from mcp_schemas import load_spec, load_tools, operation, parameter, resolve

UNITS = [
    {"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
    {"key": "build.log", "class": "protected", "tokens": 9000, "text": "make: *** Error 1\n\u00e9\u0001"},
]


def rpc(method, id_=1, **params):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params:
        msg["params"] = params
    return msg


class McpHttp(ServerTest):
    def mcp(self, body, headers=None, raw=False):
        return self.http.post("/mcp", body, headers=headers, raw=raw)

    def test_answers_match_the_spec(self):
        r = self.mcp(rpc("initialize", protocolVersion="2025-11-25", capabilities={},
                         clientInfo={"name": "t", "version": "1"}))
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["result"]["protocolVersion"], "2025-11-25")
        self.assertIsNone(r.header("mcp-session-id"))
        r = self.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.assertEqual(r.status, 202)
        self.assertEqual(r.body, b"")
        r = self.mcp(rpc("tools/list"), headers={"MCP-Protocol-Version": "2025-11-25"})
        self.assertEqual(r.status, 200)
        self.assertEqual({t["name"] for t in r.json["result"]["tools"]},
                         {"reacquire", "list_spills", "compact", "compact_messages", "verify"})
        r = self.mcp(b"{oops", raw=True)
        self.assertEqual((r.status, r.json["error"]["code"]), (400, -32700))
        r = self.mcp(rpc("ping"), headers={"MCP-Protocol-Version": "2024-01-01"})
        self.assertEqual((r.status, r.json["error"]["code"]), (400, -32000))
        r = self.mcp(rpc("ping"), headers={"Origin": "http://attacker.example"})
        self.assertEqual(r.status, 403)
        r = self.http.get("/mcp")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.header("allow"), "POST")
        r = self.http.request("POST", "/mcp", b"{}", raw=True, headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 415)

    def test_spill_read_by_prefix(self):
        plan = self.http.compact("prefix", UNITS, 100).json
        ext = plan["externalized"][0]
        sha = ext["sha256"]
        self.assertEqual(ext["pointer"], "[externalized build.log sha256:%s]" % sha[:16])
        for n in (16, 17, 63, 64):
            r = self.http.get("/v1/sessions/prefix/spills/build.log?sha256=" + sha[:n])
            self.assertEqual(r.status, 200, n)
            self.assertEqual(r.json["text"], UNITS[1]["text"])
        for bad in (sha[:15], sha + "0", sha[:16].upper(), "g" * 16):
            self.assertError(self.http.get("/v1/sessions/prefix/spills/build.log?sha256=" + bad),
                             400, "InvalidRequest")
        other = "f" * 16 if not sha.startswith("f" * 16) else "0" * 16
        self.assertError(self.http.get("/v1/sessions/prefix/spills/build.log?sha256=" + other),
                         404, "NotFound")
        # A second version sharing the first 16 digits, written directly
        # (no text has such a digest on purpose).
        twin = sha[:16] + "0" * 48
        self.redis.cli("HSET", "compactd:{default:prefix}:meta", twin + ":build.log",
                       "protected 3 2024-11-30T12:00:00.000Z")
        self.redis.cli("HSET", "compactd:{default:prefix}:text", twin + ":build.log", "twin")
        err = self.assertError(self.http.get("/v1/sessions/prefix/spills/build.log?sha256=" + sha[:16]),
                               409, "Ambiguous")
        self.assertEqual(sorted(err["candidates"]), sorted([sha, twin]))
        self.assertEqual(self.http.get("/v1/sessions/prefix/spills/build.log?sha256=" + sha[:17]).status, 200)
        # Over MCP, the same ambiguity is a tool error naming both digests.
        r = self.mcp(rpc("tools/call", name="reacquire",
                         arguments={"session": "prefix", "pointer": ext["pointer"]}))
        self.assertEqual(r.status, 200)
        result = r.json["result"]
        self.assertTrue(result["isError"])
        self.assertIn(sha, result["content"][0]["text"])
        self.assertIn(twin, result["content"][0]["text"])

    def test_reacquire_is_logged(self):
        plan = self.http.compact("logged", UNITS, 100).json
        ext = plan["externalized"][0]
        r = self.mcp(rpc("tools/call", name="reacquire",
                         arguments={"session": "logged", "pointer": ext["pointer"]}))
        self.assertEqual(r.json["result"]["content"][0]["text"], UNITS[1]["text"])
        events = self.http.get("/v1/sessions/logged/events").json["events"]
        self.assertEqual([e["kind"] for e in events], ["compact", "reacquire"])
        self.assertEqual(events[1]["sha256"], ext["sha256"])


class ToolSchemas(unittest.TestCase):
    """A tool's input schema is its REST request's, plus the session of the
    path: a field added to one and not the other fails here (and
    `python3 tests/integration/mcp_schemas.py --write` brings the tools up
    to date with openapi.yaml)."""

    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec()
        cls.tools = {t["name"]: t for t in load_tools()}
        cls.mirrors = cls.spec["x-mcp-tools"]

    def input_schema(self, name):
        return resolve(self.spec, self.tools[name]["inputSchema"])

    def test_every_tool_is_mapped_to_a_rest_operation(self):
        self.assertEqual(set(self.tools), set(self.mirrors))
        for name, mirror in self.mirrors.items():
            operation(self.spec, mirror["operationId"])

    def test_session_is_the_path_parameter(self):
        for name in self.tools:
            item, op = operation(self.spec, self.mirrors[name]["operationId"])
            self.assertEqual(self.input_schema(name)["properties"]["session"],
                             parameter(self.spec, item, op, "session"), name)
            self.assertIn("session", self.input_schema(name)["required"], name)

    def test_body_tools_take_the_rest_request_plus_session(self):
        for name, mirror in self.mirrors.items():
            if "request" not in mirror:
                continue
            item, op = operation(self.spec, mirror["operationId"])
            body_ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            self.assertEqual(body_ref, mirror["request"], name)
            rest = resolve(self.spec, {"$ref": body_ref})
            tool = copy.deepcopy(self.input_schema(name))
            del tool["properties"]["session"]
            tool["required"].remove("session")
            self.assertEqual(tool, rest, name)

    def test_reacquire_takes_the_spill_reads_key_and_sha256(self):
        item, op = operation(self.spec, self.mirrors["reacquire"]["operationId"])
        schema = self.input_schema("reacquire")
        self.assertEqual(schema["properties"]["sha256"], parameter(self.spec, item, op, "sha256"))
        self.assertEqual(schema["properties"]["key"], resolve(self.spec, {"$ref": "#/components/schemas/UnitKey"}))
        self.assertEqual(set(schema["properties"]),
                         {"session", "pointer", "key", "sha256", "offset", "max_tokens", "tokenizer"})
        # The page's arguments are the spill read's query parameters.
        for name in ("offset", "max_tokens", "tokenizer"):
            tool = {k: v for k, v in schema["properties"][name].items() if k != "description"}
            self.assertEqual(tool, parameter(self.spec, item, op, name), name)
        self.assertEqual(set(self.input_schema("list_spills")["properties"]), {"session"})


if __name__ == "__main__":
    unittest.main()
