"""Self-test of tests/integration/openapi_validate.py against openapi.yaml.

Usage: validate_selftest.py [repo-root]

Checks that every example embedded in the spec validates (responses with
validate(), request bodies with validate_request()), that bodies with a
missing field, a wrong type, a broken per-class rule, an undeclared status or
an undeclared Content-Type are rejected, and that the spec declares the error
statuses every route must be able to answer.
"""

import copy
import json
import os
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from openapi_validate import Spec  # noqa: E402

VERBOSE = bool(os.environ.get("SELFTEST_VERBOSE"))
checks = 0
failures = 0


def check(ok, what):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        print("FAIL: %s" % what)


def accepts(fn, what):
    try:
        fn()
    except AssertionError as e:
        check(False, "%s was rejected:\n%s" % (what, e))
        return
    check(True, what)


def rejects(fn, what, needle=None):
    try:
        fn()
    except AssertionError as e:
        msg = str(e)
        if VERBOSE:
            print("rejected %s:\n  %s" % (what, "\n  ".join(msg.splitlines()[:4])))
        check(needle is None or needle in msg, "%s: rejected, but the message lacks %r:\n%s" % (what, needle, msg))
        return
    check(False, "%s was accepted" % what)


spec = Spec(os.path.join(ROOT, "openapi.yaml"))
doc = spec.doc

SESSION = "agent-7"
C = "/v1/sessions/%s/compact" % SESSION
S = "/v1/sessions/%s/spills" % SESSION
V = "/v1/sessions/%s/verify" % SESSION
E = "/v1/sessions/%s/events" % SESSION
J = "application/json"


def enc(value):
    return json.dumps(value).encode("utf-8")


def example(pointer):
    return copy.deepcopy(spec.resolve(pointer))


def concrete(template, item, op):
    """The template with each path parameter replaced by its example."""
    path = template
    for p in list(item.get("parameters", [])) + list(op.get("parameters", [])):
        p, _ = spec._deref(p, "")
        if p["in"] == "path":
            path = path.replace("{%s}" % p["name"], p["example"])
    return path


def media_examples(media_obj):
    if "example" in media_obj:
        yield "example", media_obj["example"]
    for name, ex in (media_obj.get("examples") or {}).items():
        ex, _ = spec._deref(ex, "")
        yield name, ex["value"]


# ---- Every embedded example validates ----

n_examples = 0
for template, item in doc["paths"].items():
    for method in ("get", "post", "put", "delete", "patch"):
        op = item.get(method)
        if op is None:
            continue
        path = concrete(template, item, op)
        rb = op.get("requestBody")
        if rb is not None:
            rb, _ = spec._deref(rb, "")
            for media, media_obj in rb["content"].items():
                for name, value in media_examples(media_obj):
                    n_examples += 1
                    accepts(lambda: spec.validate_request(method, path, value, media),
                            "request example %s of %s %s" % (name, method.upper(), template))
        for status, response in op["responses"].items():
            response, _ = spec._deref(response, "")
            content = response.get("content") or {}
            if not content:
                accepts(lambda: spec.validate(method, path, int(status), None, b""),
                        "empty %s of %s %s" % (status, method.upper(), template))
            for media, media_obj in content.items():
                for name, value in media_examples(media_obj):
                    n_examples += 1
                    body = enc(value) if media == J else value.encode("utf-8")
                    accepts(lambda: spec.validate(method, path, int(status), media, body),
                            "response example %s of %s %s -> %s" % (name, method.upper(), template, status))
check(n_examples >= 40, "the spec embeds at least 40 examples (found %d)" % n_examples)

# ---- Every route declares the statuses it can answer ----

BODY_ROUTES = {("post", "/v1/sessions/{session}/compact"), ("post", "/v1/sessions/{session}/verify"),
               ("post", "/v1/sessions/{session}/messages/compact"),
               ("post", "/v1/sessions/{session}/messages/verify")}
