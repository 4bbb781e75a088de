#!/usr/bin/env python3
"""Writes every copy of the definitions the server and its two clients share
from spec/shared.json (and the Python client's answer types from
openapi.yaml), or checks that the committed copies are what it writes.

    spec/generate.py            rewrites the copies
    spec/generate.py --check    fails, naming each copy that differs, and
                                each place of openapi.yaml that disagrees
                                with the spec
    --root DIR                  the tree to write or check (default: this one)
"""

import argparse
import os
import sys

import yaml

import openapi_agrees
import shared_spec
import write_c
import write_py
import write_pytypes
import write_ts


def read_text(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def outputs(root):
    """{path: content} of every copy, from root's spec and openapi.yaml."""
    spec = shared_spec.load(os.path.join(root, "spec", "shared.json"))
    openapi = yaml.load(read_text(root, "openapi.yaml"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out = {}
    for written in (write_c.outputs(spec, lambda p: read_text(root, p)), write_ts.outputs(spec, None),
                    write_py.outputs(spec, None), write_pytypes.outputs(openapi)):
        out.update(written)
    return out, spec, openapi


def check(root):
    """The problems of root's copies, one line each."""
    expected, spec, openapi = outputs(root)
    problems = []
    for path, content in sorted(expected.items()):
        try:
            current = read_text(root, path)
        except FileNotFoundError:
            problems.append("%s: missing (run spec/generate.py)" % path)
            continue
        if current != content:
            line = next(i for i, (a, b) in enumerate(zip(current.split("\n") + [None], content.split("\n") + [None]))
                        if a != b) + 1
            problems.append("%s: differs from what spec/generate.py writes, from line %d" % (path, line))
    problems += ["openapi.yaml: " + p for p in openapi_agrees.problems(spec, openapi)]
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--root", default=shared_spec.ROOT)
    args = parser.parse_args()
    if args.check:
        problems = check(args.root)
        for p in problems:
            print(p)
        print("shared definitions: %d copies checked, %d problems" % (len(outputs(args.root)[0]), len(problems)))
        return 1 if problems else 0
    for path, content in outputs(args.root)[0].items():
        with open(os.path.join(args.root, path), "w", encoding="utf-8") as f:
            f.write(content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
