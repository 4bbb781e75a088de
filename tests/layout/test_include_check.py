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
    that names the file and the header. The copy is made once for the class
    and each planted file put back after its case: a copy of the tree per
    case, and a python3 per check, cost more than the checks themselves
    on a busy disk."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="include-check-")
        for top in ("service", "store", "api"):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(cls.tmp, top),
                            ignore=shutil.ignore_patterns("ui", "*.json", "CMakeLists.txt"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def plant(self, rel, line):
        path = os.path.join(self.tmp, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(line + "\n" + text)
            problems = include_check.check(self.tmp)
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        found = "\n".join(problems)
        self.assertTrue(any(p.startswith(rel + ":1:") for p in problems), found)
        return found

    def test_the_command_refuses_a_planted_include(self):
        # The command itself: exit 1 and the wrong include named.
        path = os.path.join(self.tmp, "service/core/plan.c")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write('#include "tokenizer.h"\n' + text)
            r = run(self.tmp)
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("service/core/plan.c:1:", r.stdout)

    def test_the_copy_passes_unchanged(self):
        self.assertEqual(include_check.check(self.tmp), [])
        self.assertEqual(run(self.tmp).returncode, 0)

    def test_core_including_the_tokenizer(self):
        self.assertIn('"tokenizer.h"', self.plant("service/core/plan.c", '#include "tokenizer.h"'))

    def test_service_including_http(self):
        self.assertIn("api/http", self.plant("service/commit.c", '#include "http_server.h"'))

    def test_the_service_writing_past_its_road_to_the_store(self):
        found = self.plant("service/commit.c", '#include "store.h"')
        self.assertIn("only service/session.c may include", found)

    def test_the_operations_reaching_the_store_without_the_session(self):
        self.assertIn("only service/session.c may include",
                      self.plant("service/ops_session.c", '#include "layout.h"'))

    def test_api_including_the_store(self):
        self.assertIn('"store.h"', self.plant("api/rest/answers.c", '#include "store.h"'))

    def test_rest_including_mcp_beside_it(self):
        self.assertIn("api/mcp", self.plant("api/rest/chat_handlers.c", '#include "mcp.h"'))

    def test_http_including_the_encoders(self):
        # The transport writes no error body itself: the codec's encoders
        # are above what it may use.
        self.assertIn("api/codec/answers",
                      self.plant("api/http/http_pool.c", '#include "json_encode.h"'))

    def test_http_including_runtime_above_it(self):
        self.assertIn("api/runtime", self.plant("api/http/http_pool.c", '#include "config.h"'))

    def test_hiredis_outside_the_store(self):
        self.assertIn("<hiredis/hiredis.h>", self.plant("service/session.c", "#include <hiredis/hiredis.h>"))

    def test_openssl_outside_the_tls_file(self):
        self.assertIn("<openssl/ssl.h>", self.plant("store/conn.c", "#include <openssl/ssl.h>"))

    def test_microhttpd_outside_http(self):
        self.assertIn("<microhttpd.h>", self.plant("api/rest/operator_handlers.c", "#include <microhttpd.h>"))

    def test_compaction_including_the_chat_model_above_it(self):
        self.assertIn("service/chat", self.plant("service/compaction/pricing.c", '#include "chat.h"'))

    def test_media_pricing_including_the_planner(self):
        self.assertIn("service/chat/plan",
                      self.plant("service/chat/media/chat_document.c", '#include "chat_plan.h"'))

    def test_the_chat_model_including_its_planner_above_it(self):
        self.assertIn("service/chat/plan",
                      self.plant("service/chat/chat_price.c", '#include "sticky_plan.h"'))

    def test_the_planner_including_the_service_above_it(self):
        self.assertIn('"ops.h"', self.plant("service/chat/plan/least_budget.c", '#include "ops.h"'))

    def test_json_including_the_decoders_above_it(self):
        self.assertIn("api/codec/requests",
                      self.plant("api/codec/json/json_shape.c", '#include "json_decode.h"'))

    def test_decoders_including_the_encoders_above_them(self):
        self.assertIn("api/codec/answers",
                      self.plant("api/codec/requests/json_units.c", '#include "json_encode.h"'))

    def test_encoders_including_a_chat_codec_above_them(self):
        self.assertIn("api/codec/chat",
                      self.plant("api/codec/answers/log_codec.c", '#include "chat_codec.h"'))

    def test_a_chat_codec_including_http_above_it(self):
        self.assertIn("api/http", self.plant("api/codec/chat/chat_openai.c", '#include "request.h"'))

    def test_jansson_in_media_pricing(self):
        self.assertIn("<jansson.h>",
                      self.plant("service/chat/media/chat_image.c", "#include <jansson.h>"))

    def test_a_header_that_does_not_exist(self):
        self.assertIn("no header", self.plant("store/store.c", '#include "nowhere.h"'))


import comment_paths  # noqa: E402


class CommentPathsTest(unittest.TestCase):
    def test_every_path_a_comment_names_exists(self):
        self.assertEqual(comment_paths.stale(ROOT), [])

    def test_a_stale_path_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["git", "init", "-q", tmp], check=True)
            os.makedirs(os.path.join(tmp, "service", "core"))
            with open(os.path.join(tmp, "service", "core", "a.h"), "w") as f:
                f.write("/* See service/core/c.h, b.c, api/http_*.c and api/gone/ too. */\n")
            with open(os.path.join(tmp, "service", "core", "b.h"), "w") as f:
                f.write("/* See a.h, ./a.h and service/core/. */\n")
            found = comment_paths.stale(tmp)
            self.assertEqual(len(found), 4, found)
            for name in ("service/core/c.h", "b.c", "api/http_*.c", "api/gone/"):
                self.assertTrue(any(name in p for p in found), (name, found))


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

    def test_a_store_of_too_many_files_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "store", "types"))
            for i in range(sizes.FOLDER_SOURCES_MAX["store"]):
                open(os.path.join(tmp, "store", "part%d.c" % i), "w").close()
            # A file in a subfolder is not the folder's own.
            open(os.path.join(tmp, "store", "types", "more.c"), "w").close()
            self.assertEqual(sizes.oversized(tmp), [])
            open(os.path.join(tmp, "store", "one_more.c"), "w").close()
            found = sizes.oversized(tmp)
            self.assertEqual(len(found), 1)
            self.assertIn("store/: 15 .c files", found[0])


if __name__ == "__main__":
    unittest.main()
