"""The Python client's answer types, compactd/types.py: a TypedDict for every
object schema of openapi.yaml an answer of the client's operations reaches
(the same schemas the TypeScript client's types are generated from), an
alias for every other named schema. What JSON Schema says beyond shapes
(patterns, bounds, if/then) stays in openapi.yaml."""

import json
import keyword

import shared_spec as s

# The answers of the client's operations, and the error body's detail.
ROOTS = ("CompactResult", "MessagesCompactResult", "VerifyResult", "MessagesVerifyResult", "TokensResult", "Spill",
         "SpillList", "SessionTools", "ErrorDetail")
REF = "#/components/schemas/"
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
# Keywords that only constrain a value of the shape given elsewhere.
CONSTRAINTS = ("if", "then", "else", "not", "dependentRequired", "required", "minItems", "maxItems", "minimum",
               "maximum", "minLength", "maxLength", "pattern", "description", "example", "examples", "format",
               "additionalProperties", "uniqueItems", "default", "discriminator", "title")


def py_literal(value):
    return repr(value) if isinstance(value, bool) or value is None else json.dumps(value, ensure_ascii=False)


def wrapped(names, width=100):
    """names as the lines of a list, each line within width."""
    lines, line = [], "   "
    for n in names:
        item = " %s," % json.dumps(n)
        if len(line) + len(item) > width:
            lines.append(line)
            line = "   "
        line += item
    return lines + [line]


class Types:
    def __init__(self, schemas):
        self.schemas = schemas
        self.defs = {}      # name -> (kind, body): ("dict", [(key, type, required)]) or ("alias", type)
        self.order = []     # names, each after what it uses
        self.pending = set()

    def named(self, name):
        """The Python name of the named schema, defined (with what it uses) first."""
        if name not in self.defs and name not in self.pending:
            self.pending.add(name)
            self.define(name, self.schemas[name])
            self.pending.discard(name)
        return name if name in self.defs else json.dumps(name)  # a cycle: forward reference

    def define(self, name, node):
        props = self.properties(node)
        if props is not None:
            fields = [(k, self.type_of(v, name + s.pascal(k)), k in props[1]) for k, v in props[0].items()]
            self.defs[name] = ("dict", fields)
        else:
            self.defs[name] = ("alias", self.type_of(node, name, alias=True))
        self.order.append(name)

    def properties(self, node):
        """(properties, required) of an object schema with properties, allOf's parts merged; else None."""
        if "$ref" in node:
            return None
        props, required, found = {}, set(node.get("required", [])), False
        if isinstance(node.get("properties"), dict) and node["properties"]:
            props.update(node["properties"])
            found = True
        for part in node.get("allOf", []):
            inner = self.properties(self.resolve(part)) if "$ref" in part else self.properties(part)
            if inner:
                props.update(inner[0])
                required |= set(inner[1])
                found = True
        return (props, required) if found else None

    def resolve(self, node):
        return self.schemas[node["$ref"][len(REF):]]

    def type_of(self, node, hint, alias=False):
        if not isinstance(node, dict):
            return "Any"
        if "$ref" in node:
            return self.named(node["$ref"][len(REF):])
        shapes = [p for p in node.get("allOf", []) if self.shaped(p)]
        if shapes and not node.get("properties"):
            if len(shapes) == 1:
                return self.type_of(shapes[0], hint)
        if not alias and self.properties(node) is not None:
            name = hint
            self.define(name, node)
            return name
        branches = [b for b in node.get("oneOf", []) + node.get("anyOf", []) if self.shaped(b)]
        if branches and "type" not in node:
            return " | ".join(self.type_of(b, "%s%d" % (hint, i)) for i, b in enumerate(branches))
        if alias and self.properties(node) is not None:
            raise ValueError("%s: an object schema named as an alias" % hint)
        return self.plain(node, hint)

    def shaped(self, node):
        """Whether node says what a value is, not only what it must not be."""
        return isinstance(node, dict) and any(k not in CONSTRAINTS for k in node)

    def plain(self, node, hint):
        if "const" in node:
            return "Literal[%s]" % py_literal(node["const"])
        types = node.get("type")
        types = types if isinstance(types, list) else [types] if types else []
        out = []
        for t in types:
            if t in ("string", "integer") and "enum" in node:
                out.append("Literal[%s]" % ", ".join(py_literal(v) for v in node["enum"] if v is not None))
            elif t == "array":
                out.append("list[%s]" % self.type_of(node.get("items", {}), hint + "Item"))
            elif t == "object":
                out.append("dict[str, Any]")
            else:
                out.append(SCALARS.get(t, "Any"))
        if not out and "enum" in node:
            out.append("Literal[%s]" % ", ".join(py_literal(v) for v in node["enum"]))
        return " | ".join(dict.fromkeys(out)) or "Any"

    def source(self):
        out = []
        for name in self.order:
            kind, body = self.defs[name]
            if kind == "alias":
                out += ["%s = %s" % (name, body), ""]
                continue
            out.append("%s = TypedDict(%s, {" % (name, json.dumps(name)))
            for key, t, required in body:
                out.append("    %s: %s," % (json.dumps(key), t if required else "NotRequired[%s]" % t))
            out += ["})", ""]
        return out


def types_module(openapi):
    types = Types(openapi["components"]["schemas"])
    for root in ROOTS:
        types.named(root)
    for name in list(types.defs):
        if keyword.iskeyword(name) or not name.isidentifier():
            raise ValueError("a schema name Python cannot use: %s" % name)
    out = [
        '"""' + s.NOTICE + " (From openapi.yaml.)",
        "",
        "compactd's answers as TypedDicts: every object an answer of Compactd's and AsyncCompactd's",
        "operations holds, from the schemas of openapi.yaml. A member the schema leaves optional is",
        'NotRequired; the bounds and patterns the schema states are checked by the server, not here."""',
        "",
        "from typing import Any, Literal, NotRequired, TypedDict",
        "",
        "__all__ = [",
    ] + wrapped(sorted(types.defs)) + [
        "]",
        "",
    ]
    return "\n".join(out + types.source())


def outputs(openapi):
    return {"clients/python/src/compactd/types.py": types_module(openapi)}
