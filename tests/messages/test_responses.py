"""format "openai-responses" against a real compactd and redis-server: the
transcript of transcript.mjs as a Responses API loop (responses_transcript.mjs:
each Response's output items appended to the input, as the SDK documents)
compacted at budgets from generous down to required_budget, every answer
checked by responses_check.mjs (structural validator, reasoning in place,
gpt-tokenizer's o200k_base count, tsc against the openai SDK's types); items
the API would refuse are a 400 naming their path, and nothing is written."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402
from node_check import run_node_check  # noqa: E402

NODE = os.environ.get("NODE", "node")
POLICY = {"protect_tools": ["apply_migration"], "redundant_tools": ["list_dir"]}
BUDGET_STEPS = 6
FORMAT = "openai-responses"


def transcript():
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([NODE, os.path.join(HERE, "responses_transcript.mjs"), d], check=True)
        with open(os.path.join(d, "responses.json")) as fh:
            return json.load(fh)


class ResponsesBase(ServerTest):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.history = transcript()

    def compact(self, session, body):
        # Compact JSON, as JSON.stringify writes it: spills are compared
        # byte for byte with it.
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)

    def body(self, budget, items=None, **extra):
        b = {"format": FORMAT, "budget": budget,
             "messages": self.history["input"] if items is None else items,
             "instructions": self.history["instructions"], "policy": POLICY}
        b.update(extra)
        return b

    def spills(self, session):
        return self.http.get("/v1/sessions/%s/spills" % session).json["spills"]


# The items of one response, reasoning included (one may follow another).
RESPONSE_ITEMS = ("function_call", "message", "web_search_call", "reasoning")


class ResponsesSweepTest(ResponsesBase):

    def sweep(self, **extra):
        items = self.history["input"]
        self.assertGreaterEqual(len(items), 100)
        self.assertGreaterEqual(sum(1 for it in items if it.get("type") == "reasoning"), 20)
        probe = self.compact("rs-probe", self.body(10**7, dry_run=True, **extra))
        self.assertEqual(probe.status, 200, probe.body)
        full, required = probe.json["used_tokens"], probe.json["required_budget"]
        self.assertLess(required, full)
        budgets = [10**7, full] + [required + (full - required) * k // BUDGET_STEPS
                                   for k in range(BUDGET_STEPS - 1, 0, -1)] + [required]
        cases = []
        for n, budget in enumerate(budgets):
            session = "rs-%d-%s" % (n, "-".join(sorted(extra)))
            r = self.compact(session, self.body(budget, **extra))
            self.assertEqual(r.status, 200, r.body)
            a = r.json
            self.assertEqual(a["format"], FORMAT)
            self.assertEqual(a["instructions"], self.history["instructions"])
            self.assertEqual(a["required_budget"], required)
            self.assertLessEqual(a["used_tokens"], budget)
            spills = {}
            for d in a["decisions"]:
                if d["decision"] == "externalized":
                    spills["msg%d" % d["index"]] = self.http.get(d["href"]).json["text"]
            cases.append({"name": "responses budget %d %s" % (budget, extra),
                          "input": self.history, "answer": a, "spills": spills})
        r = self.compact("rs-below", self.body(required - 1, **extra))
        err = self.assertError(r, 422, "CompactionFailure")
        self.assertEqual(err["required_budget"], required)
        self.assertEqual(self.spills("rs-below"), [])
        tight = cases[-1]["answer"]["decisions"]
        self.assertTrue(any(d["decision"] == "dropped" for d in tight))
        if extra.get("mode") == "discovery":
            self.assertTrue(any(d["decision"] == "externalized"
                                for c in cases for d in c["answer"]["decisions"]))
        return cases

    def run_check(self, cases):
        p = run_node_check(self, "responses_check.mjs", cases)

    def test_sweep_passes_the_checks(self):
        self.run_check(self.sweep() + self.sweep(mode="discovery"))

    def test_default_tokenizer_is_o200k_and_bytes_can_be_named(self):
        a = self.compact("rs-tok", self.body(10**7, dry_run=True)).json
        self.assertEqual(a["tokenizer"], "o200k_base")
        b = self.compact("rs-tok", self.body(10**7, dry_run=True, tokenizer="bytes")).json
        self.assertEqual(b["tokenizer"], "bytes")
        self.assertGreater(b["used_tokens"], a["used_tokens"])

    def test_calls_of_one_response_travel_with_its_reasoning(self):
        a = self.compact("rs-turn", self.body(10**7, dry_run=True)).json
        items = self.history["input"]
        probe = self.compact("rs-turn", self.body(a["required_budget"])).json
        kept = {json.dumps(m, sort_keys=True) for m in probe["messages"]}
        last_user = max(i for i, it in enumerate(items)
                        if it.get("role") == "user" and it.get("type", "message") == "message")
        def response_of(i):
            """The items after reasoning item i that its response output."""
            j = i + 1
            while j < len(items) and items[j].get("type") in RESPONSE_ITEMS \
                    and (items[j].get("type") != "message" or items[j].get("role") == "assistant"):
                j += 1
            return range(i + 1, j)

        led_hosted = 0
        for i, it in enumerate(items):
            if it.get("type") != "reasoning":
                continue
            response = response_of(i)
            hosted = any(items[j].get("type") == "web_search_call" and "id" in items[j]
                         for j in response)
            if i < last_user and not hosted:
                # A finished turn's reasoning the API drops unread: it goes
                # first, as redundant, without a marker.
                self.assertEqual((probe["decisions"][i]["decision"], probe["decisions"][i]["reason"]),
                                 ("dropped", "redundant"), i)
                self.assertNotIn(json.dumps(it, sort_keys=True), kept, i)
                continue
            # The turn in flight, or a finished turn's reasoning that led to
            # a hosted call (whose id the API links to it): the reasoning
            # item and the items of its response share one fate.
            for j in response:
                self.assertEqual(probe["decisions"][j]["decision"] == "dropped",
                                 probe["decisions"][i]["decision"] == "dropped", (i, j))
            if i < last_user:
                led_hosted += 1
                continue
            self.assertEqual(probe["decisions"][i]["decision"], "preserved", i)
            self.assertIn(json.dumps(it, sort_keys=True), kept, i)
        self.assertGreater(led_hosted, 0)


class ResponsesItemsTest(ResponsesBase):
    """Items one at a time: what is kept as sent, how each is priced."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()

    def one(self, session, items, budget=10**6, **extra):
        body = {"format": FORMAT, "budget": budget, "messages": items, "tokenizer": "o200k_base"}
        body.update(extra)
        r = self.compact(session, body)
        self.assertEqual(r.status, 200, r.body)
        return r.json

    def test_unknown_fields_and_item_types_are_kept_as_sent(self):
        items = [
            {"role": "user", "content": [{"type": "input_text", "text": "hi", "x_note": {"k": [1, 2]}}],
             "x_field": None},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA" + "z" * 300},
            {"type": "some_future_item", "payload": {"deep": ["a", 1.5, True]}},
            {"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "gAAAAq", "x": 1},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "x": [None]},
            {"type": "function_call_output", "call_id": "c1", "output": "ok", "x": {"y": 2}},
            {"role": "user", "content": "go on"},
        ]
        a = self.one("rs-unk", items)
        # The reasoning of a finished turn goes (the API drops it unread);
        # everything else is kept as sent.
        self.assertEqual(a["messages"], items[:3] + items[4:])
        self.assertEqual(a["decisions"][3]["reason"], "redundant")
        # Compaction and unknown items are protected and priced by their bytes.
        for i in (1, 2):
            self.assertEqual(a["decisions"][i]["class"], "protected")
            raw = json.dumps(items[i], separators=(",", ":"))
            self.assertEqual(a["decisions"][i]["tokens"], 4 + len(raw.encode()))
        # Under a budget that forces compaction, they stay whole and in place.
        b = self.one("rs-unk2", items, budget=a["required_budget"])
        self.assertIn(items[1], b["messages"])
        self.assertIn(items[2], b["messages"])

    def test_replaced_forms_keep_ids_and_carry_the_pointer(self):
        big = "line of output\n" * 200
        items = [
            {"role": "user", "content": "read it"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "read"}],
             "encrypted_content": "gAAAAe"},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read_file",
             "arguments": json.dumps({"path": "a.c", "pad": "p" * 600}), "status": "completed"},
            {"type": "function_call_output", "call_id": "c1", "output": big, "extra": "kept"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "patch", "input": "*** patch " * 80},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "applied"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "done " * 100, "annotations": []}]},
            {"role": "user", "content": "next"},
            {"role": "user", "content": "and then"},
        ]
        notes = [{"index": i, "class": "protected"} for i in (2, 3, 4, 6)]
        full = self.one("rs-rep", items, annotations=notes, dry_run=True)
        a = self.one("rs-rep", items, budget=full["required_budget"], annotations=notes)
        out = a["messages"]
        dec = {d["index"]: d for d in a["decisions"]}
        for i in (2, 3, 4, 6):
            self.assertEqual(dec[i]["decision"], "externalized", dec[i])
        # The finished turn's reasoning went (the API drops it unread).
        self.assertEqual(dec[1]["reason"], "redundant")
        self.assertNotIn(items[1], out)
        # Its call goes without its id (the API refuses a call whose id names
        # a reasoning item not sent): replaced, and in its spill.
        self.assertNotIn("id", out[1])
        self.assertEqual(json.loads(out[1]["arguments"]), {"compactd": dec[2]["pointer"]})
        self.assertEqual(out[2], {"type": "function_call_output", "call_id": "c1",
                                  "output": dec[3]["pointer"], "extra": "kept"})
        self.assertEqual(out[3]["input"], dec[4]["pointer"])
        self.assertEqual(out[5]["id"], "msg_1")
        self.assertEqual(out[5]["content"], [{"type": "output_text", "text": dec[6]["pointer"],
                                              "annotations": []}])
        unlinked = {k: v for k, v in items[2].items() if k != "id"}
        for i in (2, 3, 4, 6):
            text = self.http.get(dec[i]["href"]).json["text"]
            self.assertEqual(json.loads(text), unlinked if i == 2 else items[i])

    def test_dropped_turn_leaves_a_developer_marker(self):
        items = [{"role": "user", "content": "start"}]
        for k in range(4):
            items += [{"type": "reasoning", "id": "rs_%d" % k, "summary": [], "encrypted_content": "e" * 200},
                      {"type": "function_call", "call_id": "c%d" % k, "name": "grep",
                       "arguments": json.dumps({"q": k})},
                      {"type": "function_call_output", "call_id": "c%d" % k, "output": "hit " * 50}]
        items += [{"role": "user", "content": "now"}, {"role": "user", "content": "go"}]
        # grep declared read-only: its exchanges may go (a tool in no list
        # has side effects, and its exchange stays).
        ro = {"read_only_tools": ["grep"]}
        full = self.one("rs-drop", items, dry_run=True, policy=ro)
        a = self.one("rs-drop", items, budget=full["required_budget"], policy=ro)
        markers = [m for m in a["messages"] if m.get("role") == "developer"]
        self.assertEqual(len(markers), 1, a["messages"])
        self.assertEqual(markers[0]["type"], "message")
        self.assertIn("grep", markers[0]["content"])
        self.assertNotIn("reasoning", [m.get("type") for m in a["messages"]])

    def test_verify_reads_outputs_arguments_and_instructions(self):
        items = [{"role": "user", "content": "ship it"},
                 {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "secret plan"}],
                  "encrypted_content": "gAAAA"},
                 {"type": "function_call", "call_id": "c1", "name": "apply",
                  "arguments": json.dumps({"path": "migrations/0042.sql"})},
                 {"type": "function_call_output", "call_id": "c1", "output": "migration 0042 applied"},
                 {"role": "user", "content": "go"}]
        units = [{"key": "ledger", "class": "protected", "tokens": 9, "text": "migration 0042 applied"},
                 {"key": "path", "class": "protected", "tokens": 5, "text": "migrations/0042.sql"},
                 {"key": "rule", "class": "protected", "tokens": 5, "text": "Never push to main."},
                 {"key": "plan", "class": "protected", "tokens": 3, "text": "secret plan"}]
        body = {"format": FORMAT, "messages": items, "units": units,
                "instructions": "Never push to main.", "budget": 1000, "context_tokens": 200}
        r = self.http.post("/v1/sessions/rs-ver/messages/verify", body)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["tokenizer"], "o200k_base")
        self.assertEqual(sorted(p["key"] for p in r.json["present"]), ["ledger", "path", "rule"])
        # A reasoning summary is not what the model reads back: its state is encrypted.
        self.assertEqual([m["key"] for m in r.json["missing"]], ["plan"])
        self.assertEqual(r.json["repair_into"], {"message": 4, "as": "text_blocks_at_end"})

    def test_instructions_are_priced_like_a_system_prompt(self):
        items = [{"role": "user", "content": "hi"}]
        a = self.one("rs-ins", items)
        b = self.one("rs-ins", items, instructions="Be brief and exact.")
        self.assertEqual(b["system_tokens"] - a["system_tokens"], 4 + 5)  # framing + o200k tokens
        self.assertEqual(b["instructions"], "Be brief and exact.")


