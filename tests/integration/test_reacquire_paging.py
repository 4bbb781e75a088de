"""A re-acquired text given back in pages: GET .../spills/{key} and POST
.../reacquire with offset (bytes) and max_tokens (counted with the
tokenizer), each page within max_tokens and cut between characters, the
pages put together the text byte for byte, what is left said on every page;
bad paging parameters a 400 that reads and logs nothing; and no error of the
reacquire tool naming the session."""

import hashlib
import json
import unittest
import urllib.parse

from harness import ServerTest

# Multi-byte characters of every length, escapes, and runs a BPE merges.
TEXT = ("build 1: ok é ü 中文 🚀\n" + "error: retry_limit undeclared \"x\" \\ \t" * 40 +
        "🚀🚀🚀 " * 30 + "final line: 中文 end")
SESSION = "paging-sess-7f3q"
TOKENIZERS = ("bytes", "o200k_base", "cl100k_base")


def pointer_of(text, key="build.log"):
    return "[externalized %s sha256:%s]" % (key, hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])


def spill_units(text):
    return [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
            {"key": "build.log", "class": "protected", "tokens": 100000, "text": text}]


class Paging(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.http.compact(SESSION, spill_units(TEXT), 200)
        assert r.status == 200, r.body
        cls.raw = TEXT.encode("utf-8")

    def count(self, tokenizer, data):
        """Tokens of bytes data (whole characters), by compactd's /v1/tokens."""
        r = self.http.post("/v1/tokens", {"tokenizer": tokenizer, "texts": [data.decode("utf-8")]})
        self.assertEqual(r.status, 200, r.body)
        return r.json["total"]

    def events(self):
        r = self.http.get("/v1/sessions/%s/events" % SESSION)
        self.assertEqual(r.status, 200, r.body)
        return r.json["events"]

    def get_page(self, **query):
        path = "/v1/sessions/%s/spills/build.log?%s" % (SESSION, urllib.parse.urlencode(query))
        return self.http.get(path)

    def check_pages(self, fetch, tokenizer, max_tokens):
        """Pages the text through fetch(offset) and checks every page."""
        total = self.count(tokenizer, self.raw)
        offset, joined, pages = 0, b"", 0
        while offset is not None:
            page = fetch(offset)
            text = page["text"].encode("utf-8")
            self.assertEqual(page["offset"], offset)
            self.assertEqual(page["tokenizer"], tokenizer)
            self.assertEqual(page["total_tokens"], total)
            self.assertEqual(self.raw[offset:offset + len(text)], text, "a page is the text's bytes there")
            # One character more than a page would pass max_tokens (the cut is not early).
            tokens = self.count(tokenizer, text)
            self.assertTrue(tokens <= max_tokens or len(page["text"]) == 1,
                            "page at %d holds %d tokens > %d" % (offset, tokens, max_tokens))
            end = offset + len(text)
            if page["next_offset"] is None:
                self.assertEqual(end, len(self.raw))
                self.assertEqual(page["remaining_tokens"], 0)
            else:
                self.assertEqual(page["next_offset"], end)
                self.assertEqual(page["remaining_tokens"], self.count(tokenizer, self.raw[end:]))
            joined += text
            offset = page["next_offset"]
            pages += 1
        self.assertEqual(joined, self.raw)
        return pages

    def test_get_pages_the_text_under_each_tokenizer(self):
        for tokenizer in TOKENIZERS:
            for max_tokens in (1, 7, 64, 1000000):
                with self.subTest(tokenizer=tokenizer, max_tokens=max_tokens):
                    def fetch(offset):
                        r = self.get_page(offset=offset, max_tokens=max_tokens, tokenizer=tokenizer)
                        self.assertEqual(r.status, 200, r.body)
                        self.assertNotIn("note", r.json)
                        return r.json
                    pages = self.check_pages(fetch, tokenizer, max_tokens)
                    if max_tokens == 1000000:
                        self.assertEqual(pages, 1)
                    elif max_tokens == 64:
                        self.assertGreater(pages, 3)

    def test_without_paging_parameters_the_whole_text_is_one_page(self):
        r = self.get_page()
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["text"], TEXT)
        self.assertEqual((r.json["offset"], r.json["next_offset"], r.json["remaining_tokens"]), (0, None, 0))
        self.assertEqual(r.json["tokenizer"], "bytes")
        self.assertEqual(r.json["total_tokens"], len(self.raw))

    def test_reacquire_pages_with_the_models_arguments_and_logs_each_page(self):
        before = len(self.events())
        notes = []

        def fetch(offset):
            # Strict mode sends every argument: null where the model leaves one out.
            args = {"pointer": pointer_of(TEXT), "offset": offset if offset else None, "max_tokens": 50}
            r = self.http.post("/v1/sessions/%s/reacquire?tokenizer=o200k_base" % SESSION,
                               json.dumps(args).encode("utf-8"), raw=True)
            self.assertEqual(r.status, 200, r.body)
            if r.json["next_offset"] is None:
                self.assertNotIn("note", r.json)
            else:
                self.assertIn("offset %d" % r.json["next_offset"], r.json["note"])
                self.assertIn("%d tokens" % r.json["remaining_tokens"], r.json["note"])
                notes.append(r.json["note"])
            return r.json

        pages = self.check_pages(fetch, "o200k_base", 50)
        self.assertEqual(len(notes), pages - 1)
        events = self.events()[before:]
        self.assertEqual([(e["kind"], e["via"]) for e in events], [("reacquire", "tool")] * pages)

    def test_bad_paging_parameters_are_400_and_change_nothing(self):
        keys, n_events = sorted(self.redis.keys()), len(self.events())
        inside = len("build 1: ok ") + 1  # the second byte of "é"
        huge = 1 << 40
        for query in ({"offset": -1}, {"offset": "abc"}, {"offset": "1.5"}, {"offset": "+3"},
                      {"offset": "007"}, {"offset": ""}, {"offset": len(self.raw) + 1},
                      {"offset": inside}, {"offset": 1 << 70},
                      {"max_tokens": 0}, {"max_tokens": -5}, {"max_tokens": huge}, {"max_tokens": "x"},
                      {"max_tokens": "2.0"}, {"tokenizer": "gpt2"}):
            with self.subTest(query=query):
                err = self.assertError(self.get_page(**query), 400, "InvalidRequest")
                self.assertIn(list(query)[0], err["message"])
        cases = [({"offset": -1}, "$.offset"), ({"offset": "5"}, "$.offset"), ({"offset": 1.5}, "$.offset"),
                 ({"offset": True}, "$.offset"), ({"offset": len(self.raw) + 1}, "$.offset"),
                 ({"offset": inside}, "$.offset"), ({"max_tokens": 0}, "$.max_tokens"),
                 ({"max_tokens": huge}, "$.max_tokens"), ({"max_tokens": "10"}, "$.max_tokens"),
                 ({"max_tokens": 2.5}, "$.max_tokens"), ({"tokenizer": "bytes"}, "$.tokenizer")]
        for extra, path in cases:
            with self.subTest(arguments=extra):
                body = dict({"pointer": pointer_of(TEXT)}, **extra)
                r = self.http.post("/v1/sessions/%s/reacquire" % SESSION, body)
                err = self.assertError(r, 400, "InvalidRequest", path)
                self.assertNotIn(SESSION, err["message"])
        r = self.http.post("/v1/sessions/%s/reacquire?tokenizer=gpt2" % SESSION, {"pointer": pointer_of(TEXT)})
        self.assertIn("tokenizer", self.assertError(r, 400, "InvalidRequest")["message"])
        self.assertEqual(sorted(self.redis.keys()), keys)
        self.assertEqual(len(self.events()), n_events)

    def test_the_offset_of_the_end_is_an_empty_last_page(self):
        r = self.get_page(offset=len(self.raw), max_tokens=5)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual((r.json["text"], r.json["next_offset"], r.json["remaining_tokens"]), ("", None, 0))

    def test_a_character_past_max_tokens_is_a_page_of_its_own(self):
        at = self.raw.index("🚀".encode("utf-8"))
        r = self.get_page(offset=at, max_tokens=1, tokenizer="bytes")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual((r.json["text"], r.json["next_offset"]), ("🚀", at + 4))

    def test_no_reacquire_error_names_the_session(self):
        other = pointer_of("never spilled")
        r = self.http.post("/v1/sessions/%s/reacquire" % SESSION, {"pointer": other})
        self.assertNotIn(SESSION, self.assertError(r, 404, "NotFound")["message"])
        r = self.http.get("/v1/sessions/%s/spills/nope" % SESSION)
        self.assertNotIn(SESSION, self.assertError(r, 404, "NotFound")["message"])
        calls = [("/v1/sessions/%s/mcp" % SESSION, {"pointer": other}),
                 ("/v1/sessions/%s/mcp" % SESSION, {"pointer": pointer_of(TEXT), "offset": 10 ** 9}),
                 ("/mcp", {"session": SESSION, "pointer": other}),
                 ("/mcp", {"session": SESSION, "key": "build.log", "sha256": "0" * 16}),
                 ("/mcp", {"session": SESSION, "pointer": pointer_of(TEXT), "max_tokens": 0})]
        for path, args in calls:
            with self.subTest(path=path, args=args):
                r = self.http.post(path, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                          "params": {"name": "reacquire", "arguments": args}})
                self.assertEqual(r.status, 200, r.body)
                result = r.json["result"]
                self.assertIs(result["isError"], True)
                text = " ".join(c["text"] for c in result["content"])
                self.assertNotIn(SESSION, text)

    def test_the_provider_tool_offers_the_page_arguments_strict_mode_ready(self):
        for fmt in ("openai", "anthropic", "openai-responses"):
            with self.subTest(format=fmt):
                r = self.http.get("/v1/sessions/%s/tools?format=%s" % (SESSION, fmt))
                self.assertEqual(r.status, 200, r.body)
                tool = r.json["tools"][0]
                schema = tool.get("parameters") or tool.get("input_schema") or tool["function"]["parameters"]
                desc = tool.get("description") or tool["function"]["description"]
                self.assertEqual(schema["required"], ["pointer", "offset", "max_tokens"])
                self.assertEqual(schema["properties"]["offset"]["type"], ["integer", "null"])
                self.assertEqual(schema["properties"]["max_tokens"]["type"], ["integer", "null"])
                self.assertNotIn("minimum", schema["properties"]["max_tokens"])
                self.assertIn("max_tokens", desc)
                self.assertIn("offset", desc)


