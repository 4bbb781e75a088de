"""The packaged artifact: `python3 -m build` on a copy of the package, the
wheel installed into a fresh venv, and the README's quick starts (extracted
from the README, not copied) run there against compactd and the loopback
mock provider (tests/clients/mock_provider.mjs, under node)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(PKG))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402

LOG = "ld: undefined reference to `retry_limit' — é ✓ 🚀\r\n\tat invoice.o\n" * 50
# The first user message, keyed by its digest (docs/chat.md).
POINTER = re.compile(r"\[externalized msg-[0-9a-f]{16} sha256:[0-9a-f]{16}\]")


def quick_start(name):
    """The ```python block right after `<!-- quickstart:NAME -->` in the README."""
    with open(os.path.join(PKG, "README.md"), encoding="utf-8") as f:
        m = re.search(r"<!-- quickstart:%s -->\s*```python\n(.*?)```" % re.escape(name), f.read(), re.S)
    if not m:
        raise AssertionError("no quick start %s in the README" % name)
    return m.group(1)


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="compactd-wheel-")
        src = os.path.join(cls.tmp, "src")
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("test", "build", "dist", "*.egg-info", "__pycache__"))
        # Debian's python3-build; no isolation, so setuptools comes from Debian, not a download.
        subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", os.path.join(cls.tmp, "dist"), src],
                       check=True, stdout=subprocess.DEVNULL)
        cls.wheels = [f for f in os.listdir(os.path.join(cls.tmp, "dist")) if f.endswith(".whl")]
        venv = os.path.join(cls.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        cls.python = os.path.join(venv, "bin", "python")
        subprocess.run([cls.python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                        os.path.join(cls.tmp, "dist", cls.wheels[0])], check=True)
        cls.work = os.path.join(cls.tmp, "work")
        os.mkdir(cls.work)
        with open(os.path.join(cls.work, "build.log"), "w", encoding="utf-8", newline="") as f:
            f.write(LOG)
        cls.redis = harness.Redis()
        cls.server = harness.Compactd(cls.redis.url())
        cls.mock = subprocess.Popen(["node", os.path.join(ROOT, "tests", "clients", "serve_mock.mjs")],
                                    stdout=subprocess.PIPE, text=True)
        cls.mock_url = cls.mock.stdout.readline().strip()

    @classmethod
    def tearDownClass(cls):
        cls.mock.terminate()
        cls.mock.wait(10)
        harness.stop_all(cls.server, cls.redis)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_wheel_is_pure_and_dependency_free(self):
        self.assertEqual(len(self.wheels), 1, self.wheels)
        self.assertRegex(self.wheels[0], r"^compactd-0\.1\.0-py3-none-any\.whl$")
        with zipfile.ZipFile(os.path.join(self.tmp, "dist", self.wheels[0])) as z:
            names = z.namelist()
            meta = z.read([n for n in names if n.endswith("/METADATA")][0]).decode()
        self.assertIn("compactd/py.typed", names)
        self.assertFalse([n for n in names if "/test" in n or n.startswith("test")], names)
        self.assertIn("Requires-Python: >=3.11", meta)
        self.assertNotIn("Requires-Dist", meta)
        where = subprocess.run([self.python, "-c", "import compactd; print(compactd.__file__)"], cwd=self.work,
                               capture_output=True, text=True, check=True).stdout
        self.assertTrue(where.startswith(os.path.join(self.tmp, "venv")), where)

    def run_quick_start(self, name, env):
        path = os.path.join(self.work, "quickstart_%s.py" % name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(quick_start(name))
        with urllib.request.urlopen(self.mock_url + "/_requests") as r:
            before = len(json.load(r))
        full_env = dict(os.environ, COMPACTD_URL="http://127.0.0.1:%d" % self.server.port, **env)
        run = subprocess.run([self.python, path], cwd=self.work, env=full_env, capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual(run.stderr, "")
        with urllib.request.urlopen(self.mock_url + "/_requests") as r:
            requests = json.load(r)[before:]
        return json.loads(run.stdout), requests

    def check_round_trip(self, name, history, requests, results):
        self.assertEqual(len(requests), 2, requests)
        for r in requests:
            self.assertEqual((r["api"], r["error"]), (name, None))
        body = requests[0]["body"]
        first = json.dumps(body["input"] if name == "openai-responses" else body["messages"], ensure_ascii=False)
        self.assertRegex(first, POINTER)
        self.assertNotIn("retry_limit", first)
        # The reacquire result is the spilled message, byte for byte.
        self.assertEqual(results, [json.dumps(history[0], ensure_ascii=False, separators=(",", ":"))])
        self.assertEqual(json.loads(results[0])["content"], "Why does the build fail?\n" + LOG)

    def test_openai_quick_start(self):
        history, requests = self.run_quick_start("openai", {"OPENAI_API_KEY": "test-key",
                                                            "OPENAI_BASE_URL": self.mock_url + "/v1"})
        self.check_round_trip("openai", history, requests, [m["content"] for m in history if m["role"] == "tool"])

    def test_responses_quick_start(self):
        items, requests = self.run_quick_start("openai-responses", {"OPENAI_API_KEY": "test-key",
                                                                    "OPENAI_BASE_URL": self.mock_url + "/v1"})
        self.check_round_trip("openai-responses", items, requests,
                              [i["output"] for i in items if i.get("type") == "function_call_output"])
        # The response's output came back as it was, reasoning first, then the call's output.
        self.assertEqual([i["type"] for i in items[1:]], ["reasoning", "function_call", "function_call_output", "message"])

    def test_anthropic_quick_start(self):
        history, requests = self.run_quick_start("anthropic", {"ANTHROPIC_API_KEY": "test-key",
                                                               "ANTHROPIC_BASE_URL": self.mock_url})
        results = [b["content"] for m in history if isinstance(m["content"], list)
                   for b in m["content"] if b["type"] == "tool_result"]
        self.check_round_trip("anthropic", history, requests, results)


if __name__ == "__main__":
    unittest.main()