REDIS_ROUTES = {
    ("post", "/v1/sessions/{session}/compact"),
    ("post", "/v1/sessions/{session}/messages/compact"),
    ("post", "/v1/sessions/{session}/messages/verify"),
    ("get", "/v1/sessions/{session}/spills"),
    ("get", "/v1/sessions/{session}/spills/{key}"),
    ("delete", "/v1/sessions/{session}"),
    ("get", "/v1/sessions/{session}/events"),
    ("post", "/v1/sessions/{session}/verify"),
    ("post", "/v1/sessions/{session}/reacquire"),
    ("get", "/readyz"),
}
EXPECTED_OPS = REDIS_ROUTES | {("get", "/healthz"), ("get", "/metrics"), ("get", "/openapi.yaml"),
                              ("post", "/mcp"), ("post", "/v1/tokens"),
                              ("get", "/v1/sessions/{session}/tools"),
                              ("post", "/v1/sessions/{session}/mcp")}
# The proxy routes: compactd's key in X-Compactd-Key (Authorization is the
# provider's), and the upstream's failures besides compactd's own.
PROXY_ROUTES = {("post", "/proxy/openai/v1/chat/completions"), ("post", "/proxy/openai/v1/responses"),
                ("post", "/proxy/anthropic/v1/messages")}
EXPECTED_OPS |= PROXY_ROUTES
AUTH_ROUTES = {("post", "/mcp"), ("post", "/v1/tokens")}  # besides /v1: a bearer key when keys are configured
found_ops = {(m, t) for t, item in doc["paths"].items() for m in item if m in ("get", "post", "put", "delete", "patch")}
check(found_ops == EXPECTED_OPS, "the spec has exactly the %d operations (got %s)" % (len(EXPECTED_OPS), sorted(found_ops)))
for method, template in sorted(found_ops):
    declared = set(doc["paths"][template][method]["responses"])
    want = {"405", "413", "500"}
    if template.startswith("/v1/"):
        want |= {"400", "401", "404"}
    if (method, template) in BODY_ROUTES:
        want |= {"415", "422"}
    if (method, template) in REDIS_ROUTES:
        want |= {"503"}
    if (method, template) in PROXY_ROUTES:
        want |= {"400", "401", "415", "502", "503", "504"}
    check(want <= declared, "%s %s declares %s (missing %s)" % (method.upper(), template, sorted(want), sorted(want - declared)))
    security = doc["paths"][template][method].get("security")
    if (method, template) in PROXY_ROUTES:
        check(security == [{"compactdKey": []}, {}], "%s %s takes an optional X-Compactd-Key" % (method.upper(), template))
    elif template.startswith("/v1/") or (method, template) in AUTH_ROUTES:
        check(security == [{"bearerAuth": []}, {}], "%s %s takes an optional bearer key" % (method.upper(), template))
    else:
        check(security == [], "%s %s is open" % (method.upper(), template))

# ---- Responses: bad bodies are rejected ----

failure = example("/components/responses/CompactionFailure/content/application~1json/example")
good = example("/paths/~1v1~1sessions~1{session}~1compact/post/responses/200/content/application~1json/examples/strict/value")
accepts(lambda: spec.validate("POST", C, 200, "application/json; charset=utf-8", enc(good)), "Content-Type with charset")
accepts(lambda: spec.validate("POST", C + "?x=1", 200, J, enc(good)), "a query string on the path")

bad = copy.deepcopy(good)
del bad["used_tokens"]
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "compact result without used_tokens", "used_tokens")
bad = copy.deepcopy(good)
bad["used_tokens"] = "100"
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "used_tokens as a string", "not of type 'integer'")
bad = copy.deepcopy(good)
bad["extra"] = 1
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "an unknown member in the compact result")
bad = copy.deepcopy(good)
del bad["summarized"][0]["lost_identifiers"]
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "a summarized entry without lost_identifiers")
bad = copy.deepcopy(good)
bad["dropped"][1]["reason"] = "over_budget"
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "a redundant unit dropped as over_budget", "$.dropped[1].reason")
bad = copy.deepcopy(good)
bad["dropped"][0]["reason"] = "redundant"
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "a derivable unit dropped as redundant", "$.dropped[0].reason")
bad = copy.deepcopy(good)
bad["dropped"][0]["class"] = "protected"
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "a dropped protected unit", "$.dropped[0].class")
bad = copy.deepcopy(good)
bad["externalized"][0]["sha256"] = bad["externalized"][0]["sha256"].upper()
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "an upper-case sha256")
bad = copy.deepcopy(good)
bad["externalized"][0]["href"] = "/v1/sessions/agent-7/spills/a b?sha256=" + "0" * 64
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "an href with an unencoded space")
bad = copy.deepcopy(good)
bad["externalized"][0]["pointer"] = "[spilled build.log]"
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "a pointer in another format")
bad = copy.deepcopy(good)
bad["mode"] = "fast"
rejects(lambda: spec.validate("POST", C, 200, J, enc(bad)), "an unknown mode")

