"""A model pages through a re-acquired text larger than its budget: an
orchestrator loop against a real compactd and redis-server and a loopback
stand-in for the Chat Completions API. A tool output larger than the budget
is externalized; the model calls the reacquire tool of GET .../tools with
max_tokens, reads each page and the note after it, calls again at the
offset the note gives, and, once no note follows, answers with what it
read: the spilled message, all of it, in order, byte for byte, while every
request it got fitted the budget."""

import hashlib
import http.server
import json
import os
import re
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402

SESSION = "model-pages"
BUDGET = 8000  # bytes tokenizer: each request's texts hold at most this many bytes
PAGE_TOKENS = 2000
# A build log of 30 KB: quotes, backslashes, new lines and characters of two to four bytes.
LOG = "".join("[%04d] cc -c src/mod%d.c: warning: \"unused\" \\ é 中 🚀\n" % (i, i % 7) for i in range(600))
NOTE_OFFSET = re.compile(r"offset (\d+) to read on")
POINTER = re.compile(r"\[externalized [^\[\]]+ sha256:[0-9a-f]{16}\]")
POLICY = {"read_only_tools": ["reacquire"], "keep_last": 2}


def texts_of(messages):
    """Every text a Chat Completions model reads in messages."""
    out = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p["text"] for p in c)
        for call in m.get("tool_calls") or []:
            out.append(call["function"]["arguments"])
    return out


class PagingModel:
    """The model: follows the one pointer of its context in pages of
    PAGE_TOKENS, reading each page from the last tool result and the
    offset to go on from the note after it; then answers what it read."""

    def __init__(self):
        self.pages, self.requests, self.refusals = [], [], []
        self.pointer, self.next_offset = None, None

    def reply(self, body):
        self.requests.append(body)
        msgs = body["messages"]
        size = sum(len(t.encode("utf-8")) for t in texts_of(msgs))
        if size > BUDGET:
            self.refusals.append(size)
            return 400, {"error": {"type": "invalid_request_error", "code": "context_length_exceeded",
                                   "message": "%d bytes of text passes the window" % size}}
        if not any(t["function"]["name"] == "reacquire" for t in body.get("tools", [])):
            return 400, {"error": {"type": "invalid_request_error", "message": "no reacquire tool"}}
        last = msgs[-1]
        if last["role"] == "tool":
            parts = last["content"] if isinstance(last["content"], list) else [{"text": last["content"]}]
            self.pages.append(parts[0]["text"])
            note = NOTE_OFFSET.search(parts[1]["text"]) if len(parts) > 1 else None
            if not note:
                return 200, self.answer("".join(self.pages))
            self.next_offset = int(note.group(1))
        else:
            found = [p for t in texts_of(msgs) for p in POINTER.findall(t)]
            if not found:
                return 200, self.answer("no pointer")
            self.pointer, self.next_offset = found[-1], None
        args = {"pointer": self.pointer, "offset": self.next_offset, "max_tokens": PAGE_TOKENS}
        call = {"id": "call_r%d" % len(self.requests), "type": "function",
                "function": {"name": "reacquire", "arguments": json.dumps(args)}}
        return 200, self.completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")

    def answer(self, text):
        return self.completion({"role": "assistant", "content": text}, "stop")

    def completion(self, message, finish):
        return {"id": "chatcmpl-%d" % len(self.requests), "object": "chat.completion", "model": "mock",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def serve(model):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, answer = model.reply(body)
            data = json.dumps(answer).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class ModelPagesThroughAReacquiredText(ServerTest):
    def setUp(self):
        self.model = PagingModel()
        self.provider = serve(self.model)
        self.addCleanup(self.provider.server_close)
        self.addCleanup(self.provider.shutdown)
        self.provider_http = type(self.http)(self.provider.server_address[1], validate=False)

    def compacted(self, history):
        body = {"format": "openai", "budget": BUDGET, "tokenizer": "bytes", "policy": POLICY,
                "messages": history}
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        r = self.http.post("/v1/sessions/%s/messages/compact" % SESSION, data, raw=True)
        self.assertEqual(r.status, 200, r.body)
        self.assertLessEqual(r.json["used_tokens"], BUDGET)
        return r.json

    def run_tool(self, call):
        """The reacquire call run by compactd; the tool message the model gets:
        the page, then the note as a second text part while more is left."""
        r = self.http.post("/v1/sessions/%s/reacquire?tokenizer=bytes" % SESSION,
                           call["function"]["arguments"].encode("utf-8"), raw=True)
        self.assertEqual(r.status, 200, r.body)
        parts = [{"type": "text", "text": r.json["text"]}]
        if r.json["next_offset"] is not None:
            parts.append({"type": "text", "text": r.json["note"]})
        return {"role": "tool", "tool_call_id": call["id"], "content": parts}

    def test_the_model_reads_the_whole_text_in_order_byte_for_byte(self):
        tool = self.http.get("/v1/sessions/%s/tools?format=openai" % SESSION).json["tools"]
        log_message = {"role": "tool", "tool_call_id": "call_build", "content": LOG}
        history = [{"role": "system", "content": "You are a build agent."},
                   {"role": "user", "content": "Run the build."},
                   {"role": "assistant", "content": None, "tool_calls": [{
                       "id": "call_build", "type": "function",
                       "function": {"name": "run_build", "arguments": "{}"}}]},
                   log_message,
                   {"role": "user", "content": "Quote the whole build log exactly."}]
        self.assertGreater(len(LOG.encode("utf-8")), 3 * BUDGET)
        first = self.compacted(history)
        externalized = [d for d in first["decisions"] if d["decision"] == "externalized"]
        self.assertEqual([d["index"] for d in externalized], [3])
        spill = self.http.get(externalized[0]["href"]).json["text"]
        for _ in range(100):
            r = self.provider_http.post("/v1/chat/completions", {
                "model": "mock", "messages": self.compacted(history)["messages"], "tools": tool})
            self.assertEqual(r.status, 200, r.body)
            message = r.json["choices"][0]["message"]
            history.append(message)
            if not message.get("tool_calls"):
                break
            history.extend(self.run_tool(c) for c in message["tool_calls"])
        answer = history[-1]["content"]
        self.assertEqual(self.model.refusals, [])
        self.assertGreater(len(self.model.pages), 3)
        # What the model read is the spill, in order, byte for byte: the
        # tool message as it was sent, holding the log exactly.
        self.assertEqual(answer.encode("utf-8"), spill.encode("utf-8"))
        self.assertEqual(hashlib.sha256(answer.encode("utf-8")).hexdigest(), externalized[0]["sha256"])
        self.assertEqual(json.loads(answer), log_message)
        self.assertEqual(json.loads(answer)["content"], LOG)
        # No page was larger than asked for.
        for page in self.model.pages:
            self.assertLessEqual(len(page.encode("utf-8")), PAGE_TOKENS)


if __name__ == "__main__":
    unittest.main()
