"""The client's types: mypy --strict (Debian's python3-mypy) passes the package and a program
using every answer (typed_usage.py), refuses that program with a misuse planted, and the program
runs against a real compactd and redis-server, so the types it relies on hold."""

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, SRC)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
import typed_usage  # noqa: E402
from compactd import Compactd  # noqa: E402
from compactd.aio import AsyncCompactd  # noqa: E402

# A misuse each, and what mypy must say of it.
PLANTED = [
    ('return r["used_tokens"], back["text"], by_key["text"]', 'return r["used_tokenz"], back["text"], by_key["text"]',
     'TypedDict "CompactResult" has no key "used_tokenz"'),
    ('return back["text"]', 'return back["tokens"]', 'Incompatible return value type (got "int", expected "str")'),
    ('least = e.required_budget', 'least = e.message', 'Incompatible types in assignment'),
    ('tools: SessionTools = c.tools(session, "anthropic")', 'tools: SessionTools = c.tools(session, "claude")',
     'Argument 2 to "tools" of "Compactd" has incompatible type'),
]


def mypy(*paths, cwd=HERE):
    env = dict(os.environ, MYPYPATH=SRC)
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                           *paths], cwd=cwd, env=env, capture_output=True, text=True)


class TypesTest(unittest.TestCase):
    def test_mypy_strict_passes_the_package_and_a_program_using_every_answer(self):
        r = mypy(os.path.join(SRC, "compactd"), os.path.join(HERE, "typed_usage.py"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Success: no issues found", r.stdout)

    def test_a_misuse_of_an_answer_is_refused(self):
        with open(os.path.join(HERE, "typed_usage.py"), encoding="utf-8") as f:
            source = f.read()
        tmp = tempfile.mkdtemp(prefix="compactd-types-")
        self.addCleanup(shutil.rmtree, tmp)
        for old, new, said in PLANTED:
            with self.subTest(planted=new):
                self.assertIn(old, source)
                with open(os.path.join(tmp, "typed_usage.py"), "w", encoding="utf-8") as f:
                    f.write(source.replace(old, new, 1))
                r = mypy("typed_usage.py", cwd=tmp)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn(said, r.stdout)


class TypedUsageTest(unittest.TestCase):
    """typed_usage.py's program against a real compactd: the answers are what its types say."""

    @classmethod
    def setUpClass(cls):
        cls.redis = harness.Redis()
        cls.server = harness.Compactd(cls.redis.url())
        cls.base = "http://127.0.0.1:%d" % cls.server.port

    @classmethod
    def tearDownClass(cls):
        harness.stop_all(cls.server, cls.redis)

    def test_the_program_runs(self):
        c = Compactd(self.base)
        used, text, by_key = typed_usage.units(c, "typed-units")
        self.assertEqual((text, by_key), (typed_usage.LOG, typed_usage.LOG))
        self.assertLessEqual(used, 80)
        kept, pointer, plan, low_water = typed_usage.messages(c, "typed-messages")
        self.assertEqual((kept, plan), (2, "fresh"))
        self.assertIsNotNone(low_water)
        self.assertLessEqual(low_water or 0, 60)
        self.assertRegex(pointer or "", r"^\[externalized msg-[0-9a-f]{16} sha256:[0-9a-f]{16}\]$")
        total, name, least = typed_usage.the_rest(c, "typed-rest")
        self.assertEqual((total > 0, name, least > 1), (True, "anthropic", True))
        self.assertEqual(asyncio.run(typed_usage.async_units(AsyncCompactd(self.base), "typed-aio")), typed_usage.LOG)


if __name__ == "__main__":
    unittest.main()