rejects(lambda: spec.validate("POST", C, 201, J, enc(good)), "undeclared status 201", "not declared")
rejects(lambda: spec.validate("POST", C, 418, J, enc({"error": {"type": "Internal", "message": "x"}})),
        "undeclared status 418", "not declared")
rejects(lambda: spec.validate("GET", "/healthz", 503, J, enc({"error": {"type": "StoreUnavailable", "message": "x"}})),
        "503 on /healthz", "not declared")
rejects(lambda: spec.validate("GET", "/healthz", 401, J, enc({"error": {"type": "Unauthorized", "message": "x"}})),
        "401 on an open route", "not declared")
too_large = enc({"error": {"type": "PayloadTooLarge", "message": "x"}})
accepts(lambda: spec.validate("GET", S, 413, J, too_large), "413 on a route without a body (decided before routing)")
accepts(lambda: spec.validate("GET", "/v2/nothing", 413, J, too_large), "413 on an unknown path")
accepts(lambda: spec.validate("PUT", "/healthz", 413, J, too_large), "413 on an unserved method")
rejects(lambda: spec.validate("GET", S, 415, J, enc({"error": {"type": "UnsupportedMediaType", "message": "x"}})),
        "415 on a route without a body", "not declared")
rejects(lambda: spec.validate("GET", S, 422, J, enc(failure)), "422 on a route without a body", "not declared")
rejects(lambda: spec.validate("POST", C, 200, "text/html", enc(good)), "an undeclared Content-Type", "Content-Type")
rejects(lambda: spec.validate("POST", C, 200, None, enc(good)), "a JSON body without Content-Type", "Content-Type")
rejects(lambda: spec.validate("POST", C, 200, J, b'{"session": '), "truncated JSON", "not valid JSON")
rejects(lambda: spec.validate("POST", C, 200, J, b"\xff{}"), "a body that is not UTF-8", "not valid JSON")
rejects(lambda: spec.validate("POST", C, 200, J, enc(good)[:-1] + b', "budget": 1}'),
        "a duplicate member", "duplicate")

# Errors: the type must match the status; CompactionFailure carries its fields.
err = {"error": {"type": "NotFound", "message": "no such spill"}}
accepts(lambda: spec.validate("GET", S + "/build.log?sha256=" + "0" * 64, 404, J, enc(err)), "a NotFound spill")
rejects(lambda: spec.validate("GET", S + "/build.log", 404, J, enc({"error": {"type": "InvalidRequest", "message": "x"}})),
        "a 404 whose type is InvalidRequest", "$.error.type")
rejects(lambda: spec.validate("GET", S + "/build.log", 404, J, enc({"error": {"type": "NotFound"}})),
        "an error without message", "message")
rejects(lambda: spec.validate("GET", S + "/build.log", 404, J, enc({"error": {"type": "NotFound", "message": "x", "path": "$"}})),
        "a path on a NotFound")
rejects(lambda: spec.validate("GET", S + "/build.log", 404, J, enc({"type": "NotFound", "message": "x"})),
        "an error not wrapped in {\"error\": ...}")
accepts(lambda: spec.validate("POST", C, 400, J, enc({"error": {"type": "InvalidRequest", "message": "bad", "path": "$.units[3].tokens"}})),
        "an InvalidRequest with a path")
