"""Holds the answers a client test recorded to openapi.yaml, both ways.

A field the server sends and the spec does not declare fails validation:
every object schema a client response reaches must close itself with
`additionalProperties: false` (checked here too, so a new open object is
caught), and each recorded body is validated against its operation's
response schema (tests/integration/openapi_validate.py). A field the spec
declares and the server never sends fails coverage: every property of every
object schema the recorded 2xx bodies reach (named, inline, or the oneOf or
anyOf branch a value matches) must appear in at least one of them, so the
suites must exercise each field the generated types declare.

    python3 exchanges.py FILE...   (JSON arrays of {method, path, status,
                                    content_type, body}) checks them together.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from openapi_validate import Spec  # noqa: E402

SPEC_PATH = os.path.join(ROOT, "openapi.yaml")
_REF = "#/components/schemas/"
_SCHEMAS = "/components/schemas/"
# The operations the clients call; their 2xx schemas are what the generated types describe.
CLIENT_OPERATIONS = ("compactSession", "compactMessages", "verifyMessages", "listSpills", "getSpill",
                     "deleteSession", "verifyContext", "countTokens", "getSessionTools", "reacquireTool")


def _schema_name(node):
    ref = node.get("$ref", "") if isinstance(node, dict) else ""
    return ref[len(_REF):] if ref.startswith(_REF) else None


def _escape(token):
    return str(token).replace("~", "~0").replace("/", "~1")


def where(pointer):
    """A schema's pointer as a reader names it: CompactResult.budget_basis, RepairItem/oneOf/0."""
    if pointer.startswith(_SCHEMAS):
        pointer = pointer[len(_SCHEMAS):]
    return pointer.replace("/properties/", ".").replace("~1", "/").replace("~0", "~")


class Coverage:
    """Which properties of which object schemas the recorded bodies carried.

    Schemas are told apart by their place in the document, so an object
    declared inline (a property's own object, a branch of oneOf) is held
    to its properties as a named one is; a value reaches a oneOf or anyOf
    branch only when it matches that branch.
    """

    def __init__(self, spec):
        self.spec = spec
        self.seen = {}      # pointer of an object schema -> set of property names seen
        self.reached = set()

    def observe(self, pointer, value):
        node = self.spec.resolve(pointer)
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            self.observe(ref[1:], value)
        for i, _ in enumerate(node.get("allOf", [])):
            self.observe("%s/allOf/%d" % (pointer, i), value)
        for key in ("oneOf", "anyOf"):
            for i, _ in enumerate(node.get(key, [])):
                branch = "%s/%s/%d" % (pointer, key, i)
                if self.spec._validator(branch).is_valid(value):
                    self.observe(branch, value)
        props = node.get("properties")
        if isinstance(props, dict) and isinstance(value, dict):
            self.reached.add(pointer)
            self.seen.setdefault(pointer, set()).update(k for k in value if k in props)
            for k, v in value.items():
                if k in props:
                    self.observe("%s/properties/%s" % (pointer, _escape(k)), v)
        if isinstance(node.get("additionalProperties"), dict) and isinstance(value, dict):
            for k, v in value.items():
                if k not in (props or {}):
                    self.observe(pointer + "/additionalProperties", v)
        if isinstance(node.get("items"), dict) and isinstance(value, list):
            for v in value:
                self.observe(pointer + "/items", v)

    def unseen(self):
        """[(schema, property)] declared on a reached object schema and never seen."""
        out = []
        for pointer in sorted(self.reached):
            props = self.spec.resolve(pointer).get("properties") or {}
            out += [(where(pointer), p) for p in props if p not in self.seen.get(pointer, set())]
        return out


def _response_schema(spec, method, path, status):
    """(operationId, pointer of the answer's JSON schema or None)."""
    route, _ = spec.find_route(path)
    op = route.operations()[method.lower()]
    pointer = "%s/%s/responses/%s" % (route.item_pointer, method.lower(), status)
    resp, pointer = spec._deref(op["responses"].get(str(status)), pointer)
    if "application/json" not in (resp.get("content") or {}):
        return op.get("operationId"), None
    return op.get("operationId"), pointer + "/content/application~1json/schema"


def open_objects(spec):
    """Object schemas with properties, reachable from the client operations' 2xx answers,
    that do not close with additionalProperties: false."""
    out, todo, done = [], [], set()
    for template, item in spec.doc["paths"].items():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") in CLIENT_OPERATIONS:
                for status, resp in op["responses"].items():
                    if status.startswith("2"):
                        resp, _ = spec._deref(resp, "")
                        for media in (resp.get("content") or {}).values():
                            todo.append((op["operationId"] + " " + status, media.get("schema")))
    while todo:
        where, node = todo.pop()
        if not isinstance(node, dict) or id(node) in done:
            continue
        done.add(id(node))
        name = _schema_name(node)
        if name is not None:
            todo.append((name, spec.doc["components"]["schemas"][name]))
            continue
        if "properties" in node and node.get("additionalProperties") is not False:
            out.append(where)
        for k, v in (node.get("properties") or {}).items():
            todo.append((where + "." + k, v))
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                todo.append((where + "[]", node[key]))
        for key in ("allOf", "oneOf", "anyOf"):
            for sub in node.get(key, []):
                todo.append((where, sub))
    return sorted(set(out))


def check(exchanges, spec_path=SPEC_PATH):
    """Raises AssertionError naming the first drift between the answers and the spec."""
    spec = Spec(spec_path)
    opened = open_objects(spec)
    if opened:
        raise AssertionError("response objects without additionalProperties: false: %s" % ", ".join(opened))
    coverage = Coverage(spec)
    operations = set()
    for x in exchanges:
        body = x["body"].encode("utf-8") if isinstance(x["body"], str) else x["body"]
        parsed = spec.validate(x["method"], x["path"], x["status"], x["content_type"], body)
        if 200 <= x["status"] < 300:
            op_id, pointer = _response_schema(spec, x["method"], x["path"], x["status"])
            operations.add(op_id)
            if pointer is not None:
                coverage.observe(pointer, parsed)
    missing_ops = sorted(set(CLIENT_OPERATIONS) - operations)
    if missing_ops:
        raise AssertionError("no successful answer recorded for %s" % ", ".join(missing_ops))
    unseen = coverage.unseen()
    if unseen:
        raise AssertionError("declared in openapi.yaml, never sent by the server: %s"
                             % ", ".join("%s.%s" % u for u in unseen))
    return len(exchanges)


def load(paths):
    out = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            out += json.load(f)
    return out


if __name__ == "__main__":
    n = check(load(sys.argv[1:]))
    print("%d answers match openapi.yaml both ways" % n)
