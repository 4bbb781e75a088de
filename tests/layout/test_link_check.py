"""link_check.py on the built libraries as they are, and with one object
planted in a lower layer's set that calls a function defined above it (or
beside it), which it must refuse naming the symbol and both layers."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("COMPACTD_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
sys.path.insert(0, HERE)
import link_check  # noqa: E402


class BuiltTreeTest(unittest.TestCase):
    def test_the_build_passes(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "link_check.py"), BUILD],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_layer_with_sources_has_its_library(self):
        # A layer whose library the walk missed would be checked by nobody.
        libs, strays = link_check.libraries(BUILD)
        self.assertEqual(strays, [])
        for layer in ("service/core", "service", "store", "store/types", "api/http",
                      "api/runtime", "api/rest", "api/mcp", "api/proxy", "api/app"):
            self.assertIn(layer, libs)


class PlantedTest(unittest.TestCase):
    """Each case compiles a tiny object that calls one function, adds it to
    a layer's libraries and expects the check to name the call."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="link-check-")
        self.libs, _ = link_check.libraries(BUILD)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, layer, callee):
        src = os.path.join(self.tmp, "planted.c")
        with open(src, "w") as f:
            f.write("void %s(void);\nvoid planted_caller(void) { %s(); }\n" % (callee, callee))
        obj = os.path.join(self.tmp, "planted.o")
        lib = os.path.join(self.tmp, "libcompactd_planted.a")
        subprocess.run(["cc", "-c", "-o", obj, src], check=True)
        subprocess.run(["ar", "rcs", lib, obj], check=True)
        libs = {k: list(v) for k, v in self.libs.items()}
        libs[layer].append(lib)
        return link_check.check(libs)

    def refused(self, layer, callee, owner):
        problems = self.plant(layer, callee)
        self.assertEqual(len(problems), 1, problems)
        for word in (layer + ":", "planted.o", callee, "defined in " + owner,
                     "which %s may not use" % layer):
            self.assertIn(word, problems[0])

    def test_unchanged_sets_pass(self):
        self.assertEqual(link_check.check(self.libs), [])

    def test_http_calling_the_route_table(self):
        self.refused("api/http", "app_http_handlers", "api/app")

    def test_http_building_an_error_body_through_the_codec(self):
        self.refused("api/http", "json_encode_error", "api/codec/answers")

    def test_rest_calling_mcp_beside_it(self):
        self.refused("api/rest", "handle_mcp", "api/mcp")

    def test_core_calling_the_service(self):
        self.refused("service/core", "session_delete", "service")

    def test_store_calling_the_operations_above_it(self):
        self.refused("store", "ops_compact_plan", "service")

    def test_the_service_calling_the_store_past_its_session(self):
        # The planted object stands for a file of the service other than
        # session.c, writing to the store directly.
        problems = self.plant("service", "store_commit_keyed")
        self.assertEqual(len(problems), 1, problems)
        for word in ("service:", "planted.o", "store_commit_keyed", "defined in store",
                     "only service/session.c may call"):
            self.assertIn(word, problems[0])

    def test_a_call_outside_compactd_passes(self):
        self.assertEqual(self.plant("service/core", "abort"), [])

    def test_a_call_down_passes(self):
        self.assertEqual(self.plant("api/app", "session_id_valid"), [])


if __name__ == "__main__":
    unittest.main()
