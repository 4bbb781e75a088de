"""The Python client's copies: compactd/definitions.py (formats, the pointer
grammar, the key encoding, the reacquire tool in each format's schema) and
compactd/errors.py (a class per error type of the server's, each with its
fields, and the table that maps a body's type to its class)."""

import json
import textwrap

import shared_spec as s

# What each field type needs from compactd.types.
TYPE_IMPORTS = {"ChatRequiredBy": ("ChatRequiredBy",), "ChatRequiredBy.kinds": ("ChatRequiredByKindsItem",)}
PY_TYPES = {"string": "str", "integer": "int", "number": "float", "string[]": "list[str]",
            "any[]": "list[Any]", "ChatRequiredBy": "ChatRequiredBy",
            "ChatRequiredBy.kinds": "list[ChatRequiredByKindsItem]"}


def literal(value, indent=0):
    """value (JSON) as a Python literal, objects and arrays one member a line."""
    pad = " " * indent
    if isinstance(value, bool) or value is None:
        return {True: "True", False: "False", None: "None"}[value]
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(literal(v) for v in value) + "]"
        items = [pad + "    " + literal(v, indent + 4) + "," for v in value]
        return "[\n" + "\n".join(items) + "\n" + pad + "]"
    items = [pad + "    %s: %s," % (json.dumps(k), literal(v, indent + 4)) for k, v in value.items()]
    return "{\n" + "\n".join(items) + "\n" + pad + "}" if items else "{}"


def definitions(spec):
    p = spec["pointer"]
    tool = spec["reacquire_tool"]
    tools = s.provider_tools(spec)
    names = s.format_names(spec)
    out = [
        '"""' + s.NOTICE,
        "",
        "What compactd's server and clients share: the chat formats, the pointer grammar, how a key",
        'is written in a path, the reacquire tool."""',
        "",
        "import re",
        "from typing import Any, Literal",
        "",
        "# The chat formats, by the name a request gives.",
        "Format = Literal[%s]" % ", ".join(json.dumps(n) for n in names),
        "FORMATS: tuple[Format, ...] = (%s)" % "".join(json.dumps(n) + ", " for n in names).rstrip(" "),
        "",
        "# A pointer: POINTER_OPEN, the key (each byte of POINTER_ESCAPED written %XX, upper-case hex),",
        "# POINTER_DIGEST, the first POINTER_SHA_HEX hex digits of the text's sha256, POINTER_CLOSE;",
        "# POINTER_TRIMMED characters around it are ignored when it is read back. A key holds 1 to",
        "# KEY_MAX_BYTES bytes of UTF-8. POINTER_PATTERN matches one trimmed: the key as written, the digest.",
        "POINTER_OPEN = %s" % json.dumps(p["open"]),
        "POINTER_DIGEST = %s" % json.dumps(p["digest"]),
        "POINTER_CLOSE = %s" % json.dumps(p["close"]),
        "POINTER_SHA_HEX = %d" % p["digest_hex"],
        "POINTER_ESCAPED = %s" % json.dumps(p["escaped"]),
        "POINTER_TRIMMED = %s" % json.dumps(p["trimmed"]),
        "KEY_MAX_BYTES = %d" % p["key_max_bytes"],
        "POINTER_PATTERN = re.compile(%s)" % json.dumps(s.pointer_pattern(spec)),
        "",
        "# A key in a path: ASCII letters, digits and these as they are, every other byte %XX (upper-case hex).",
        "KEY_UNRESERVED_PUNCTUATION = %s" % json.dumps(spec["key_encoding"]["unreserved_punctuation"]),
        "",
        "# The reacquire tool: its name and description, the same in every schema, and its arguments",
        "# as a JSON Schema in the strict form the providers take.",
        "REACQUIRE_TOOL_NAME = %s" % json.dumps(tool["name"]),
        "REACQUIRE_DESCRIPTION = (",
    ]
    out += ["    %s" % json.dumps(chunk, ensure_ascii=False) for chunk in _chunks(tool["description"], 100)]
    out += [
        ")",
        "REACQUIRE_PARAMETERS: dict[str, Any] = %s" % literal(s.strict_parameters(tool)),
        "",
        "# The reacquire tool in each format's tool schema, as GET /v1/sessions/{session}/tools answers it.",
        "REACQUIRE_TOOLS: dict[Format, dict[str, Any]] = {",
    ]
    out += ["    %s: %s," % (json.dumps(f), literal(tools[f], 4)) for f in names]
    out += ["}", ""]
    return "\n".join(out)


