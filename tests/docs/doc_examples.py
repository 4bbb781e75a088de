"""Runs every curl example of README.md and docs/*.md against a real compactd
and a real redis-server, and compares each documented answer with the one
compactd gives, so that a documented output always reproduces.

The markup (tests/README.md says the same):
- A runnable example is a fenced block whose info string is `sh example`.
  Every other sh, bash, shell or console block must not hold `curl`: a curl
  the test does not run fails it.
- Its documented answer, when it has one, is the fenced block right after it
  (only blank lines between) whose info string is `json answer`: valid JSON,
  compared with what the example printed, parsed as JSON. Objects must have
  the same members (in any order), arrays the same items in the same order,
  numbers, booleans and null the same values, strings the same text, except
  a documented string that holds `…` (U+2026): it stands for any text there,
  so `"5d1e…"` matches any string that starts with `5d1e`, and `"…"` any
  string at all. That is the only way a documented answer leaves something
  out (digests, stream ids, timestamps), and it is visible to the reader.
- An example without an answer must succeed all the same: each curl in it
  runs with --fail-with-body, so an HTTP error status fails the test. (With
  an answer, the answer is the check: an error body documented, as /readyz's
  503 is, is compared like any other.)

- `sh example cluster` runs the example against a Redis Cluster instead.
- `sh example tls` runs it against a redis-server that speaks TLS only, on
  certificates made for the run: the first replica trusts the CA that signed
  Redis's certificate, the second another CA (and is never ready).

Each file gets its own redis-server and two compactd replicas over it (and,
for its cluster examples, a Redis Cluster of six nodes with two replicas
over that; for its tls examples, the TLS redis-server and its replicas); the examples of a file run in order (a later one reads what an
earlier one spilled), by bash in a temporary folder, with `localhost:8080`
and `127.0.0.1:8080` rewritten to the first replica's address and `:8081` to
the second's."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from cluster_harness import Cluster  # noqa: E402
from harness import Compactd, Redis, stop_all, wait_until  # noqa: E402
from redis_start import Certificates, Tls  # noqa: E402

FENCE = re.compile(r"^```(.*)$")
SHELLS = {"sh", "bash", "shell", "console"}
ELLIPSIS = "\u2026"
CURL = "curl() { command curl --silent --show-error %s\"$@\"; }\n"


class Block:
    def __init__(self, path, line, info, text):
        self.path = path
        self.line = line
        self.info = info.split()
        self.text = text
        self.answer = None

    def where(self):
        return "%s:%d" % (os.path.relpath(self.path, ROOT), self.line)


def doc_files():
    docs = os.path.join(ROOT, "docs")
    names = sorted(n for n in os.listdir(docs) if n.endswith(".md")) if os.path.isdir(docs) else []
    return [os.path.join(ROOT, "README.md")] + [os.path.join(docs, n) for n in names]


def blocks_of(path):
    """The fenced blocks of a markdown file, each answer attached to the
    example right before it."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i, prev_end = [], 0, -1
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, info, body = i, m.group(1).strip(), []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        block = Block(path, start + 1, info, "\n".join(body) + "\n")
        # Only blank lines since the previous block ended.
        block.follows = all(not line.strip() for line in lines[prev_end + 1:start])
        blocks.append(block)
        prev_end = i
        i += 1
    return blocks


def is_example(b):
    return b.info[:2] == ["sh", "example"]


def is_answer(b):
    return b.info[:2] == ["json", "answer"]


def pair(blocks):
    """Examples of one file, each with its answer (or None). Raises on a
    misplaced answer."""
    examples = []
    for n, b in enumerate(blocks):
        if is_example(b):
            examples.append(b)
        elif is_answer(b):
            before = blocks[n - 1] if n else None
            if before is None or not is_example(before) or not b.follows:
                raise AssertionError("%s: a `json answer` block must follow a `sh example`"
                                     % b.where())
            before.answer = b
    return examples


def mismatch(doc, got, path="$"):
    """Where got differs from the documented doc (None: it matches)."""
    if isinstance(doc, str) and ELLIPSIS in doc:
        head, tail = doc.split(ELLIPSIS, 1)
        tail = tail.replace(ELLIPSIS, "")
        if isinstance(got, str) and got.startswith(head) and got.endswith(tail) and \
                len(got) >= len(head) + len(tail):
            return None
        return "%s: documented %r, got %r" % (path, doc, got)
    if type(doc) is not type(got) and not (isinstance(doc, (int, float)) and
                                           isinstance(got, (int, float)) and
                                           not isinstance(doc, bool) and not isinstance(got, bool)):
        return "%s: documented %r, got %r" % (path, doc, got)
    if isinstance(doc, dict):
        if set(doc) != set(got):
            return "%s: documented members %s, got %s" % (path, sorted(doc), sorted(got))
        for k in doc:
            m = mismatch(doc[k], got[k], "%s.%s" % (path, k))
            if m:
                return m
        return None
    if isinstance(doc, list):
        if len(doc) != len(got):
            return "%s: documented %d items, got %d" % (path, len(doc), len(got))
        for n, (d, g) in enumerate(zip(doc, got)):
            m = mismatch(d, g, "%s[%d]" % (path, n))
            if m:
                return m
        return None
    return None if doc == got else "%s: documented %r, got %r" % (path, doc, got)