accepts(lambda: spec.validate("POST", V, 422, J, enc(failure)), "a CompactionFailure from verify")
bad = copy.deepcopy(failure)
del bad["error"]["required_budget"]
rejects(lambda: spec.validate("POST", C, 422, J, enc(bad)), "a CompactionFailure without required_budget", "required_budget")
bad = {"error": {"type": "Internal", "message": "x", "budget": 3}}
rejects(lambda: spec.validate("POST", C, 500, J, enc(bad)), "CompactionFailure fields on an Internal error")

# Routing: unknown paths may only be 404, unserved methods only 405.
accepts(lambda: spec.validate("GET", "/v2/nothing", 404, J, enc(err)), "404 on an unknown path")
rejects(lambda: spec.validate("GET", "/v2/nothing", 200, J, enc({"status": "ok"})), "200 on an unknown path", "no path")
rejects(lambda: spec.validate("GET", "/healthz/x", 200, J, enc({"status": "ok"})), "a longer path than a route", "no path")
mna = {"error": {"type": "MethodNotAllowed", "message": "use POST"}}
accepts(lambda: spec.validate("GET", C, 405, J, enc(mna)), "405 on GET of the compact route")
accepts(lambda: spec.validate("PUT", "/healthz", 405, J, enc(mna), headers={"Allow": "GET"}), "405 with Allow")
rejects(lambda: spec.validate("PUT", "/healthz", 405, J, enc(mna), headers={}), "405 without Allow", "Allow")
rejects(lambda: spec.validate("GET", C, 200, J, enc(good)), "200 on GET of the compact route", "only 405")

# Other shapes.
accepts(lambda: spec.validate("DELETE", "/v1/sessions/" + SESSION, 204, None, b""), "204 with no body")
rejects(lambda: spec.validate("DELETE", "/v1/sessions/" + SESSION, 204, J, b"{}"), "204 with a body", "no body")
rejects(lambda: spec.validate("DELETE", "/v1/sessions/" + SESSION, 200, J, b"{}"), "200 on DELETE", "not declared")
rejects(lambda: spec.validate("GET", "/healthz", 200, J, enc({"status": "ready"})), "healthz answering ready")
accepts(lambda: spec.validate("GET", "/metrics", 200, "text/plain; version=0.0.4; charset=utf-8", b"compactd_up 1\n"),
        "metrics as Prometheus text")
rejects(lambda: spec.validate("GET", "/metrics", 200, J, b"{}"), "metrics as JSON", "Content-Type")
with open(os.path.join(ROOT, "openapi.yaml"), "rb") as f:
    served = f.read()
accepts(lambda: spec.validate("GET", "/openapi.yaml", 200, "application/yaml", served), "the spec served as YAML")
rejects(lambda: spec.validate("GET", "/openapi.yaml", 200, "application/yaml", b"a: [b"), "broken YAML", "YAML")

spill = example("/paths/~1v1~1sessions~1{session}~1spills~1{key}/get/responses/200/content/application~1json/examples/build.log/value")
bad = copy.deepcopy(spill)
bad["created_at"] = "30/11/2024"
rejects(lambda: spec.validate("GET", S + "/build.log", 200, J, enc(bad)), "a spill with a non-RFC 3339 created_at")
bad = copy.deepcopy(spill)
del bad["text"]
rejects(lambda: spec.validate("GET", S + "/build.log", 200, J, enc(bad)), "a spill without text", "text")

page = example("/paths/~1v1~1sessions~1{session}~1events/get/responses/200/content/application~1json/examples/page/value")
bad = copy.deepcopy(page)
del bad["events"][1]["failed_key"]
rejects(lambda: spec.validate("GET", E, 200, J, enc(bad)), "a failed compaction event without failed_key", "failed_key")
bad = copy.deepcopy(page)
bad["events"][0]["failed_key"] = "task"
rejects(lambda: spec.validate("GET", E, 200, J, enc(bad)), "an ok compaction event with failed_key")
bad = copy.deepcopy(page)
del bad["events"][2]["repair"]
rejects(lambda: spec.validate("GET", E, 200, J, enc(bad)), "a repaired verify event without repair", "'repair' is a required")
bad = copy.deepcopy(page)
bad["events"][2]["kind"] = "audit"
rejects(lambda: spec.validate("GET", E, 200, J, enc(bad)), "an event of unknown kind", "audit")
bad = copy.deepcopy(page)
bad["events"][0]["id"] = "17"
rejects(lambda: spec.validate("GET", E, 200, J, enc(bad)), "an event id that is not a stream id", "$.events[0].id")

