"""Audio, files and documents in every chat format, against a real compactd
and redis-server: accepted without an annotation and priced at the bound
docs/chat.md states (the exact figure of its formula), the caller's
annotations[].tokens standing for it, budgets holding when a document does
not fit, malformed data refused with its path and nothing written, and the
answers type-checked with the SDKs' request types (sdk_check.mjs)."""

import base64
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from harness import ServerTest  # noqa: E402
from node_check import run_node_check  # noqa: E402

FRAME = 4          # framing tokens a message (docs/chat.md)
PART_MAX = 1048576  # what compactd cannot bound tighter
PAGE_TEXT = 3000   # a PDF page's text
ANTHROPIC_PAGE = 1600 + PAGE_TEXT  # the largest image + the page's text
OPENAI_PAGE = 1445 + PAGE_TEXT

PDF3 = (b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n"
        b"3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
        b"4 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
        b"5 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
PDF3_B64 = base64.b64encode(PDF3).decode()


def wav(seconds):
    """A 16 kHz mono 16-bit PCM WAV of silence: 32,000 bytes a second."""
    data = b"\0" * int(32000 * seconds)
    fmt = struct.pack("<HHIIHH", 1, 1, 16000, 32000, 2, 16)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<I", 16) +
            fmt + b"data" + struct.pack("<I", len(data)) + data)


WAV_2S = base64.b64encode(wav(2)).decode()  # 2 s: 20 tokens


def user(*parts):
    return {"role": "user", "content": list(parts)}