class ResponsesRefusedTest(ResponsesBase):
    """What the API would refuse: a 400 at the path, nothing written."""

    def refused(self, items, path, session="rs-bad", **extra):
        body = {"format": FORMAT, "budget": 50, "messages": items}
        body.update(extra)
        r = self.compact(session, body)
        err = self.assertError(r, 400, "InvalidRequest", path)
        self.assertEqual(self.spills(session), [])
        self.assertEqual([k for k in self.redis.keys() if session in k], [])
        return err

    CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    OUT = {"type": "function_call_output", "call_id": "c1", "output": "x" * 400}
    RS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
    USER = {"role": "user", "content": "hi"}

    def test_orphaned_output(self):
        self.refused([self.USER, self.OUT], "$.messages[1].call_id")

    def test_call_without_output(self):
        self.refused([self.USER, self.CALL, self.USER], "$.messages[1].call_id")
        self.refused([self.USER, self.CALL], "$.messages[1].call_id")

    def test_duplicate_call_id(self):
        self.refused([self.USER, self.CALL, self.OUT, self.CALL, self.OUT], "$.messages[3].call_id")
        self.refused([self.USER, self.CALL, self.CALL, self.OUT, self.OUT], "$.messages[2].call_id")

    def test_reasoning_moved(self):
        self.refused([self.USER, self.RS], "$.messages[1]")
        self.refused([self.USER, self.RS, self.USER], "$.messages[1]")
        self.refused([self.USER, self.CALL, self.RS, self.OUT], "$.messages[2]")

    def test_reasoning_edited_shape(self):
        rs = dict(self.RS, summary="not a list")
        self.refused([self.USER, rs, self.CALL, self.OUT], "$.messages[1].summary")

    def test_bad_items(self):
        self.refused([{"role": "tool", "content": "x"}], "$.messages[0].role")
        self.refused([{"type": 7}], "$.messages[0].type")
        self.refused([self.USER, dict(self.CALL, name="")], "$.messages[1].name")
        self.refused([self.USER, {"type": "function_call", "call_id": "c1", "name": "f"}],
                     "$.messages[1].arguments")
        self.refused([{"role": "user", "content": [{"type": "output_text", "text": "x"}]}],
                     "$.messages[0].content[0].type")
        self.refused([{"type": "compaction"}], "$.messages[0].encrypted_content")
        self.refused([{"type": "item_reference", "id": "msg_1"}], "$.messages[0]")

    def test_item_ids_of_another_shape(self):
        # "Invalid 'input[1].id': 'call_...'. Expected an ID that begins with 'fc'."
        # (and 'msg', 'rs'); "Expected an ID that contains letters, numbers,
        # underscores, or dashes".
        msg = {"type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
        cases = [
            ("a function_call with its call_id as its id", [self.USER, dict(self.CALL, id="call_1"), self.OUT]),
            ("a message with another item's id", [self.USER, dict(msg, id="rs_1"), self.USER]),
            ("a reasoning item with a made-up id",
             [self.USER, dict(self.RS, id="item_df7e40c3"), self.CALL, self.OUT]),
            ("an id with a character the API refuses", [self.USER, dict(msg, id="msg_1.2"), self.USER]),
            ("an empty id", [self.USER, dict(self.CALL, id=""), self.OUT]),
        ]
        for name, items in cases:
            with self.subTest(name):
                # A budget that holds each: without the rule, each is a 200.
                self.refused(items, "$.messages[1].id", budget=10**5)
                r = self.http.post("/v1/sessions/rs-bad/messages/verify",
                                   {"format": FORMAT, "messages": items, "units": []})
                self.assertError(r, 400, "InvalidRequest", "$.messages[1].id")
        # The API's own ids, and items without one, are taken.
        items = [self.USER, dict(self.RS, id="rs_0a1-B"), dict(self.CALL, id="fc_1"), self.OUT,
                 dict(msg, id="msg_1"), dict(msg, role="user", content="hi")]
        r = self.compact("rs-ids", {"format": FORMAT, "budget": 10**5, "messages": items})
        self.assertEqual(r.status, 200, r.body)
        # All but the finished turn's reasoning, which the API drops unread;
        # the call it came before goes without its id (the API refuses a
        # call whose id names a reasoning item not sent).
        call = {k: v for k, v in items[2].items() if k != "id"}
        self.assertEqual(r.json["messages"], items[:1] + [call] + items[3:])

    def test_image_is_priced_by_its_bound(self):
        items = [{"role": "user", "content": [{"type": "input_text", "text": "what is this?"},
                                              {"type": "input_image", "image_url": "https://example.com/a.png",
                                               "detail": "low"}]}]
        # detail low is 85 (docs/chat.md, Images): frame, "user", the text, the image.
        r = self.compact("rs-img", {"format": FORMAT, "budget": 500, "messages": items})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["messages"], items)
        self.assertEqual(r.json["decisions"][0]["tokens"], 4 + 1 + 4 + 85)
        # The caller's annotation stands for the bound.
        r = self.compact("rs-img2", {"format": FORMAT, "budget": 500, "messages": items,
                                     "annotations": [{"index": 0, "tokens": 60}]})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["decisions"][0]["tokens"], 4 + 1 + 4 + 60)

    def test_members_of_other_formats(self):
        self.refused([self.USER], "$.system", system="s")
        self.refused([self.USER], "$.instructions", format="openai", instructions="s")
        self.refused([self.USER], "$.instructions", instructions=["s"])


if __name__ == "__main__":
    unittest.main()