vr = example("/paths/~1v1~1sessions~1{session}~1verify/post/responses/200/content/application~1json/examples/repaired/value")
bad = copy.deepcopy(vr)
bad["verdict"] = "safe"
rejects(lambda: spec.validate("POST", V, 200, J, enc(bad)), "verdict safe with a missing unit", "$.missing")
bad = copy.deepcopy(vr)
bad["repair"]["append"][0]["pointer"] = "[externalized decision-3 sha256:ef0167b3c5fbb237]"
rejects(lambda: spec.validate("POST", V, 200, J, enc(bad)), "a repair item with both text and pointer")
bad = copy.deepcopy(vr)
bad["present"][0]["as"] = "summary"
rejects(lambda: spec.validate("POST", V, 200, J, enc(bad)), "a present unit as a summary")

# ---- Requests ----

req = example("/paths/~1v1~1sessions~1{session}~1compact/post/requestBody/content/application~1json/examples/strict/value")
accepts(lambda: spec.validate_request("POST", C, json.dumps(req)), "the strict request as JSON text")
accepts(lambda: spec.validate_request("POST", C, {"budget": 0, "units": []}), "an empty request")
accepts(lambda: spec.validate_request("POST", C, {"budget": 2147483647, "units": []}), "the largest budget")
rejects(lambda: spec.validate_request("POST", C, {"budget": 2147483648, "units": []}), "a budget above 2^31-1")
rejects(lambda: spec.validate_request("POST", C, {"budget": -1, "units": []}), "a negative budget")
rejects(lambda: spec.validate_request("POST", C, {"budget": 1.5, "units": []}), "a fractional budget")
rejects(lambda: spec.validate_request("POST", C, {"units": []}), "a request without budget", "budget")
rejects(lambda: spec.validate_request("POST", C, {"budget": 1, "units": [], "mode": "lax"}), "an unknown mode")
rejects(lambda: spec.validate_request("POST", C, {"budget": 1, "units": [], "dry_run": "yes"}), "dry_run as a string")
rejects(lambda: spec.validate_request("POST", C, {"budget": 1, "units": [], "priorty": 1}), "an unknown top-level field")
rejects(lambda: spec.validate_request("POST", C, None), "a missing body", "required")


def unit_req(unit):
    return {"budget": 10, "units": [unit]}


P = {"key": "k", "class": "protected", "tokens": 5, "text": "t"}
D = {"key": "k", "class": "derivable", "tokens": 5}
R = {"key": "k", "class": "redundant", "tokens": 5}
accepts(lambda: spec.validate_request("POST", C, unit_req(P)), "a protected unit")
accepts(lambda: spec.validate_request("POST", C, unit_req(D)), "a derivable unit without text")
accepts(lambda: spec.validate_request("POST", C, unit_req(R)), "a redundant unit")
accepts(lambda: spec.validate_request("POST", C, unit_req(dict(D, text="t", priority=-3, group="g", reacquire="cat k",
                                                               summary={"text": "s", "tokens": 1}))),
        "a derivable unit with every optional field")
rejects(lambda: spec.validate_request("POST", C, unit_req({k: v for k, v in P.items() if k != "text"})),
        "a protected unit without text", "'text' is a required")
for field, value in (("summary", {"text": "s", "tokens": 1}), ("priority", 1), ("reacquire", "x")):
    rejects(lambda: spec.validate_request("POST", C, unit_req(dict(P, **{field: value}))), "%s on a protected unit" % field, repr(field))
    rejects(lambda: spec.validate_request("POST", C, unit_req(dict(R, **{field: value}))), "%s on a redundant unit" % field, repr(field))
