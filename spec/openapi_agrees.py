"""Where openapi.yaml states what spec/shared.json defines, they must agree:
the error types and their statuses, every enum of the chat formats, the
pointer's pattern, the characters a key keeps in a path, the reacquire tool's
name and arguments."""

import shared_spec as s


def enums(node, at=""):
    """(where, values) of every enum in node."""
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield at, node["enum"]
        for k, v in node.items():
            yield from enums(v, "%s/%s" % (at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from enums(v, "%s/%d" % (at, i))


def problems(spec, openapi):
    out = []
    schemas = openapi["components"]["schemas"]
    types = [e["type"] for e in spec["errors"]]
    if sorted(schemas["ErrorType"]["enum"]) != sorted(types):
        out.append("ErrorType's enum %s is not the spec's error types %s" % (schemas["ErrorType"]["enum"], types))
    prose = " ".join(openapi["info"]["description"].split())
    out += ["the description does not say %s %d" % (e["type"], e["status"]) for e in spec["errors"]
            if "%s %d" % (e["type"], e["status"]) not in prose]

    formats = s.format_names(spec)
    for where, values in enums(openapi):
        if formats[-1] in values and [v for v in values if v != "units"] != formats:
            out.append("the enum at %s lists formats %s, the spec %s" % (where, values, formats))

    if schemas["Pointer"]["pattern"] != s.pointer_schema_pattern(spec):
        out.append("Pointer's pattern %s is not %s" % (schemas["Pointer"]["pattern"], s.pointer_schema_pattern(spec)))
    if s.key_unreserved_class(spec) not in schemas["SpillHref"]["pattern"]:
        out.append("SpillHref's pattern does not keep %s" % s.key_unreserved_class(spec))

    tool = spec["reacquire_tool"]
    params = list(s.strict_parameters(tool)["properties"])
    listed = schemas["ToolParameters"]["properties"]["required"]["items"]["enum"]
    if listed != params:
        out.append("ToolParameters lists %s, the tool's arguments are %s" % (listed, params))
    if list(schemas["ToolParameters"]["properties"]["properties"]["properties"]) != params:
        out.append("ToolParameters' properties are not the tool's arguments %s" % params)
    names = {"OpenAIFunctionTool": schemas["OpenAIFunctionTool"]["properties"]["function"]["properties"]["name"],
             "AnthropicTool": schemas["AnthropicTool"]["properties"]["name"],
             "ResponsesFunctionTool": schemas["ResponsesFunctionTool"]["properties"]["name"]}
    out += ["%s names the tool %s, not %s" % (k, v.get("const"), tool["name"]) for k, v in names.items()
            if v.get("const") != tool["name"]]
    return out
