"""Checks HTTP requests and responses against compactd's openapi.yaml.

    spec = Spec("openapi.yaml")
    body = spec.validate("POST", "/v1/sessions/s1/compact", 200,
                         "application/json", raw_body_bytes)
    spec.validate_request("POST", "/v1/sessions/s1/compact", {"budget": 10, "units": []})

validate() finds the operation for a concrete request path (path templates
matched segment by segment), requires the status to be declared for it, the
Content-Type to be one it declares, and a JSON body to validate against the
response schema (JSON Schema Draft 2020-12, $refs resolved inside the spec).
A path no route matches may only answer the spec's NotFound response; a known
path with a method it does not serve may only answer that path's 405 response.
Either may also answer PayloadTooLarge (413), which compactd decides from
Content-Length before it looks up the route.
Every failure raises AssertionError with a message naming the operation.

Runs on /usr/bin/python3 with Debian's python3-jsonschema (4.10) and
python3-yaml; newer jsonschema releases (with the `referencing` package)
work too.
"""

import json
import re
import urllib.parse

import jsonschema
import yaml

try:  # jsonschema >= 4.18
    import referencing
    import referencing.jsonschema
except ImportError:  # Debian bookworm's jsonschema 4.10
    referencing = None

__all__ = ["Spec"]

_DOC_URI = "urn:compactd:openapi"
# Answers compactd gives before it looks up the route, so also to requests
# that match no operation: status -> the spec's shared response.
_PRE_ROUTING = {"413": "/components/responses/PayloadTooLarge"}
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings, as JSON would see them."""


_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _pointer_escape(token):
    return str(token).replace("~", "~0").replace("/", "~1")


def _pointer(*tokens):
    return "".join("/" + _pointer_escape(t) for t in tokens)


def _json_path(parts):
    out = "$"
    for p in parts:
        out += "[%d]" % p if isinstance(p, int) else "." + str(p)
    return out


def _media_base(content_type):
    return content_type.split(";", 1)[0].strip().lower() if content_type else ""


def _is_json_media(media):
    return media == "application/json" or media.endswith("+json")


def _reject_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError("duplicate object member %r" % k)
        obj[k] = v
    return obj


def _reject_constant(name):
    raise ValueError("non-JSON number %s" % name)


def _loads_strict(data):
    """Parses JSON text (bytes or str): UTF-8 only, no duplicate members, no NaN."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    return json.loads(data, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)


class _Route:
    def __init__(self, template, item, item_pointer):
        self.template = template
        self.item = item
        self.item_pointer = item_pointer
        self.names = []
        parts = []
        for segment in template.split("/"):
            pieces = re.split(r"\{([^}]+)\}", segment)
            rx = ""
            for i, piece in enumerate(pieces):
                if i % 2:
                    self.names.append(piece)
                    rx += "(?P<p%d>[^/]+)" % (len(self.names) - 1)
                else:
                    rx += re.escape(piece)
            parts.append(rx)
        self.regex = re.compile("^" + "/".join(parts) + "$")
        # More literal characters first, so /a/b beats /a/{x} when both match.
        self.literal_len = len(re.sub(r"\{[^}]+\}", "", template))

    def match(self, path):
        m = self.regex.match(path)
        if not m:
            return None
        return {name: m.group("p%d" % i) for i, name in enumerate(self.names)}

    def operations(self):
        return {m: self.item[m] for m in _METHODS if m in self.item}