# The group rule: every class may be grouped.
for unit in (P, R):
    accepts(lambda: spec.validate_request("POST", C, unit_req(dict(unit, group="g"))), "group on a %s unit" % unit["class"])
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, priorty=1))), "a misspelt priority", "priorty")
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, **{"class": "volatile"}))), "an unknown class", "volatile")
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, key=""))), "an empty key", "$.units[0].key")
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, tokens=2147483648))), "tokens above 2^31-1", "$.units[0].tokens")
# tokens are counted from the text where missing: a unit needs one or the other.
accepts(lambda: spec.validate_request("POST", C, unit_req(dict(D, summary={"text": "s"}))), "a summary without tokens")
accepts(lambda: spec.validate_request("POST", C, unit_req({"key": "k", "class": "derivable", "text": "t"})), "a unit with text and no tokens")
rejects(lambda: spec.validate_request("POST", C, unit_req({"key": "k", "class": "derivable"})), "a unit with neither tokens nor text")
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, summary={"tokens": 1}))), "a summary without text", "$.units[0].summary")
rejects(lambda: spec.validate_request("POST", C, dict(unit_req(D), tokenizer="p50k_base")), "an unknown tokenizer", "$.tokenizer")
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, summary={"text": "s", "tokens": 1, "x": 1}))),
        "a summary with an unknown field")
rejects(lambda: spec.validate_request("POST", C, unit_req(dict(D, group=""))), "an empty group", "$.units[0].group")

vreq = example("/paths/~1v1~1sessions~1{session}~1verify/post/requestBody/content/application~1json/examples/repair/value")
bad = copy.deepcopy(vreq)
del bad["context_tokens"]
rejects(lambda: spec.validate_request("POST", V, bad), "verify with budget but no context_tokens", "context_tokens")
bad = copy.deepcopy(vreq)
bad["units"][0]["class"] = "derivable"
rejects(lambda: spec.validate_request("POST", V, bad), "verify with a derivable unit", "$.units[0].class")
bad = copy.deepcopy(vreq)
del bad["context"]
rejects(lambda: spec.validate_request("POST", V, bad), "verify without context", "context")

# Parameters.
accepts(lambda: spec.validate_request("GET", E + "?limit=10&after=1732968000000-0"), "events with limit and after")
rejects(lambda: spec.validate_request("GET", E + "?limit=0"), "events with limit 0")
rejects(lambda: spec.validate_request("GET", E + "?limit=1001"), "events with limit 1001")
rejects(lambda: spec.validate_request("GET", E + "?limit=ten"), "events with a non-integer limit")
rejects(lambda: spec.validate_request("GET", E + "?after=yesterday"), "events after a non-id")
rejects(lambda: spec.validate_request("GET", E + "?limit=1&limit=2"), "a repeated query parameter")
rejects(lambda: spec.validate_request("GET", E + "?page=2"), "an undeclared query parameter", "not declared")
accepts(lambda: spec.validate_request("GET", S + "/notes%2Fdb%20schema?sha256=" + "a" * 64), "a percent-encoded key")
rejects(lambda: spec.validate_request("GET", S + "/build.log?sha256=" + "A" * 64), "an upper-case sha256 query")
rejects(lambda: spec.validate_request("GET", S + "/build.log?sha256=abc"), "a short sha256 query")
rejects(lambda: spec.validate_request("POST", "/v1/sessions/bad%20id/compact", {"budget": 1, "units": []}),
        "a session id with a space")
rejects(lambda: spec.validate_request("POST", "/v1/sessions/" + "s" * 129 + "/compact", {"budget": 1, "units": []}),
        "a 129-character session id")
accepts(lambda: spec.validate_request("POST", "/v1/sessions/" + "s" * 128 + "/compact", {"budget": 1, "units": []}),
        "a 128-character session id")
rejects(lambda: spec.validate_request("GET", "/healthz", {"x": 1}), "a body on GET /healthz", "no body")
rejects(lambda: spec.validate_request("POST", "/healthz"), "POST /healthz", "does not serve")

print("validate_selftest: %d checks, %d failed (%d embedded examples)" % (checks, failures, n_examples))
sys.exit(1 if failures else 0)
