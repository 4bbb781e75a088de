"""The reacquire tool wired into each provider's API, against a real
compactd and redis-server: a chat history compacted at its required budget
gives pointers to messages; tools_check.mjs takes each pointer through the
definition of GET /tools, a tool call as the provider hands it over and
POST /reacquire, and type-checks all of it with tsc against the official
openai and @anthropic-ai/sdk types."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from node_check import run_node_check  # noqa: E402
from test_messages import MessagesBase  # noqa: E402


class ToolRoundTrip(MessagesBase):
    def pointers(self, fmt):
        """(pointer, exact text) of each message the tightest compaction
        externalized: the history's largest message is marked protected, so
        that its pointer is cheaper than its text."""
        messages = self.histories[fmt]["messages"]
        largest = max(range(len(messages)), key=lambda i: len(json.dumps(messages[i])))
        extra = {"tokenizer": "bytes", "annotations": [{"index": largest, "class": "protected"}]}
        body = self.body(fmt, 10**7, dry_run=True, **extra)
        required = self.compact("%s-tools-probe" % fmt, body).json["required_budget"]
        session = "%s-tools" % fmt
        r = self.compact(session, self.body(fmt, required, **extra))
        self.assertEqual(r.status, 200, r.body)
        out = []
        for d in r.json["decisions"]:
            if d["decision"] == "externalized":
                spill = self.http.get(d["href"])
                self.assertEqual(spill.status, 200, spill.body)
                out.append((d["pointer"], spill.json["text"]))
        self.assertTrue(out, "the tightest budget must externalize a message")
        return session, out

    def check(self, session, pointer, text):
        case = {"base": "http://127.0.0.1:%d" % self.server.port, "session": session,
                "pointer": pointer, "text": text}
        p = run_node_check(self, "tools_check.mjs", case)
        self.assertIn("0 failed", p.stdout)

    def test_a_message_pointer_round_trips_through_every_format(self):
        for fmt in ("openai", "anthropic"):
            session, found = self.pointers(fmt)
            # The longest: the one most worth re-acquiring, and most bytes to compare.
            pointer, text = max(found, key=lambda p: len(p[1]))
            with self.subTest(fmt=fmt, pointer=pointer):
                self.check(session, pointer, text)


if __name__ == "__main__":
    unittest.main()
