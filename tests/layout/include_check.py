#!/usr/bin/env python3
"""The layers of compactd and the arrows between them.

Each folder of product code is one layer and one CMake library. A file may
include the headers of its own layer and of the layers listed for it below,
nothing else: not a layer above (the build would also refuse it, since a
library links only what is below it), and not one beside it (which the build
does not see). Third-party headers are held to the layers that own them.

    include_check.py [ROOT]    exits 1 and names every wrong include
"""
import os
import re
import sys

# Bottom to top. A layer may use the layers it lists (not transitively:
# each list is the whole of what it may include).
# What the API layers may use of the domain, and the codec's four layers.
DOMAIN = ["service/core", "service/tokenizer", "service/compaction", "service/chat",
          "service/chat/formats", "service/chat/plan", "store/types", "service"]
CODEC = ["api/codec/json", "api/codec/requests", "api/codec/answers", "api/codec/chat"]

LAYERS = {
    "service/core": [],
    "service/tokenizer": ["service/core"],
    "service/compaction": ["service/core", "service/tokenizer"],
    "service/chat/media": [],
    # One descriptor per provider format: what the domain knows of each.
    "service/chat/formats": ["service/core", "service/tokenizer", "service/chat/media"],
    "service/chat": ["service/core", "service/tokenizer"],
    "service/chat/plan": ["service/core", "service/tokenizer", "service/compaction", "service/chat"],
    "store/types": [],
    "store": ["service/core", "store/types"],
    "service": ["service/core", "service/tokenizer", "service/compaction", "service/chat",
                "service/chat/plan", "store/types", "store"],
    "api/codec/json": DOMAIN,
    "api/codec/requests": DOMAIN + ["api/codec/json"],
    "api/codec/answers": DOMAIN + ["api/codec/json", "api/codec/requests"],
    "api/codec/chat": DOMAIN + ["service/chat/media", "api/codec/json", "api/codec/requests",
                                "api/codec/answers"],
    # The transport: the core's clock and the JSON layer's answer account;
    # no domain data, no error bodies of its own.
    "api/http": ["service/core", "api/codec/json"],
    "api/runtime": DOMAIN + CODEC + ["api/http"],
    "api/rest": DOMAIN + CODEC + ["api/http", "api/runtime"],
    "api/mcp": DOMAIN + CODEC + ["api/http", "api/runtime", "api/rest"],
    "api/proxy": DOMAIN + CODEC + ["api/http", "api/runtime", "api/rest", "api/mcp"],
    "api/app": DOMAIN + CODEC + ["api/http", "api/runtime", "api/rest", "api/mcp", "api/proxy"],
}

# Layers reached through one file only: of the layers that may use the
# store, only service/session.c includes its headers, so that the service
# has one road to it (session.h, in the domain's words) for reads and
# writes alike. link_check.py holds the same rule on the objects' symbols.
GATES = {"store": {"service/session.c"}}

# Who may include a library's headers (the library's own words in
# CMakeLists: the only hiredis user, the only libmicrohttpd user, ...): a
# layer, or one file of it.
THIRD_PARTY = {
    "hiredis/": {"store"},
    "openssl/": {"store/tls.c"},
    "microhttpd.h": {"api/http"},
    "pcre2.h": {"service/tokenizer"},
    "jansson.h": {"api/codec/json", "api/codec/requests", "api/codec/answers", "api/codec/chat",
                  "api/mcp", "api/proxy", "api/app"},
    "curl/": {"api/proxy"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def sources(root):
    for layer in LAYERS:
        folder = os.path.join(root, layer)
        for name in sorted(os.listdir(folder)):
            if name.endswith((".c", ".h")):
                yield layer, os.path.join(folder, name)


def header_layers(root):
    """Header name -> the layer that holds it (names are unique)."""
    where, clashes = {}, []
    for layer, path in sources(root):
        name = os.path.basename(path)
        if name.endswith(".h"):
            if name in where:
                clashes.append("%s: also in %s" % (os.path.relpath(path, root), where[name]))
            where[name] = layer
    return where, clashes


def check(root):
    where, problems = header_layers(root)
    for layer, path in sources(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            kind, name = m.group(1), m.group(2)
            if kind == "<":
                for prefix, owners in THIRD_PARTY.items():
                    if name.startswith(prefix) and layer not in owners and rel not in owners:
                        problems.append("%s:%d: <%s> belongs to %s, not %s"
                                        % (rel, line, name, ", ".join(sorted(owners)), layer))
                continue
            target = where.get(os.path.basename(name))
            if target is None:
                problems.append("%s:%d: \"%s\" is no header of the product" % (rel, line, name))
            elif target != layer and target not in LAYERS[layer]:
                problems.append("%s:%d: %s includes \"%s\" of %s, which it may not use"
                                % (rel, line, layer, name, target))
            elif target != layer and target in GATES and rel not in GATES[target]:
                problems.append("%s:%d: includes \"%s\" of %s, which only %s may include"
                                % (rel, line, name, target, ", ".join(sorted(GATES[target]))))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print("%d wrong include(s)" % len(problems))
        return 1
    print("every include points down or within its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
