"""How large the product's files, functions and folders may grow: a file
over MAX_FILE_LINES lines, a function over MAX_FUNCTION_LINES lines or a
folder of FOLDER_SOURCES_MAX with more .c files directly in it is a room
that holds more than one job."""
import os
import re

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
# Folders held to a number of .c files of their own (subfolders apart): the
# store splits by job (its types and scripts live below it) rather than
# grow past this.
FOLDER_SOURCES_MAX = {"store": 14}

# A function definition in the house style (clang-format's): the signature
# ends a line at column 0 or continues, and the body opens with "{" alone on
# a line and closes with "}" at column 0.
SIGNATURE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def product_files(root):
    for top in ("service", "store", "api"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.join(folder, n)


def functions(lines):
    """(name, first line, length) of every function body in lines."""
    start = None
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            j = i - 1
            while j > 0 and not SIGNATURE.search(lines[j]):
                j -= 1
            m = SIGNATURE.findall(lines[j])
            start, name = i, (m[0] if m else "?")
        elif line.startswith("}") and start is not None:
            yield name, start, i - start + 1
            start = None


def oversized(root):
    problems = []
    for path in product_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if len(lines) - 1 > MAX_FILE_LINES:
            problems.append("%s: %d lines (at most %d)" % (rel, len(lines) - 1, MAX_FILE_LINES))
        for name, first, n in functions(lines):
            if n > MAX_FUNCTION_LINES:
                problems.append("%s:%d: %s() is %d lines (at most %d)"
                                % (rel, first, name, n, MAX_FUNCTION_LINES))
    for folder, most in sorted(FOLDER_SOURCES_MAX.items()):
        path = os.path.join(root, folder)
        n = sum(1 for f in os.listdir(path) if f.endswith(".c")) if os.path.isdir(path) else 0
        if n > most:
            problems.append("%s/: %d .c files (at most %d: split it by job)" % (folder, n, most))
    return problems