class MessageSpill(ServerTest):
    """A chat message's spill read back on every front: the text is the same
    bytes on each (the message as it was sent), never written again as JSON
    around it, and its pages are the same pages."""

    LOG = "line 1\nline \"2\" \\ é 🚀\t\u0001 end\n" * 200

    def test_every_front_gives_the_same_bytes_and_the_same_pages(self):
        msgs = [{"role": "user", "content": "Run the build."},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                 "function": {"name": "run_shell", "arguments": "{\"cmd\":\"make\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": self.LOG},
                {"role": "user", "content": "Fix it."}]
        body = {"format": "openai", "budget": 400, "tokenizer": "bytes", "messages": msgs}
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        r = self.http.post("/v1/sessions/chat-s/messages/compact", data, raw=True)
        self.assertEqual(r.status, 200, r.body)
        d = [x for x in r.json["decisions"] if x["decision"] == "externalized"]
        self.assertEqual([x["index"] for x in d], [2])
        sent = json.dumps(msgs[2], separators=(",", ":"), ensure_ascii=False)

        def mcp(path, args):
            r = self.http.post(path, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                      "params": {"name": "reacquire", "arguments": args}})
            self.assertEqual(r.status, 200, r.body)
            res = r.json["result"]
            return res["content"][0]["text"], res["structuredContent"]["next_offset"]

        def fronts(offset, max_tokens):
            page = {"offset": offset, "max_tokens": max_tokens}
            get = self.http.get("/v1/sessions/chat-s/spills/%s?offset=%d&max_tokens=%d"
                                % (d[0]["key"], offset, max_tokens)).json
            tool = self.http.post("/v1/sessions/chat-s/reacquire", dict(page, pointer=d[0]["pointer"])).json
            return [(get["text"], get["next_offset"]), (tool["text"], tool["next_offset"]),
                    mcp("/v1/sessions/chat-s/mcp", dict(page, pointer=d[0]["pointer"])),
                    mcp("/mcp", dict(page, session="chat-s", pointer=d[0]["pointer"]))]

        whole = fronts(0, 1 << 20)
        self.assertEqual(whole, [(sent, None)] * 4)
        self.assertEqual(json.loads(whole[0][0])["content"], self.LOG)
        offset, joined = 0, ""
        while offset is not None:
            got = fronts(offset, 300)
            self.assertEqual(got, [got[0]] * 4, "offset %d" % offset)
            joined += got[0][0]
            offset = got[0][1]
        self.assertEqual(joined.encode("utf-8"), sent.encode("utf-8"))

if __name__ == "__main__":
    unittest.main()