# Each case: a name, the format, one user message of parts and its price
# with the bytes tokenizer (FRAME + "user" + every text + the bound).
CASES = [
    ("chat file by id", "openai",
     user({"type": "file", "file": {"file_id": "file-abc"}}), FRAME + 4 + PART_MAX),
    ("chat pdf inline", "openai",
     user({"type": "text", "text": "read"},
          {"type": "file", "file": {"filename": "a.pdf",
                                    "file_data": "data:application/pdf;base64," + PDF3_B64}}),
     FRAME + 4 + 4 + len("a.pdf") + 3 * OPENAI_PAGE),
    ("chat pdf raw base64", "openai",
     user({"type": "file", "file": {"file_data": PDF3_B64}}), FRAME + 4 + 3 * OPENAI_PAGE),
    ("chat wav", "openai",
     user({"type": "input_audio", "input_audio": {"data": WAV_2S, "format": "wav"}}),
     FRAME + 4 + 20),
    ("chat mp3", "openai",
     user({"type": "input_audio", "input_audio": {"data": base64.b64encode(
         b"ID3" + b"\0" * 24997).decode(), "format": "mp3"}}), FRAME + 4 + 250),
    ("responses file by url", "openai-responses",
     user({"type": "input_file", "file_url": "https://files.example/a.pdf"}),
     FRAME + 4 + PART_MAX),
    ("responses pdf inline", "openai-responses",
     user({"type": "input_file", "filename": "a.pdf",
           "file_data": "data:application/pdf;base64," + PDF3_B64}),
     FRAME + 4 + len("a.pdf") + 3 * OPENAI_PAGE),
    ("responses audio", "openai-responses",
     user({"type": "input_audio", "input_audio": {"data": WAV_2S, "format": "wav"}}),
     FRAME + 4 + 20),
    ("responses image by id", "openai-responses",
     user({"type": "input_image", "file_id": "file-img", "detail": "auto"}), FRAME + 4 + 1445),
    ("anthropic pdf inline", "anthropic",
     user({"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                           "data": PDF3_B64}}), FRAME + 4 + 3 * ANTHROPIC_PAGE),
    ("anthropic pdf by url", "anthropic",
     user({"type": "document", "source": {"type": "url", "url": "https://files.example/a.pdf"}}),
     FRAME + 4 + PART_MAX),
    ("anthropic file", "anthropic",
     user({"type": "document", "source": {"type": "file", "file_id": "file_01"}}),
     FRAME + 4 + PART_MAX),
    # Text the model reads is counted as text: the title, the context, the data.
    ("anthropic text document", "anthropic",
     user({"type": "document", "title": "Memo", "context": "from ops",
           "source": {"type": "text", "media_type": "text/plain", "data": "deploy at noon"}}),
     FRAME + 4 + 4 + 8 + 14),
    ("anthropic content document", "anthropic",
     user({"type": "document", "source": {"type": "content", "content": [
         {"type": "text", "text": "page one"},
         {"type": "image", "source": {"type": "url", "url": "https://files.example/p.png"}}]}}),
     FRAME + 4 + 8 + 1600),
]


class MediaBase(ServerTest):

    def post(self, session, body):
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return self.http.post("/v1/sessions/%s/messages/compact" % session, data, raw=True)

    def body(self, fmt, messages, budget, **extra):
        b = {"format": fmt, "budget": budget, "tokenizer": "bytes", "messages": messages}
        b.update(extra)
        return b

    def nothing_written(self, session):
        self.assertEqual(self.http.get("/v1/sessions/%s/spills" % session).json["spills"], [])
        self.assertEqual(self.http.get("/v1/sessions/%s/events" % session).json["events"], [])


class MediaPricingTest(MediaBase):

    def test_each_part_is_accepted_and_priced_at_its_bound(self):
        for n, (name, fmt, msg, price) in enumerate(CASES):
            with self.subTest(name):
                r = self.post("price%d" % n, self.body(fmt, [msg], 2 * PART_MAX))
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json["messages"], [msg])
                self.assertEqual(r.json["used_tokens"], price)
                self.assertEqual(r.json["decisions"][0]["tokens"], price)

    def test_an_annotation_stands_for_the_bound(self):
        for n, (name, fmt, msg, price) in enumerate(CASES):
            if name.startswith("anthropic text") or name.startswith("anthropic content"):
                continue  # text is counted, not bounded: nothing to annotate
            with self.subTest(name):
                texts = price - FRAME - 4 - self.bound_of(name, price)
                r = self.post("note%d" % n, self.body(fmt, [msg], 1000,
                                                      annotations=[{"index": 0, "tokens": 77}]))
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json["used_tokens"], FRAME + 4 + texts + 77)

    def bound_of(self, name, price):
        """The part of a case's price its bound makes: all but the role and
        the text parts (a file's name is priced with its bound)."""
        texts = {"chat pdf inline": len("read")}
        return price - FRAME - 4 - texts.get(name, 0)

    def test_a_text_document_is_counted_by_the_tokenizer(self):
        msg = CASES[[c[0] for c in CASES].index("anthropic text document")][2]
        r = self.post("o200k", dict(self.body("anthropic", [msg], 1000), tokenizer="o200k_base"))
        self.assertEqual(r.status, 200, r.body)
        # o200k: "user" 1, "Memo" 1, "from ops" 2, "deploy at noon" 3.
        self.assertEqual(r.json["used_tokens"], FRAME + 1 + 1 + 2 + 3)


    def test_a_document_in_a_tool_result_is_priced_by_its_bound(self):
        msgs = [{"role": "user", "content": "Read the spec."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                                   "name": "read_file", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": [{"type": "document", "source": {
                                                  "type": "base64", "media_type": "application/pdf",
                                                  "data": PDF3_B64}}]}]}]
        r = self.post("result", self.body("anthropic", msgs, 2 * PART_MAX))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["messages"], msgs)
        # FRAME + "user" + the tool_use_id + 3 pages.
        self.assertEqual(r.json["decisions"][2]["tokens"], FRAME + 4 + 7 + 3 * ANTHROPIC_PAGE)


