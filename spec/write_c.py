"""The server's copies: service/core/shared_defs.h (formats, the pointer
grammar, the key encoding), api/codec/answers/error_types.h (the error types
and their statuses as an X-macro, which error_status.c answers each kind of
error with), the reacquire tool
in each format's schema (service/chat/formats/reacquire_tools.h, which each
format's descriptor carries) and its entry in the per-session MCP tools/list
(api/mcp/mcp_session_tools.json)."""

import json
import re

import shared_spec as s


def c_string(text):
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) > 0x7e:
            raise ValueError("no such byte in a C definition: %r" % ch)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def macro(name):
    return name.upper().replace("-", "_")


def header(spec):
    p = spec["pointer"]
    names = s.format_names(spec)
    lines = [
        "/* " + s.NOTICE,
        " * What the server shares with its clients: the chat formats, the pointer",
        " * grammar (pointer.h reads and writes it) and how a key is written in a",
        " * path. */",
        "#ifndef COMPACTD_SHARED_DEFS_H",
        "#define COMPACTD_SHARED_DEFS_H",
        "",
        "/* The chat formats, by the name a request gives. */",
    ]
    lines += ["#define CHAT_FORMAT_%s %s" % (macro(n), c_string(n)) for n in names]
    lines += [
        "#define CHAT_FORMAT_COUNT %d" % len(names),
        "/* The formats as a message lists them, quoted and bare. */",
        "#define CHAT_FORMATS_QUOTED %s" % c_string(s.worded(names, '"')),
        "#define CHAT_FORMATS_LISTED %s" % c_string(s.worded(names, "")),
        "",
        "/* A pointer: POINTER_OPEN, the key (each byte of POINTER_ESCAPED written",
        " * %XX, upper-case hex), POINTER_DIGEST, the first POINTER_SHA_HEX hex",
        " * digits of the text's sha256, POINTER_CLOSE; POINTER_TRIMMED bytes around",
        " * it are ignored when it is read back. A key holds 1 to",
        " * UNIT_KEY_MAX_BYTES bytes. */",
        "#define POINTER_OPEN %s" % c_string(p["open"]),
        "#define POINTER_DIGEST %s" % c_string(p["digest"]),
        "#define POINTER_CLOSE %s" % c_string(p["close"]),
        "#define POINTER_SHA_HEX %d" % p["digest_hex"],
        "#define POINTER_ESCAPED %s" % c_string(p["escaped"]),
        "#define POINTER_TRIMMED %s" % c_string(p["trimmed"]),
        "#define UNIT_KEY_MAX_BYTES %d" % p["key_max_bytes"],
        "/* The bytes of a pointer besides its key as written. */",
        "#define POINTER_OVERHEAD %d" % s.pointer_overhead(spec),
        "",
        "/* A key in a path: ASCII letters, digits and these as they are, every",
        " * other byte %XX with upper-case hex. */",
        "#define KEY_UNRESERVED_PUNCTUATION %s" % c_string(spec["key_encoding"]["unreserved_punctuation"]),
    ]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def error_types(spec):
    lines = [
        "/* " + s.NOTICE,
        " * The error types an answer's body can carry, with their HTTP statuses:",
        " * the wire's side of the answer to each kind of error (error_status.c",
        " * maps the kinds to these), shared with the clients' error classes. */",
        "#ifndef COMPACTD_ERROR_TYPES_H",
        "#define COMPACTD_ERROR_TYPES_H",
        "",
        "/* X(id, status, type) for each error type. */",
        "#define ERROR_TYPES(X) \\",
    ]
    rows = ["    X(%s, %d, %s)" % (s.error_type_id(e["type"]), e["status"], c_string(e["type"]))
            for e in spec["errors"]]
    lines += [r + " \\" for r in rows[:-1]] + [rows[-1]]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def dumps(value):
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def c_string_lines(text, indent="    ", width=72):
    """text as adjacent C string literals, each line cut after a space or a
    comma once it holds width bytes of the text."""
    pieces, line = [], ""
    for word in re.findall(r"[^ ,]*[ ,]?", text):
        if line and len(line) + len(word) > width:
            pieces.append(line)
            line = ""
        line += word
    pieces.append(line)
    return " \\\n".join(indent + c_string(p) for p in pieces)


def reacquire_tools(spec):
    lines = [
        "/* " + s.NOTICE,
        " * The reacquire tool in each chat format's tool schema, as compact JSON:",
        " * what a format's descriptor (chat_format.c) carries. */",
        "#ifndef COMPACTD_REACQUIRE_TOOLS_H",
        "#define COMPACTD_REACQUIRE_TOOLS_H",
    ]
    for name, tool in s.provider_tools(spec).items():
        text = json.dumps(tool, separators=(",", ":"), ensure_ascii=False)
        lines += ["", "#define REACQUIRE_TOOL_%s \\" % macro(name), c_string_lines(text)]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def session_tools(spec, current):
    """mcp_session_tools.json with its reacquire entry the spec's, the other
    tools as they are."""
    tools = json.loads(current)
    name = spec["reacquire_tool"]["name"]
    if not any(t.get("name") == name for t in tools):
        raise ValueError("api/mcp/mcp_session_tools.json has no %s tool to rewrite" % name)
    return dumps([spec["reacquire_tool"] if t.get("name") == name else t for t in tools])


def outputs(spec, read):
    """{path from the repository root: content}; read(path) gives a file's
    current text, for the one file written in part."""
    return {
        "service/core/shared_defs.h": header(spec),
        "api/codec/answers/error_types.h": error_types(spec),
        "service/chat/formats/reacquire_tools.h": reacquire_tools(spec),
        "api/mcp/mcp_session_tools.json": session_tools(spec, read("api/mcp/mcp_session_tools.json")),
    }
