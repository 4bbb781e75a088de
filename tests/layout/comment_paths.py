"""The paths the product's comments name: every file or folder a comment in
service/, store/ or api/ (C sources and headers, CMakeLists.txt) names
must exist, so that no comment sends a reader to a file that moved or
never was. A bare file name must be some file of the tree (or a system
header); a path with a folder is read from the root or from the
commenting file's folder; a glob must match a file.

    comment_paths.py [ROOT]    exits 1 and names every stale path
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
HASH_COMMENT = re.compile(r"#[^\n]*")
FILE = re.compile(r"(?<![\w/.*-])((?:[\w.*-]+/)*[\w*-]+\.(?:c|h|py|mjs|js|sh|md|lua|yaml|json|conf))\b")
FOLDER = re.compile(r"(?<![\w/.-])((?:api|service|store|tests|docs|bench|docker|scripts|clients|ranks)"
                    r"/(?:[\w-]+/)*)(?![\w.*])")


def tree(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def system_header(name):
    return any(glob.glob(p + name) for p in ("/usr/include/", "/usr/include/*/", "/usr/include/*/*/"))


def stale(root):
    files = tree(root)
    known = set(files)
    names = {os.path.basename(f) for f in files}
    folders = {os.path.dirname(f) for f in files}
    for f in list(folders):
        while f:
            f = os.path.dirname(f)
            folders.add(f)
    problems = []
    for f in files:
        if not f.startswith(("api/", "service/", "store/")):
            continue
        if f.endswith((".c", ".h")):
            pattern = C_COMMENT
        elif os.path.basename(f) == "CMakeLists.txt":
            pattern = HASH_COMMENT
        else:
            continue
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            comments = pattern.findall(fh.read())
        here = os.path.dirname(f)
        for c in comments:
            for p in FILE.findall(c):
                if "*" in p:
                    ok = any(fnmatch.fnmatch(k, p) or fnmatch.fnmatch(k, os.path.join(here, p))
                             for k in known)
                elif "/" in p:
                    ok = p in known or os.path.normpath(os.path.join(here, p)) in known
                else:
                    ok = p in names or system_header(p)
                if not ok:
                    problems.append("%s: names %s, which is no file" % (f, p))
            for p in FOLDER.findall(c):
                if p.rstrip("/") not in folders:
                    problems.append("%s: names %s, which is no folder" % (f, p))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = stale(os.path.abspath(root))
    for p in problems:
        print(p)
    print("%d stale path(s) in comments" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
