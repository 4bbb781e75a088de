#!/usr/bin/env python3
"""The table of tests/README.md's "Every test": each ctest test of a build
folder with its labels and the seconds it took in that folder's last run
(Testing/Temporary/LastTest.log), the longest first.

    tests/durations.py BUILD [BUILD...]   prints the table's rows

A test missing from the last run of every folder given (a deep test after
a default run) is shown with "-": give a folder that ran it too."""
import os
import re
import sys

TIME = re.compile(r"^Test time =\s*([0-9.]+) sec")
NAME = re.compile(r"^[0-9]+/[0-9]+ Test: (\S+)$")


ADD = re.compile(r'^add_test\((\S+) ', re.M)
LABELS = re.compile(r'^set_tests_properties\((\S+) PROPERTIES .*? LABELS "([^"]*)"', re.M)
SUBDIR = re.compile(r'^subdirs\("([^"]+)"\)', re.M)


def tests(build):
    """[(name, [label, ...])] as ctest registers them in BUILD, read from its
    CTestTestfile.cmake files (a ctest run of its own would overwrite the
    folder's Testing/Temporary/LastTest.log)."""
    found, labels, folders = [], {}, [build]
    while folders:
        folder = folders.pop(0)
        path = os.path.join(folder, "CTestTestfile.cmake")
        if not os.path.exists(path):  # a folder of product code: no tests
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found += ADD.findall(text)
        labels.update(LABELS.findall(text))
        folders += [os.path.join(folder, d) for d in SUBDIR.findall(text)]
    return [(name, sorted(labels[name].split(";")) if name in labels else []) for name in found]


def seconds(build):
    """{name: seconds} of BUILD's last ctest run."""
    path = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    took, name = {}, None
    # "i/n Test: name" opens a test's record, its "Test time = s sec" ends it.
    for line in log.split("\n"):
        m = NAME.match(line)
        if m:
            name = m.group(1)
            continue
        m = TIME.match(line)
        if m and name:
            took[name] = float(m.group(1))
            name = None
    return took


def rows(builds):
    took = {}
    for b in builds:
        for name, s in seconds(b).items():
            took.setdefault(name, s)
    listed = tests(builds[0])
    listed.sort(key=lambda t: -took.get(t[0], -1))
    return ["| `%s` | %s | %s |" % (name, ", ".join(labels) or "-",
                                     "%.1f" % took[name] if name in took else "-")
            for name, labels in listed]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    print("| test | labels | seconds |\n| --- | --- | --- |")
    print("\n".join(rows(sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
