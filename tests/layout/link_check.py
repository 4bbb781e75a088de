#!/usr/bin/env python3
"""The layers of compactd as the linker sees them.

include_check.py reads includes; a file can still call a function of a
layer above it through a prototype it declares itself, or through a header
of its own layer that declares a function defined higher up. This check
reads the built static libraries instead: every symbol a library of a layer
leaves undefined must be defined in that library, in a library of a layer
include_check.LAYERS lets it use, or outside compactd (the C library,
jansson, libmicrohttpd, ...).

    link_check.py BUILD_DIR    exits 1 and names every call that points
                               up or sideways, with both layers
"""
import functools
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from include_check import GATES, LAYERS  # noqa: E402

PREFIX = "libcompactd_"


def libraries(build):
    """Layer -> the product's static libraries built in its folder, and the
    libraries found in folders that are no layer (each one a problem: it
    would escape the check)."""
    found, strays = {}, []
    # The build's own list (tests/layout/CMakeLists.txt), when it has one:
    # an archive an earlier layout left behind is not built any more.
    listed = os.path.join(build, "product_libraries.txt")
    current = None
    if os.path.exists(listed):
        with open(listed, encoding="utf-8") as f:
            current = {os.path.realpath(line.strip()) for line in f if line.strip()}
    for folder, dirs, names in os.walk(build):
        dirs[:] = [d for d in dirs if d not in ("CMakeFiles", "tests", "bench", "node_modules")]
        for n in sorted(names):
            if n.startswith(PREFIX) and n.endswith(".a"):
                if current is not None and os.path.realpath(os.path.join(folder, n)) not in current:
                    continue
                layer = os.path.relpath(folder, build).replace(os.sep, "/")
                if layer in LAYERS:
                    found.setdefault(layer, []).append(os.path.join(folder, n))
                else:
                    strays.append(os.path.join(folder, n))
    return found, strays


@functools.lru_cache(maxsize=None)
def symbols(archive):
    """(defined, undefined) global symbols of an archive: defined is a set,
    undefined a list of (object, symbol)."""
    out = subprocess.run(["nm", "-A", "-P", "-g", archive], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), []
    for line in out.splitlines():
        where, _, rest = line.partition(": ")
        fields = rest.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        obj = where[where.find("[") + 1:-1] if where.endswith("]") else os.path.basename(where)
        if kind in ("U", "w"):
            undefined.append((obj, name))
        else:
            defined.add(name)
    return frozenset(defined), tuple(undefined)


def gate_object(path):
    """(layer, object) of a source file as CMake names its object."""
    return os.path.dirname(path), os.path.basename(path) + ".o"


def check(libs):
    """libs: layer -> archives. Returns the problems, one line each."""
    defined, undefined = {}, {}
    for layer, archives in libs.items():
        defined[layer], undefined[layer] = set(), []
        for a in archives:
            d, u = symbols(a)
            defined[layer] |= d
            undefined[layer] += u
    owners = {}
    for layer, names in defined.items():
        for n in names:
            owners.setdefault(n, set()).add(layer)
    problems = []
    for layer in sorted(undefined):
        allowed = set(LAYERS[layer]) | {layer}
        for obj, name in undefined[layer]:
            where = owners.get(name)
            if not where:
                continue
            if not where & allowed:
                problems.append("%s: %s calls %s, defined in %s, which %s may not use"
                                % (layer, obj, name, ", ".join(sorted(where)), layer))
                continue
            for gated in sorted(where & set(GATES)):
                gate = GATES[gated]
                if gated != layer and (layer, obj) not in {gate_object(f) for f in gate}:
                    problems.append("%s: %s calls %s, defined in %s, which only %s may call"
                                    % (layer, obj, name, gated, ", ".join(sorted(gate))))
    return sorted(set(problems))


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip())
        return 2
    libs, strays = libraries(sys.argv[1])
    problems = ["%s: a product library in a folder that is no layer of include_check.LAYERS" % s
                for s in strays] + check(libs)
    if not libs:
        problems.append("no %s*.a under %s: build first" % (PREFIX, sys.argv[1]))
    for p in problems:
        print(p)
    if problems:
        print("%d wrong call(s)" % len(problems))
        return 1
    print("every call between %d libraries points down or within its layer"
          % sum(len(a) for a in libs.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