class MarkupTest(unittest.TestCase):
    """The matcher itself, so that it can fail."""

    def test_matcher(self):
        self.assertIsNone(mismatch({"a": [1, "5d1e…"]}, {"a": [1, "5d1eff"]}))
        self.assertIsNone(mismatch("…", "anything"))
        self.assertIsNone(mismatch("[x sha256:ab…]", "[x sha256:ab12]"))
        self.assertIsNotNone(mismatch("[x sha256:ab…]", "[x sha256:ab12"))
        self.assertIsNotNone(mismatch("5d1e…", "5d1f00"))
        self.assertIsNotNone(mismatch({"a": 1}, {"a": 1, "b": 2}))
        self.assertIsNotNone(mismatch([1, 2], [2, 1]))
        self.assertIsNotNone(mismatch({"n": 284}, {"n": 285}))
        self.assertIsNotNone(mismatch({"n": True}, {"n": 1}))
        self.assertIsNotNone(mismatch("…", 5))

    def test_every_curl_is_an_example(self):
        found = 0
        for path in doc_files():
            blocks = blocks_of(path)
            pair(blocks)
            for b in blocks:
                if is_example(b):
                    found += 1
                elif not b.info or b.info[0] in SHELLS:
                    self.assertNotIn("curl", b.text,
                                     "%s: a curl block not marked `sh example`" % b.where())
        self.assertGreater(found, 0, "no example found")


class MockProvider:
    """The loopback stand-in for the providers' APIs that the proxy examples
    call through compactd (tests/clients/serve_mock.mjs), stopped by pid."""

    def __init__(self):
        script = os.path.join(os.path.dirname(__file__), "..", "clients", "serve_mock.mjs")
        self.proc = subprocess.Popen(["node", script], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.url = self.proc.stdout.readline().decode().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.stop()
            raise RuntimeError("the mock provider did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc.stdout.close()


class Servers:
    """Two compactd replicas over one redis-server or, with kind "cluster",
    over a Redis Cluster of six nodes (tests/integration/cluster_harness.py),
    each replica seeded by other nodes, or with kind "tls" over a
    redis-server that speaks TLS only, the second replica trusting a CA that
    did not sign its certificate; ready once the replicas that can be answer
    /readyz. Their proxy routes forward to a mock provider
    (COMPACTD_UPSTREAM_*)."""

    def __init__(self, kind):
        self.certs = Certificates() if kind == "tls" else None
        self.redis = None
        self.replicas = []
        self.mock = None
        try:
            self.redis = Cluster() if kind == "cluster" else \
                Redis(tls=Tls(self.certs) if self.certs else None)
            self.mock = MockProvider()
            upstream = {"COMPACTD_UPSTREAM_OPENAI": self.mock.url + "/v1",
                        "COMPACTD_UPSTREAM_ANTHROPIC": self.mock.url + "/v1"}
            envs = [dict(upstream), dict(upstream)]
            if kind == "cluster":
                nodes = self.redis.nodes
                urls = ["redis+cluster://%s,%s/" % (nodes[0].addr(), nodes[1].addr()),
                        "redis+cluster://%s/" % nodes[4].addr()]
            else:
                urls = [self.redis.url()] * 2
            if self.certs:
                for env, ca in zip(envs, ("ca.crt", "other-ca.crt")):
                    env["COMPACTD_REDIS_TLS_CA_FILE"] = self.certs.path(ca)
            for url, env in zip(urls, envs):
                self.replicas.append(Compactd(url, env=env))
            for r in self.replicas[:1] if self.certs else self.replicas:
                client = r.client(validate=False)
                if not wait_until(lambda: client.get("/readyz").status == 200, timeout=30):
                    raise RuntimeError("compactd did not get ready:\n" + r.stderr())
        except BaseException:
            self.stop()
            raise

    def addresses(self):
        return ["127.0.0.1:%d" % r.port for r in self.replicas]

    def stop(self):
        try:
            stop_all(*self.replicas, *[r for r in (self.redis,) if r])
        finally:
            if self.mock:
                self.mock.stop()
            if self.certs:
                self.certs.remove()


class ExamplesTest(unittest.TestCase):
    def run_file(self, path):
        examples = pair(blocks_of(path))
        servers = {}
        try:
            with tempfile.TemporaryDirectory(prefix="compactd-docs-") as work:
                for ex in examples:
                    kind = next((k for k in ("cluster", "tls") if k in ex.info[2:]), "")
                    if kind not in servers:
                        servers[kind] = Servers(kind)
                    with self.subTest(example=ex.where()):
                        self.run_example(ex, *servers[kind].addresses(), work)
        finally:
            stop_all(*servers.values())
        return len(examples)

    def run_example(self, ex, a, b, work):
        script = ex.text
        for host in ("localhost", "127.0.0.1"):
            script = script.replace(host + ":8080", a).replace(host + ":8081", b)
        curl = CURL % ("" if ex.answer else "--fail-with-body ")
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", curl + script], cwd=work,
                             capture_output=True, timeout=120)
        self.assertEqual(out.returncode, 0, "%s: exit %d\n%s%s" % (
            ex.where(), out.returncode, out.stdout.decode(errors="replace"),
            out.stderr.decode(errors="replace")))
        if ex.answer is None:
            return
        try:
            doc = json.loads(ex.answer.text)
        except ValueError as e:
            self.fail("%s: the documented answer is not JSON: %s" % (ex.answer.where(), e))
        try:
            got = json.loads(out.stdout)
        except ValueError as e:
            self.fail("%s: the answer is not JSON (%s):\n%s" % (ex.where(), e, out.stdout))
        diff = mismatch(doc, got)
        self.assertIsNone(diff, "%s: %s\nthe whole answer: %s" % (
            ex.answer.where(), diff, json.dumps(got, ensure_ascii=False)))

    def test_examples(self):
        ran = sum(self.run_file(path) for path in doc_files())
        print("%d examples run" % ran, file=sys.stderr)
        self.assertGreater(ran, 0, "no example ran")


if __name__ == "__main__":
    unittest.main()
