"""The TypeScript client's copies: src/definitions.ts (formats, the pointer
grammar, the key encoding, the reacquire tool in each format's schema) and
src/errors.ts (a class per error type of the server's, each with its fields,
and the table that maps a body's type to its class)."""

import json

import shared_spec as s

TS_TYPES = {"string": "string", "integer": "number", "number": "number", "string[]": "string[]",
            "any[]": "unknown[]", "ChatRequiredBy": "ChatRequiredBy",
            "ChatRequiredBy.kinds": "ChatRequiredBy['kinds']"}


def literal(value, indent=0):
    """value as a TypeScript literal (JSON is one), indented to sit at indent."""
    text = json.dumps(value, indent=4, ensure_ascii=False)
    return text.replace("\n", "\n" + " " * indent)


def definitions(spec):
    p = spec["pointer"]
    tool = spec["reacquire_tool"]
    tools = s.provider_tools(spec)
    schema = {"openai": "OpenAIFunctionTool", "anthropic": "AnthropicTool", "openai-responses": "ResponsesFunctionTool"}
    out = [
        "// " + s.NOTICE,
        "// What compactd's server and clients share: the chat formats, the pointer",
        "// grammar, how a key is written in a path, the reacquire tool.",
        "import type { components } from './generated/openapi.js';",
        "",
        "/** The chat formats, by the name a request gives. */",
        "export const CHAT_FORMATS = %s as const;" % json.dumps(s.format_names(spec)),
        "export type ChatFormatName = (typeof CHAT_FORMATS)[number];",
        "",
        "/**",
        " * A pointer: `open`, the key (each byte of `escaped` written %XX, upper-case",
        " * hex), `digest`, the first `digestHex` hex digits of the text's sha256,",
        " * `close`; `trimmed` characters around it are ignored when it is read back.",
        " * A key holds 1 to `keyMaxBytes` bytes of UTF-8.",
        " */",
        "export const POINTER = {",
        "    open: %s," % json.dumps(p["open"]),
        "    digest: %s," % json.dumps(p["digest"]),
        "    close: %s," % json.dumps(p["close"]),
        "    digestHex: %d," % p["digest_hex"],
        "    escaped: %s," % json.dumps(p["escaped"]),
        "    trimmed: %s," % json.dumps(p["trimmed"]),
        "    keyMaxBytes: %d," % p["key_max_bytes"],
        "} as const;",
        "/** A pointer once trimmed: the key as written (group 1) and the digest prefix (group 2). */",
        "export const POINTER_PATTERN = new RegExp(%s);" % json.dumps(s.pointer_pattern(spec)),
        "",
        "/** A key in a path: ASCII letters, digits and these as they are, every other byte %XX (upper-case hex). */",
        "export const KEY_UNRESERVED_PUNCTUATION = %s;" % json.dumps(spec["key_encoding"]["unreserved_punctuation"]),
        "",
        "/** The reacquire tool: its name and description, the same in every schema. */",
        "export const REACQUIRE_TOOL_NAME = %s;" % json.dumps(tool["name"]),
        "export const REACQUIRE_DESCRIPTION =",
        "    %s;" % json.dumps(tool["description"], ensure_ascii=False),
        "/** Its arguments as a JSON Schema in the strict form the providers take. */",
        "export const REACQUIRE_PARAMETERS = %s as const;" % literal(s.strict_parameters(tool)),
        "",
        "type Schemas = components['schemas'];",
        "/** The reacquire tool in each format's tool schema, as GET /v1/sessions/{session}/tools answers it. */",
        "export const REACQUIRE_TOOLS: {",
    ]
    out += ["    readonly %s: Schemas['%s'];" % (json.dumps(f), schema[f]) for f in s.format_names(spec)]
    out += ["} = {"]
    out += ["    %s: %s," % (json.dumps(f), literal(tools[f], 4)) for f in s.format_names(spec)]
    out += ["};", ""]
    return "\n".join(out)


def _doc(text, indent):
    pad = " " * indent
    return [pad + "/** " + text + " */"]


def _field(f):
    """The declaration and the constructor's assignment of one field."""
    name, ts = s.camel(f["name"]), TS_TYPES[f["type"]]
    source = f.get("from", "detail")
    default = f.get("default")
    if source == "client":
        return "    %s: %s = %s;" % (name, ts, json.dumps(default)), None
    if source.startswith("header:"):
        return ("    readonly %s: %s;" % (name, ts),
                "        this.%s = retryAfterSeconds(retryAfter, %s);" % (name, json.dumps(default)))
    if "." in source:
        head, tail = source.split(".")
        value = "detail.%s?.%s" % (head, tail)
    else:
        value = "detail.%s" % f["name"]
    if default is not None:
        value += " ?? %s" % json.dumps(default)
    else:
        ts += " | undefined"
    return "    readonly %s: %s;" % (name, ts), "        this.%s = %s;" % (name, value)


def camel_names(text, fields):
    """text with each `field_name` it quotes as the class spells it."""
    for f in fields:
        text = text.replace("`%s`" % f["name"], "`%s`" % s.camel(f["name"]))
    return text


def error_class(e):
    fields = e.get("fields", [])
    out = _doc("%d %s: %s" % (e["status"], e["type"], camel_names(e["summary"], fields)), 0)
    if not fields:
        return out + ["export class %s extends ErrorAnswer {}" % e["type"]]
    out.append("export class %s extends ErrorAnswer {" % e["type"])
    assigns = []
    for f in fields:
        decl, assign = _field(f)
        if "doc" in f:
            out += _doc(f["doc"], 4)
        out.append(decl)
        if assign:
            assigns.append(assign)
    if assigns:
        out += ["    constructor(status: number, detail: ErrorDetail, retryAfter: string | null = null) {",
                "        super(status, detail, retryAfter);"] + assigns + ["    }"]
    return out + ["}"]


def errors(spec):
    classes = s.client_errors(spec)
    out = [
        "// " + s.NOTICE,
        "// Typed exceptions for every error body compactd answers: a class per",
        "// `error.type` the client tells apart, each with that type's fields.",
        "import {",
        "    CompactdError, ErrorAnswer, answerError, retryAfterSeconds, type ChatRequiredBy, type ErrorDetail,",
        "} from './error_base.js';",
        "",
        "export * from './error_base.js';",
        "",
        "/** Each error type's HTTP status. */",
        "export const ERROR_STATUS = {",
    ]
    out += ["    %s: %d," % (e["type"], e["status"]) for e in spec["errors"]]
    out += ["} as const;", ""]
    for e in classes:
        out += error_class(e) + [""]
    out += [
        "/** The class of each error type that has one; any other type is a CompactdError. */",
        "export const ERROR_CLASSES: Readonly<Record<string, typeof ErrorAnswer>> = {",
    ]
    out += ["    %s," % e["type"] for e in classes]
    out += [
        "};",
        "",
        "/** Maps an error answer to its typed exception. */",
        "export function errorFromResponse(status: number, body: unknown, retryAfter: string | null): CompactdError {",
        "    return answerError(ERROR_CLASSES, status, body, retryAfter);",
        "}",
        "",
    ]
    return "\n".join(out)


def outputs(spec, read):
    del read
    return {
        "clients/typescript/src/definitions.ts": definitions(spec),
        "clients/typescript/src/errors.ts": errors(spec),
    }
