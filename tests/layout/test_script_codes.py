"""script_codes.py on the tree as it is, and on copies of store/ with one
fault planted in a script or in the C that reads its reply, each of which it
must refuse by name."""
import os
import shutil
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
import sys  # noqa: E402

sys.path.insert(0, HERE)
import script_codes  # noqa: E402


class TreeTest(unittest.TestCase):
    def test_the_tree_passes(self):
        self.assertEqual(script_codes.mismatches(ROOT), [])

    def test_the_enum_and_the_scripts_are_read(self):
        # A check that reads nothing would pass anything.
        known = script_codes.codes(ROOT)
        self.assertIn("SCRIPT_PENDING", known)
        self.assertEqual(known["SCRIPT_KEY_REUSED"], -4)
        names = [rel for rel, _ in script_codes.scripts(ROOT)]
        for s in ("commit", "publish", "stage", "merge", "drop", "read", "probe"):
            self.assertIn("store/scripts/%s.lua" % s, names)


class PlantedTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="script-codes-")
        shutil.copytree(os.path.join(ROOT, "store"), os.path.join(self.tmp, "store"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, rel, old, new):
        path = os.path.join(self.tmp, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))
        problems = script_codes.mismatches(self.tmp)
        self.assertTrue(problems, "the planted fault passed")
        return "\n".join(problems)

    def test_the_copy_passes_unchanged(self):
        self.assertEqual(script_codes.mismatches(self.tmp), [])

    def test_a_code_the_enum_lacks(self):
        found = self.edit("store/scripts/commit.lua", "return 2 end -- SCRIPT_ALREADY_WRITTEN",
                          "return 3 end -- SCRIPT_ALREADY_WRITTEN")
        self.assertIn("store/scripts/commit.lua", found)
        self.assertIn("no code of layout_script_code has that value", found)

    def test_a_new_code_with_a_name_the_enum_lacks(self):
        found = self.edit("store/scripts/publish.lua", "return -2 end -- SCRIPT_PIECE_GONE",
                          "return -5 end -- SCRIPT_PIECES_GONE")
        self.assertIn("SCRIPT_PIECES_GONE, which layout_script_code lacks", found)

    def test_a_code_under_another_name(self):
        found = self.edit("store/scripts/merge.lua", "return 1 -- SCRIPT_MERGED",
                          "return 1 -- SCRIPT_NOT_MERGED")
        self.assertIn("named SCRIPT_NOT_MERGED, which is 0", found)

    def test_a_return_without_its_name(self):
        found = self.edit("store/scripts/retry.lua", "return -4 end -- SCRIPT_KEY_REUSED",
                          "return -4 end")
        self.assertIn("store/scripts/retry.lua", found)
        self.assertIn("names no code", found)

    def test_a_code_no_script_returns(self):
        found = self.edit("store/layout.h", "SCRIPT_STAGED = 1,",
                          "SCRIPT_STAGED = 1,\n    SCRIPT_UNUSED = 7,")
        self.assertIn("SCRIPT_UNUSED is returned by no script", found)

    def test_a_reply_read_against_a_number(self):
        found = self.edit("store/staged.c", "r->integer != SCRIPT_PENDING", "r->integer != -1")
        self.assertIn("store/staged.c", found)
        self.assertIn("read against a number", found)


if __name__ == "__main__":
    unittest.main()
