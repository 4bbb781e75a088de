"""tests/README.md's "Every test" table against the tests ctest registers in
the build: every test listed once, with its labels, and no row for a test
that is gone; a table with a row missing, a stale row or a wrong label is
refused by name."""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")
BUILD = os.environ.get("COMPACTD_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
sys.path.insert(0, os.path.join(HERE, ".."))
import durations  # noqa: E402

ROW = re.compile(r"^\| `([^`]+)` \| ([^|]*) \| ([^|]*) \|$", re.M)


def table(text):
    """{name: [label, ...]} of the rows under "## Every test"."""
    part = text.split("\n## Every test\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for name, labels, _ in ROW.findall(part):
        labels = labels.strip()
        rows.setdefault(name, []).append([] if labels == "-" else labels.split(", "))
    return rows


def sanitized(build):
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        return re.search(r"^COMPACTD_SANITIZE:BOOL=ON$", f.read(), re.M) is not None


def problems(text, registered, sanitize):
    """What is wrong with the README's table for these registered tests."""
    rows, found = table(text), []
    for name, labels in registered:
        if name not in rows:
            found.append("%s: not in the table" % name)
        elif rows[name] != [labels]:
            found.append("%s: labels %s in the table, %s in ctest" % (name, rows[name], labels))
    names = {n for n, _ in registered}
    for name in rows:
        # A sanitizer build registers no valgrind test.
        if name not in names and not (sanitize and name.startswith("valgrind_")):
            found.append("%s: in the table, not in ctest" % name)
    return found


class ReadmeTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(README, encoding="utf-8") as f:
            cls.text = f.read()
        cls.registered = durations.tests(BUILD)
        cls.sanitize = sanitized(BUILD)

    def test_every_test_is_listed_with_its_labels(self):
        self.assertGreater(len(self.registered), 100)
        self.assertEqual(problems(self.text, self.registered, self.sanitize), [])

    def test_a_missing_row_is_found(self):
        name = self.registered[0][0]
        text = re.sub(r"^\| `%s` \|.*\n" % re.escape(name), "", self.text, flags=re.M)
        self.assertEqual(problems(text, self.registered, self.sanitize),
                         ["%s: not in the table" % name])

    def test_a_stale_row_is_found(self):
        text = self.text.replace("\n| `include_check` |", "\n| `gone_test` | quick | 1.0 |\n| `include_check` |")
        self.assertEqual(problems(text, self.registered, self.sanitize),
                         ["gone_test: in the table, not in ctest"])

    def test_a_wrong_label_is_found(self):
        text = re.sub(r"^\| `include_check` \| [^|]* \|", "| `include_check` | layout |", self.text,
                      flags=re.M)
        found = problems(text, self.registered, self.sanitize)
        self.assertEqual(len(found), 1)
        self.assertIn("include_check: labels [['layout']]", found[0])


if __name__ == "__main__":
    unittest.main()