class MediaBudgetTest(MediaBase):

    HISTORY = [
        user({"type": "document", "source": {"type": "url", "url": "https://files.example/spec.pdf"}},
             {"type": "text", "text": "Summarize the spec."}),
        {"role": "assistant", "content": "The spec asks for a v2 API with pagination."},
        user({"type": "text", "text": "Now draft the migration plan."}),
    ]

    def test_a_document_that_does_not_fit_is_externalized(self):
        r = self.post("fit", self.body("anthropic", self.HISTORY, 400))
        self.assertEqual(r.status, 200, r.body)
        a = r.json
        self.assertLessEqual(a["used_tokens"], 400)
        d = a["decisions"][0]
        self.assertEqual(d["tokens"], FRAME + 4 + PART_MAX + len("Summarize the spec."))
        self.assertEqual(d["decision"], "externalized", d)
        # The spill holds the message whole, its document as sent.
        spill = self.http.get(d["href"]).json["text"]
        self.assertEqual(json.loads(spill), self.HISTORY[0])

    def test_a_budget_too_small_for_the_pointers_is_refused_loudly(self):
        msgs = self.HISTORY[:2] + [user(
            {"type": "document", "source": {"type": "url", "url": "https://files.example/b.pdf"}},
            {"type": "text", "text": "And this one?"})]
        r = self.post("refused", self.body("anthropic", msgs, 100))
        err = self.assertError(r, 422, "CompactionFailure")
        required = err["required_budget"]
        self.assertGreater(required, 100)
        # A refusal spills nothing (its event records the failure).
        self.assertEqual(self.http.get("/v1/sessions/refused/spills").json["spills"], [])
        r = self.post("refused-1", self.body("anthropic", msgs, required - 1))
        self.assertError(r, 422, "CompactionFailure")
        self.assertEqual(self.http.get("/v1/sessions/refused-1/spills").json["spills"], [])
        # At required_budget both documents are behind pointers, none dropped.
        r = self.post("refused-ok", self.body("anthropic", msgs, required))
        self.assertEqual(r.status, 200, r.body)
        self.assertLessEqual(r.json["used_tokens"], required)
        self.assertEqual([d["decision"] for d in r.json["decisions"]],
                         ["externalized", "preserved", "externalized"])

    def test_answers_pass_the_sdk_types(self):
        cases = []
        for n, (name, fmt, msg, price) in enumerate(CASES):
            if fmt == "openai-responses":
                continue  # sdk_check.mjs types Chat Completions and Messages
            reply = {"role": "assistant", "content": "Read it."}
            msgs = [msg, reply, {"role": "user", "content": "Go on."}]
            for budget in (2 * PART_MAX, 300):
                r = self.post("sdk%d-%d" % (n, budget), self.body(fmt, msgs, budget))
                self.assertEqual(r.status, 200, r.body)
                spills = {d["key"]: self.http.get(d["href"]).json["text"]
                          for d in r.json["decisions"] if d["decision"] == "externalized"}
                cases.append({"name": name, "answer": r.json, "spills": spills,
                              "history": {"format": fmt, "messages": msgs,
                                          "origin": ["request"] * 3}})
        run_node_check(self, "sdk_check.mjs", cases)


class MalformedMediaTest(MediaBase):

    def refuse(self, fmt, msg, path):
        r = self.post("bad", self.body(fmt, [msg], 10**6))
        self.assertError(r, 400, "InvalidRequest", path)
        self.nothing_written("bad")

    def test_malformed_data_is_refused_with_its_path(self):
        at = "$.messages[0].content[0]"
        self.refuse("openai", user({"type": "file", "file": {"file_data": "data:application/pdf;base64,%%%"}}),
                    at + ".file.file_data")
        self.refuse("openai", user({"type": "file", "file": {"file_data": "data:text/plain,hi"}}),
                    at + ".file.file_data")
        self.refuse("openai", user({"type": "file", "file": {"file_id": 7}}), at + ".file.file_id")
        self.refuse("openai", user({"type": "file", "file": "file-abc"}), at + ".file")
        self.refuse("openai", user({"type": "input_audio", "input_audio": {"data": 5}}),
                    at + ".input_audio.data")
        self.refuse("openai", user({"type": "input_audio", "input_audio": {"data": "AA=A"}}),
                    at + ".input_audio.data")
        self.refuse("openai-responses", user({"type": "input_file", "file_data": "not base64!"}),
                    at + ".file_data")
        self.refuse("openai-responses", user({"type": "input_audio", "input_audio": {"format": "wav"}}),
                    at + ".input_audio.data")
        self.refuse("openai-responses", user({"type": "input_image", "image_url": 3}),
                    at + ".image_url")
        self.refuse("anthropic", user({"type": "document", "source": {
            "type": "base64", "media_type": "application/pdf", "data": "JVBE*"}}),
            at + ".source.data")
        self.refuse("anthropic", user({"type": "document", "source": {"type": "text", "data": 4}}),
                    at + ".source.data")
        self.refuse("anthropic", user({"type": "document", "title": 9, "source": {"type": "url",
                                                                                  "url": "u"}}),
                    at + ".title")
        self.refuse("anthropic", user({"type": "document", "source": {"type": "content",
                                                                      "content": 1}}),
                    at + ".source.content")
