"""The MCP tools' input schemas (api/mcp/mcp_tools.json) beside the REST request
schemas of openapi.yaml that they mirror (its x-mcp-tools map).

    python3 tests/integration/mcp_schemas.py --write

rewrites the input schema of every tool that mirrors a request body from
openapi.yaml (its fields, inlined, plus the tool's own `session`), keeping
each tool's name, description and other schemas."""

import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "api", "mcp", "mcp_tools.json")


def load_spec():
    with open(os.path.join(ROOT, "openapi.yaml")) as f:
        return yaml.safe_load(f)


def load_tools():
    with open(TOOLS) as f:
        return json.load(f)


def resolve(spec, node, keep_descriptions=False):
    """node with every $ref inlined, and what is OpenAPI rather than JSON
    Schema (discriminator, examples) or, unless kept, prose (description)
    left out."""
    drop = ("discriminator", "example", "examples") + (() if keep_descriptions else ("description",))
    if isinstance(node, dict):
        if "$ref" in node:
            target = spec
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            merged = dict(resolve(spec, target, keep_descriptions))
            merged.update(resolve(spec, {k: v for k, v in node.items() if k != "$ref"}, keep_descriptions))
            return merged
        return {k: resolve(spec, v, keep_descriptions) for k, v in node.items() if k not in drop}
    if isinstance(node, list):
        return [resolve(spec, v, keep_descriptions) for v in node]
    return node


def operation(spec, operation_id):
    for item in spec["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                return item, op
    raise AssertionError("no operation " + operation_id)


def parameter(spec, item, op, name):
    for p in item.get("parameters", []) + op.get("parameters", []):
        p = resolve(spec, p)
        if p["name"] == name:
            return p["schema"]
    raise AssertionError("no parameter " + name)


def write():
    spec = load_spec()
    tools = load_tools()
    for tool in tools:
        mirror = spec["x-mcp-tools"][tool["name"]]
        if "request" not in mirror:
            continue
        rest = resolve(spec, {"$ref": mirror["request"]}, keep_descriptions=True)
        rest.pop("description", None)
        session = tool["inputSchema"]["properties"]["session"]
        rest["properties"] = dict([("session", session)] + list(rest["properties"].items()))
        rest["required"] = ["session"] + rest["required"]
        tool["inputSchema"] = rest
    with open(TOOLS, "w") as f:
        json.dump(tools, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    write()
