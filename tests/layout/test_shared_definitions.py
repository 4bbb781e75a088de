"""The definitions the server and both clients share (spec/shared.json): every
committed copy byte for byte what spec/generate.py writes, openapi.yaml in
agreement, and a copy with a drift planted refused by name."""

import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "spec"))

import generate  # noqa: E402

# One drift per copy: (path, text in it, what it becomes).
PLANTED = [
    ("api/codec/answers/error_types.h", 'X(ERROR_TYPE_CONFLICT, 409, "Conflict")',
     'X(ERROR_TYPE_CONFLICT, 400, "Conflict")'),
    ("service/core/shared_defs.h", '#define POINTER_SHA_HEX 16', '#define POINTER_SHA_HEX 12'),
    ("service/chat/formats/reacquire_tools.h", '\\"strict\\":true', '\\"strict\\":false'),
    ("api/mcp/mcp_session_tools.json", "never guess its content", "guess its content"),
    ("clients/typescript/src/definitions.ts", '"openai-responses"] as const', '"openai-response"] as const'),
    ("clients/typescript/src/definitions.ts", "digestHex: 16", "digestHex: 64"),
    ("clients/typescript/src/errors.ts", "StoreUnavailable: 503", "StoreUnavailable: 500"),
    ("clients/python/src/compactd/definitions.py", 'KEY_UNRESERVED_PUNCTUATION = "._~-"',
     'KEY_UNRESERVED_PUNCTUATION = "._~-/"'),
    ("clients/python/src/compactd/errors.py", '"candidates", [])', '"candidates", ())'),
    ("clients/python/src/compactd/types.py", '"used_tokens": TokenTotal,', '"used_tokens": int,'),
    ("openapi.yaml", "        - Conflict\n", ""),
    ("openapi.yaml", "sha256:[0-9a-f]{16}\\]$'", "sha256:[0-9a-f]{16,64}\\]$'"),
    ("openapi.yaml", "enum: [openai, anthropic, openai-responses]", "enum: [openai, openai-responses]"),
]


class SharedDefinitions(unittest.TestCase):
    def setUp(self):
        self.tree = tempfile.mkdtemp(prefix="compactd-shared-")
        self.addCleanup(shutil.rmtree, self.tree)
        copies, _, _ = generate.outputs(ROOT)
        for path in list(copies) + ["openapi.yaml", "spec/shared.json"]:
            os.makedirs(os.path.dirname(os.path.join(self.tree, path)), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, path), os.path.join(self.tree, path))

    def edit(self, path, old, new):
        full = os.path.join(self.tree, path)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text, "%s: nothing to plant at %r" % (path, old))
        with open(full, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))

    def test_the_tree_holds_what_the_generator_writes(self):
        self.assertEqual(generate.check(ROOT), [])

    def test_the_generator_writes_the_same_twice(self):
        self.assertEqual(generate.outputs(ROOT)[0], generate.outputs(self.tree)[0])

    def test_a_drift_planted_in_any_copy_is_refused_by_name(self):
        self.assertEqual(generate.check(self.tree), [], "the copy as taken")
        for path, old, new in PLANTED:
            with self.subTest(path=path, planted=new):
                shutil.copyfile(os.path.join(ROOT, path), os.path.join(self.tree, path))
                self.edit(path, old, new)
                problems = generate.check(self.tree)
                self.assertTrue(any(p.startswith(path + ":") for p in problems), problems)
                shutil.copyfile(os.path.join(ROOT, path), os.path.join(self.tree, path))
        self.assertEqual(generate.check(self.tree), [])

    def test_a_spec_changed_without_writing_fails_every_copy_it_reaches(self):
        spec_path = os.path.join(self.tree, "spec", "shared.json")
        with open(spec_path, encoding="utf-8") as f:
            spec = json.load(f)
        next(e for e in spec["errors"] if e["type"] == "Overloaded")["status"] = 429
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=2)
        named = {p.split(":")[0] for p in generate.check(self.tree)}
        self.assertEqual(named, {"api/codec/answers/error_types.h", "clients/typescript/src/errors.ts",
                                 "clients/python/src/compactd/errors.py", "openapi.yaml"})


if __name__ == "__main__":
    unittest.main()