class Spec:
    """An OpenAPI 3.1 document loaded for validation."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.doc = yaml.load(f, Loader=_SpecLoader)
        if not isinstance(self.doc, dict) or not str(self.doc.get("openapi", "")).startswith("3.1"):
            raise ValueError("%s is not an OpenAPI 3.1 document" % path)
        self.path = path
        self.routes = sorted(
            (
                _Route(template, item, _pointer("paths", template))
                for template, item in (self.doc.get("paths") or {}).items()
            ),
            key=lambda r: -r.literal_len,
        )
        self._validators = {}
        if referencing is not None:
            resource = referencing.jsonschema.DRAFT202012.create_resource(self.doc)
            self._registry = referencing.Registry().with_resource(_DOC_URI, resource)

    # ---- Document access ----

    def resolve(self, pointer):
        """Returns the node at a JSON pointer ("/components/schemas/Spill")."""
        node = self.doc
        for token in pointer.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def _deref(self, node, pointer):
        """Follows local $refs of a non-schema object; returns (node, pointer)."""
        seen = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/") or ref in seen:
                raise ValueError("cannot follow $ref %r in %s" % (ref, self.path))
            seen.add(ref)
            pointer = ref[1:]
            node = self.resolve(pointer)
        return node, pointer

    def _validator(self, schema_pointer):
        v = self._validators.get(schema_pointer)
        if v is None:
            wrapper = {"$ref": _DOC_URI + "#" + urllib.parse.quote(schema_pointer, safe="/~")}
            cls = jsonschema.Draft202012Validator
            if referencing is not None:
                v = cls(wrapper, registry=self._registry)
            else:
                resolver = jsonschema.RefResolver(_DOC_URI, self.doc, store={_DOC_URI: self.doc})
                v = cls(wrapper, resolver=resolver)
            self._validators[schema_pointer] = v
        return v

    def check_schema(self, schema_pointer, instance, what):
        """Validates instance against the schema at schema_pointer (Draft 2020-12)."""
        errors = sorted(
            self._validator(schema_pointer).iter_errors(instance),
            key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
        )
        if not errors:
            return
        lines = []
        for e in errors[:10]:
            lines.append("  at %s: %s" % (_json_path(e.absolute_path), _short(e.message)))
            for detail in _branch_details(e):
                lines.append("    " + detail)
        if len(errors) > 10:
            lines.append("  ... and %d more" % (len(errors) - 10))
        raise AssertionError(
            "%s does not match schema %s:\n%s\nbody: %s"
            % (what, schema_pointer, "\n".join(lines), _abbrev(instance))
        )

    # ---- Route lookup ----

    def find_route(self, path):
        """Returns (route, path parameters) for a concrete path, or (None, None)."""
        path = urllib.parse.urlsplit(path).path
        for route in self.routes:
            params = route.match(path)
            if params is not None:
                return route, params
        return None, None

    def _response_for(self, method, path, status):
        """Returns (what, response object, its pointer) for method, path and status."""
        route, _ = self.find_route(path)
        status = str(int(status))
        method = method.lower()
        if route is None:
            what = "%s %s (no route)" % (method.upper(), path)
            if status in _PRE_ROUTING:
                pointer = _PRE_ROUTING[status]
                return what, self.resolve(pointer), pointer
            if status != "404":
                raise AssertionError(
                    "%s: no path of the spec matches, so only 404 may answer; got %s" % (what, status)
                )
            pointer = "/components/responses/NotFound"
            return what, self.resolve(pointer), pointer
        ops = route.operations()
        if method not in ops:
            what = "%s %s (path %s serves %s)" % (
                method.upper(), path, route.template, ", ".join(m.upper() for m in ops))
            if status in _PRE_ROUTING:
                pointer = _PRE_ROUTING[status]
                return what, self.resolve(pointer), pointer
            if status != "405":
                raise AssertionError(
                    "%s: method not served, so only 405 may answer; got %s" % (what, status)
                )
            for m, op in ops.items():
                if "405" in op.get("responses", {}):
                    response = op["responses"]["405"]
                    pointer = route.item_pointer + _pointer(m, "responses", "405")
                    response, pointer = self._deref(response, pointer)
                    return what, response, pointer
            raise AssertionError("%s: the spec declares no 405 response on %s" % (what, route.template))
        op = ops[method]
        what = "%s %s (operation %s %s)" % (method.upper(), path, method.upper(), route.template)
        responses = op.get("responses", {})
        for key in (status, status[0] + "XX", "default"):
            if key in responses:
                pointer = route.item_pointer + _pointer(method, "responses", key)
                response, pointer = self._deref(responses[key], pointer)
                return what, response, pointer
        raise AssertionError(
            "%s: status %s is not declared in the spec (declared: %s)"
            % (what, status, ", ".join(sorted(responses)))
        )

    # ---- Responses ----

    def validate(self, method, path, status, content_type, body_bytes, headers=None):
        """Checks one response; returns the parsed JSON body (or the text, or None).

        method, path: the request (path may carry a query string); status: int;
        content_type: the response's Content-Type header or None; body_bytes:
        the raw body; headers: optional mapping of response headers, checked
        for the headers the spec marks required. Raises AssertionError."""
        what, response, pointer = self._response_for(method, path, status)
        what += " -> %s" % status
        if body_bytes is None:
            body_bytes = b""
        if isinstance(body_bytes, str):
            body_bytes = body_bytes.encode("utf-8")

        if headers is not None:
            present = {k.lower() for k in headers}
            for name, header in (response.get("headers") or {}).items():
                header, _ = self._deref(header, pointer)
                if header.get("required") and name.lower() not in present:
                    raise AssertionError("%s: required header %s is missing" % (what, name))

        content = response.get("content")
        if not content:
            if body_bytes:
                raise AssertionError(
                    "%s: the spec declares no body, got %d bytes: %s" % (what, len(body_bytes), _abbrev(body_bytes))
                )
            return None

        media = _media_base(content_type)
        declared = {_media_base(k): k for k in content}
        if media not in declared:
            raise AssertionError(
                "%s: Content-Type %r is not declared (declared: %s)" % (what, content_type, ", ".join(content))
            )
        key = declared[media]
        media_obj = content[key]
        schema_pointer = pointer + _pointer("content", key, "schema")

        if _is_json_media(media):
            try:
                body = _loads_strict(body_bytes)
            except ValueError as e:  # includes UnicodeDecodeError and JSONDecodeError
                raise AssertionError("%s: body is not valid JSON (%s): %s" % (what, e, _abbrev(body_bytes)))
            if "schema" in media_obj:
                self.check_schema(schema_pointer, body, what)
            return body

        try:
            text = body_bytes.decode("utf-8")
        except UnicodeDecodeError as e:
            raise AssertionError("%s: %s body is not UTF-8 (%s)" % (what, media, e))
        if media in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                yaml.load(text, Loader=_SpecLoader)
            except yaml.YAMLError as e:
                raise AssertionError("%s: body is not valid YAML (%s)" % (what, e))
        if "schema" in media_obj:
            self.check_schema(schema_pointer, text, what)
        return text

    # ---- Requests ----

    def validate_request(self, method, path, body=None, content_type="application/json"):
        """Checks one request against the spec; raises AssertionError.

        path may carry a query string; path and query parameters are checked
        against their schemas. body: None for no body, bytes/str of JSON, or an
        already parsed JSON value."""
        route, params = self.find_route(path)
        what = "request %s %s" % (method.upper(), path)
        if route is None:
            raise AssertionError("%s: no path of the spec matches" % what)
        op = route.operations().get(method.lower())
        if op is None:
            raise AssertionError("%s: %s does not serve %s" % (what, route.template, method.upper()))
        op_pointer = route.item_pointer + _pointer(method.lower())

        declared = {}
        for where, plist, base in (
            ("path-item", route.item.get("parameters", []), route.item_pointer + "/parameters"),
            ("operation", op.get("parameters", []), op_pointer + "/parameters"),
        ):
            for i, p in enumerate(plist):
                p, ppointer = self._deref(p, base + "/%d" % i)
                declared[(p["in"], p["name"])] = (p, ppointer)

        for name, raw in params.items():
            p, ppointer = declared[("path", name)]
            try:
                value = urllib.parse.unquote(raw, errors="strict")
            except UnicodeDecodeError:
                raise AssertionError("%s: path parameter %s is not percent-encoded UTF-8" % (what, name))
            self.check_schema(ppointer + "/schema", _coerce(value, p.get("schema")), "%s parameter %s" % (what, name))

        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query, keep_blank_values=True)
        for name, values in query.items():
            if ("query", name) not in declared:
                raise AssertionError("%s: query parameter %r is not declared" % (what, name))
            if len(values) > 1:
                raise AssertionError("%s: query parameter %r given %d times" % (what, name, len(values)))
        for (where, name), (p, ppointer) in declared.items():
            if where != "query":
                continue
            if name not in query:
                if p.get("required"):
                    raise AssertionError("%s: required query parameter %r is missing" % (what, name))
                continue
            self.check_schema(
                ppointer + "/schema", _coerce(query[name][0], p.get("schema")), "%s parameter %s" % (what, name)
            )

        request_body = op.get("requestBody")
        if request_body is None:
            if body is not None:
                raise AssertionError("%s: the operation takes no body" % what)
            return
        request_body, rb_pointer = self._deref(request_body, op_pointer + "/requestBody")
        if body is None:
            if request_body.get("required"):
                raise AssertionError("%s: a body is required" % what)
            return
        content = request_body.get("content", {})
        media = _media_base(content_type)
        keys = {_media_base(k): k for k in content}
        if media not in keys:
            raise AssertionError("%s: Content-Type %r is not declared (declared: %s)" % (what, content_type, ", ".join(content)))
        if isinstance(body, (bytes, bytearray, str)):
            try:
                body = _loads_strict(body)
            except ValueError as e:
                raise AssertionError("%s: body is not valid JSON (%s)" % (what, e))
        self.check_schema(rb_pointer + _pointer("content", keys[media], "schema"), body, what)


def _branch_details(error):
    """Explains a failed oneOf/anyOf: with an OpenAPI discriminator, the errors
    of the branch the discriminator selects; otherwise the closest branch."""
    if not error.context:
        return []
    schema = error.schema if isinstance(error.schema, dict) else {}
    disc = schema.get("discriminator")
    if error.validator == "oneOf" and disc and isinstance(error.instance, dict):
        prop = disc.get("propertyName")
        mapping = disc.get("mapping") or {}
        value = error.instance.get(prop)
        if value not in mapping:
            return ["(%s must be one of %s, got %r)" % (prop, ", ".join(sorted(mapping)), value)]
        branches = [b.get("$ref") if isinstance(b, dict) else None for b in schema.get("oneOf", [])]
        if mapping[value] in branches:
            index = branches.index(mapping[value])
            chosen = [c for c in error.context if c.relative_schema_path and c.relative_schema_path[0] == index]
            if chosen:
                return [
                    "(as %s=%r: at %s: %s)" % (prop, value, _json_path(c.absolute_path), _short(c.message))
                    for c in sorted(chosen, key=lambda c: list(map(str, c.absolute_path)))
                ]
    best = jsonschema.exceptions.best_match(error.context)
    return ["(closest branch: at %s: %s)" % (_json_path(best.absolute_path), _short(best.message))]


def _short(message, limit=300):
    return message if len(message) <= limit else message[:limit] + "..."


def _coerce(value, schema):
    """Converts a parameter string to the JSON type its (simple) schema names."""
    t = (schema or {}).get("type")
    if t == "integer" and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    if t == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def _abbrev(value, limit=400):
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value[:limit]).decode("utf-8", "replace")
    elif isinstance(value, str):
        text = value[:limit]
    else:
        text = json.dumps(value, ensure_ascii=False)[:limit]
    return text + ("..." if len(text) >= limit else "")
