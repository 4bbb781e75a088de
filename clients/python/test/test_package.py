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


def install_lines():
    """The commands of the ```sh block right after `<!-- install -->` in the README, comments cut."""
    with open(os.path.join(PKG, "README.md"), encoding="utf-8") as f:
        m = re.search(r"<!-- install -->\s*```sh\n(.*?)```", f.read(), re.S)
    if not m:
        raise AssertionError("no install block in the README")
    return [re.sub(r"\s+#.*$", "", line).strip() for line in m.group(1).splitlines() if line.strip()]


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The README's install lines, as written, from the root of a copy of the
        # package's place in the tree, in a fresh venv (which sees Debian's
        # build and setuptools: no isolation, nothing downloaded), with no
        # package index within reach.
        cls.tmp = tempfile.mkdtemp(prefix="compactd-wheel-")
        root = os.path.join(cls.tmp, "clone")
        shutil.copytree(PKG, os.path.join(root, "clients", "python"),
                        ignore=shutil.ignore_patterns("test", "build", "dist", "*.egg-info", "__pycache__"))
        venv = os.path.join(cls.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
        cls.python = os.path.join(venv, "bin", "python")
        env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"],
                   PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_CACHE_DIR="1", PIP_QUIET="1")
        cls.lines = install_lines()
        for line in cls.lines:
            subprocess.run(line, shell=True, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
        dist = os.path.join(root, "clients", "python", "dist")
        cls.wheel_dir = dist
        cls.wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
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
        with zipfile.ZipFile(os.path.join(self.wheel_dir, self.wheels[0])) as z:
            names = z.namelist()
            meta = z.read([n for n in names if n.endswith("/METADATA")][0]).decode()
        self.assertIn("compactd/py.typed", names)
        self.assertIn("compactd/aio.py", names)
        self.assertFalse([n for n in names if "/test" in n or n.startswith("test")], names)
        self.assertIn("Requires-Python: >=3.11", meta)
        self.assertNotIn("Requires-Dist", meta)
        where = subprocess.run([self.python, "-c", "import compactd; print(compactd.__file__)"], cwd=self.work,
                               capture_output=True, text=True, check=True).stdout
        self.assertTrue(where.startswith(os.path.join(self.tmp, "venv")), where)

    def test_the_install_lines_build_the_wheel_and_install_it_from_no_index(self):
        build, install = self.lines
        self.assertRegex(build, r"^python3 -m build --wheel --no-isolation clients/python$")
        self.assertIn("--no-index", install.split())
        self.assertEqual(install.split()[-1], "clients/python/dist/" + self.wheels[0])
        shown = subprocess.run([self.python, "-m", "pip", "show", "compactd"], capture_output=True, text=True, check=True)
        self.assertIn("Version: 0.1.0", shown.stdout)

    def test_quick_starts_give_the_compaction_the_model_calls_tools(self):
        for name in ("openai", "anthropic", "openai-responses", "asyncio"):
            code = quick_start(name)
            compaction = [line for line in code.splitlines() if "compact_messages(" in line]
            self.assertEqual(len(compaction), 1, name)
            self.assertIn("tools=TOOLS", compaction[0], name)
            self.assertRegex(code, r'"tools": TOOLS\}', name)

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

    def test_asyncio_quick_start(self):
        history, requests = self.run_quick_start("asyncio", {"OPENAI_API_KEY": "test-key",
                                                             "OPENAI_BASE_URL": self.mock_url + "/v1"})
        self.check_round_trip("openai", history, requests, [m["content"] for m in history if m["role"] == "tool"])

    def test_anthropic_quick_start(self):
        history, requests = self.run_quick_start("anthropic", {"ANTHROPIC_API_KEY": "test-key",
                                                               "ANTHROPIC_BASE_URL": self.mock_url})
        results = [b["content"] for m in history if isinstance(m["content"], list)
                   for b in m["content"] if b["type"] == "tool_result"]
        self.check_round_trip("anthropic", history, requests, results)


if __name__ == "__main__":
    unittest.main()
