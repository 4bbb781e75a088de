#!/usr/bin/env python3
"""The codes the store's Redis scripts answer with, named once.

store/layout.h's layout_script_code gives each code its name and value;
every script in store/scripts/ names the code where it returns one
(`return -1 -- SCRIPT_PENDING`), and the C code compares a script's reply
with the names, never with a bare number. This check fails on a script that
returns an integer the enum lacks, or under a name that is not the enum's
for that value, or with no name; on a code no script returns; and on C in
store/ that reads a reply's integer against a number.

    script_codes.py [ROOT]    exits 1 and names every mismatch
"""
import os
import re
import sys

ENUM = re.compile(r"typedef enum \{(.*?)\} layout_script_code;", re.S)
C_COMMENT = re.compile(r"/\*.*?\*/", re.S)
MEMBER = re.compile(r"\b(SCRIPT_[A-Z_]+)\s*=\s*(-?\d+)")
# A return of an integer, and what follows it on its line.
RETURN = re.compile(r"\breturn\s+(-?\d+)\b([^\n]*)")
NAMED = re.compile(r"^(?:\s*end)*\s*--\s*(SCRIPT_[A-Z_]+)\s*$")
LITERAL_READ = re.compile(r"->integer\s*(?:[!=]=|[<>]=?)\s*-?\d")


def codes(root):
    """Name -> value of layout_script_code."""
    with open(os.path.join(root, "store", "layout.h"), encoding="utf-8") as f:
        m = ENUM.search(f.read())
    if not m:
        return {}
    return {name: int(v) for name, v in MEMBER.findall(C_COMMENT.sub("", m.group(1)))}


def scripts(root):
    folder = os.path.join(root, "store", "scripts")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".lua"):
            yield os.path.join("store", "scripts", name), os.path.join(folder, name)


def mismatches(root):
    known = codes(root)
    problems = [] if known else ["store/layout.h: no enum layout_script_code"]
    returned = set()
    for rel, path in scripts(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in RETURN.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            value, rest = int(m.group(1)), m.group(2)
            named = NAMED.match(rest)
            if not named:
                problems.append("%s:%d: return %d names no code (end the line with "
                                "'-- SCRIPT_...')" % (rel, line, value))
            elif named.group(1) not in known:
                problems.append("%s:%d: return %d is named %s, which layout_script_code lacks"
                                % (rel, line, value, named.group(1)))
            elif known[named.group(1)] != value:
                problems.append("%s:%d: return %d is named %s, which is %d"
                                % (rel, line, value, named.group(1), known[named.group(1)]))
            else:
                returned.add(named.group(1))
            if value not in known.values():
                problems.append("%s:%d: return %d: no code of layout_script_code has that value"
                                % (rel, line, value))
    for name in sorted(set(known) - returned):
        problems.append("store/layout.h: %s is returned by no script in store/scripts/" % name)
    for folder, _, names in os.walk(os.path.join(root, "store")):
        for n in sorted(names):
            if not n.endswith(".c"):
                continue
            path = os.path.join(folder, n)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in LITERAL_READ.finditer(text):
                problems.append("%s:%d: a reply's integer read against a number, not a "
                                "layout_script_code" % (os.path.relpath(path, root),
                                                        text.count("\n", 0, m.start()) + 1))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = mismatches(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print("%d mismatch(es)" % len(problems))
        return 1
    print("every script returns codes layout_script_code names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