def _chunks(text, width):
    """text in pieces of about width characters, cut after a space."""
    out = []
    while len(text) > width:
        cut = text.rfind(" ", 0, width) + 1 or width
        out.append(text[:cut])
        text = text[cut:]
    return out + [text]


def _field(f):
    """The constructor's line for one field."""
    name, py = f["name"], PY_TYPES[f["type"]]
    source = f.get("from", "detail")
    default = f.get("default")
    if source == "client":
        value = literal(default)
    elif source.startswith("header:"):
        value = "retry_after_seconds(retry_after, %s)" % literal(default)
    elif "." in source:
        head, tail = source.split(".")
        value = 'detail[%s][%s] if %s in detail else %s' % (json.dumps(head), json.dumps(tail), json.dumps(head),
                                                          literal(default))
    elif default is not None:
        value = "detail.get(%s, %s)" % (json.dumps(name), literal(default))
    else:
        value, py = "detail.get(%s)" % json.dumps(name), py + " | None"
    return "        self.%s: %s = %s" % (name, py, value)


def error_class(e):
    fields = e.get("fields", [])
    wrap = textwrap.TextWrapper(width=112, initial_indent="    ", subsequent_indent="    ")
    doc = wrap.wrap('"""%d %s: %s' % (e["status"], e["type"], e["summary"]))
    documented = [f for f in fields if "doc" in f]
    if documented:
        doc += [""]
        for f in documented:
            doc += textwrap.wrap("`%s`: %s" % (f["name"], f["doc"]), width=112, initial_indent="    ",
                                 subsequent_indent="        ")
    out = ["class %s(ErrorAnswer):" % e["type"]] + doc + (['    """'] if len(doc) > 1 else [])
    if len(doc) == 1:
        out[-1] += '"""'
    if fields:
        out += ["",
                "    def __init__(self, status: int, detail: ErrorDetail, retry_after: str | None = None):",
                "        super().__init__(status, detail, retry_after)"]
        out += [_field(f) for f in fields]
    return out


def errors(spec):
    classes = s.client_errors(spec)
    out = [
        '"""' + s.NOTICE,
        "",
        "Typed exceptions for compactd's error answers: a class per `error.type` the client tells",
        'apart, each with that type\'s fields."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "from .error_base import (CompactdError, ErrorAnswer, InvalidPointer, Timeout, TransportError, answer_error,",
        "                         retry_after_seconds)",
        "from .types import %s" % ", ".join(sorted({"ErrorDetail"} | {
            n for e in classes for f in e.get("fields", []) for n in TYPE_IMPORTS.get(f["type"], ())})),
        "",
        "__all__ = [",
        '    "CompactdError", "ErrorAnswer", "TransportError", "Timeout", "InvalidPointer", "ERROR_STATUS",',
        '    "ERROR_CLASSES", "error_from_response",',
    ]
    out += ['    "%s",' % e["type"] for e in classes]
    out += [
        "]",
        "",
        "# Each error type's HTTP status.",
        "ERROR_STATUS: dict[str, int] = {",
    ]
    out += ['    "%s": %d,' % (e["type"], e["status"]) for e in spec["errors"]]
    out += ["}", "", ""]
    for e in classes:
        out += error_class(e) + ["", ""]
    out += [
        "# The class of each error type that has one; any other type is a CompactdError.",
        "ERROR_CLASSES: dict[str, type[ErrorAnswer]] = {",
    ]
    out += ['    "%s": %s,' % (e["type"], e["type"]) for e in classes]
    out += [
        "}",
        "",
        "",
        "def error_from_response(status: int, body: Any, retry_after: str | None) -> CompactdError:",
        '    """Maps an error answer to its typed exception."""',
        "    return answer_error(ERROR_CLASSES, status, body, retry_after)",
        "",
    ]
    return "\n".join(out)


def outputs(spec, read):
    del read
    return {
        "clients/python/src/compactd/definitions.py": definitions(spec),
        "clients/python/src/compactd/errors.py": errors(spec),
    }
