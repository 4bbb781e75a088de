"""include_check.py on the tree as it is, and on copies of it with one wrong
include planted, each of which it must refuse by name."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHECK = os.path.join(HERE, "include_check.py")
sys.path.insert(0, HERE)
import include_check  # noqa: E402


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


class TreeTest(unittest.TestCase):
    def test_the_tree_passes(self):
        r = run(ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_product_file_is_in_a_layer(self):
        # A .c or .h outside the table's folders would escape the check.
        listed = {p for _, p in include_check.sources(ROOT)}
        for top in ("service", "store", "api"):
            for folder, _, names in os.walk(os.path.join(ROOT, top)):
                for n in names:
                    if n.endswith((".c", ".h")):
                        self.assertIn(os.path.join(folder, n), listed)
        self.assertGreater(len(listed), 100)


class PlantedTest(unittest.TestCase):
    """Each case adds one line to one file of a copy and expects a refusal
    that names the file and the header."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="include-check-")
        for top in ("service", "store", "api"):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(self.tmp, top),
                            ignore=shutil.ignore_patterns("ui", "*.json", "CMakeLists.txt"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, rel, line):
        path = os.path.join(self.tmp, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(line + "\n" + text)
        r = run(self.tmp)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn(rel + ":1:", r.stdout)
        return r.stdout

    def test_the_copy_passes_unchanged(self):
        self.assertEqual(run(self.tmp).returncode, 0)

    def test_core_including_the_tokenizer(self):
        self.assertIn('"tokenizer.h"', self.plant("service/core/plan.c", '#include "tokenizer.h"'))

    def test_service_including_http(self):
        self.assertIn("api/http", self.plant("service/compaction.c", '#include "http_server.h"'))

    def test_api_including_the_store(self):
        self.assertIn('"store.h"', self.plant("api/rest/answers.c", '#include "store.h"'))

    def test_rest_including_mcp_beside_it(self):
        self.assertIn("api/mcp", self.plant("api/rest/chat_handlers.c", '#include "mcp.h"'))

    def test_http_including_runtime_above_it(self):
        self.assertIn("api/runtime", self.plant("api/http/http_pool.c", '#include "config.h"'))

    def test_hiredis_outside_the_store(self):
        self.assertIn("<hiredis/hiredis.h>", self.plant("service/session.c", "#include <hiredis/hiredis.h>"))

    def test_openssl_outside_the_tls_file(self):
        self.assertIn("<openssl/ssl.h>", self.plant("store/conn.c", "#include <openssl/ssl.h>"))

    def test_microhttpd_outside_http(self):
        self.assertIn("<microhttpd.h>", self.plant("api/rest/ops_handlers.c", "#include <microhttpd.h>"))

    def test_a_header_that_does_not_exist(self):
        self.assertIn("no header", self.plant("store/api.c", '#include "nowhere.h"'))


if __name__ == "__main__":
    unittest.main()


import sizes  # noqa: E402


class SizesTest(unittest.TestCase):
    def test_no_file_or_function_is_too_large(self):
        self.assertEqual(sizes.oversized(ROOT), [])

    def test_a_long_function_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "service"))
            body = "\n".join("    x += %d;" % i for i in range(130))
            with open(os.path.join(tmp, "service", "long.c"), "w") as f:
                f.write("static int\nlong_one(int x)\n{\n%s\n    return x;\n}\n" % body)
            found = sizes.oversized(tmp)
            self.assertEqual(len(found), 1)
            self.assertIn("long_one()", found[0])
