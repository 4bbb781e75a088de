"""Hostile input: every malformed, oversized or misdirected request gets a
clear JSON error naming what is wrong, and changes nothing in Redis."""

import json
import os
import socket
import subprocess
import time
import unittest

from harness import COMPACTD, Compactd, Redis, ServerTest, stop_all

UNIT = b'{"key": "a", "class": "derivable", "tokens": 1}'


def body(units=b"[]", extra=b""):
    return b'{"budget": 10, "units": ' + units + extra + b"}"


def unit(fields):
    return b'{"key": "a", "class": "derivable", "tokens": 1, ' + fields + b"}"


def protected_unit(fields):
    return b'{"key": "a", "class": "protected", "tokens": 1, "text": "t", ' + fields + b"}"


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def raw_exchange(port, data, timeout=5.0):
    """Sends raw bytes on a fresh connection and reads until the server
    closes it or a whole response with a Content-Length has arrived.
    Returns (status, headers, body, seconds)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip()
                           for k, v in (ln.split(":", 1) for ln in lines[1:])}
                length = int(headers.get("content-length", "-1"))
                if 0 <= length <= len(rest):
                    return int(lines[0].split()[1]), headers, rest[:length], \
                        time.monotonic() - t0
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("connection closed before a whole response: %r" % buf)
            buf += chunk


class StrictParsingTest(ServerTest):
    """Each bad body is a 400 InvalidRequest whose path names the first
    offending field, and whose message says what is wrong with it."""

    CASES = [
        # Duplicate members, at the top and inside a unit.
        (b'{"budget": 1, "budget": 2, "units": []}', "$.budget", "twice"),
        (b'{"budget": 1, "units": [' + unit(b'"tokens": 2') + b"]}", "$.units[0].tokens",
         "twice"),
        # Invalid UTF-8: a stray byte, an overlong "/", a UTF-16 surrogate,
        # a lone surrogate escape, in values and in member names.
        (body(b'[{"key": "\xff", "class": "derivable", "tokens": 1}]'), "$.units[0].key",
         "UTF-8"),
        (body(b'[{"key": "\xc0\xaf", "class": "derivable", "tokens": 1}]'), "$.units[0].key",
         "UTF-8"),
        (body(b'[' + protected_unit(b'"x": 1').replace(b'"t"', b'"\xed\xa0\x80"') + b"]"),
         "$.units[0].text", "UTF-8"),
        (body(b'[' + protected_unit(b'"x": 1').replace(b'"t"', b'"\\ud800"') + b"]"),
         "$.units[0].text", "Unicode"),
        (b'{"budget": 1, "units": [], "\xfe": 1}', "$", "UTF-8"),
        # Bytes after the document.
        (body() + b" x", "$", "after the JSON document"),
        (body() + b"{}", "$", "after the JSON document"),
        (body() + b"\x00", "$", "after the JSON document"),
        # Numbers that are not integers, or out of range: 2^31 and beyond
        # is refused, never wrapped.
        (b'{"budget": 1.5, "units": []}', "$.budget", "integer"),
        (b'{"budget": 1.0, "units": []}', "$.budget", "integer"),
        (b'{"budget": 1e2, "units": []}', "$.budget", "integer"),
        (b'{"budget": "10", "units": []}', "$.budget", "integer"),
        (b'{"budget": true, "units": []}', "$.budget", "integer"),
        (b'{"budget": null, "units": []}', "$.budget", "integer"),
        (b'{"budget": -1, "units": []}', "$.budget", "-1"),
        (b'{"budget": 2147483648, "units": []}', "$.budget", "2147483647"),
        (b'{"budget": 4294967296, "units": []}', "$.budget", "2147483647"),
        (b'{"budget": 9223372036854775807, "units": []}', "$.budget", "2147483647"),
        (b'{"budget": 9223372036854775808, "units": []}', "$.budget", "too large"),
        (b'{"budget": 18446744073709551616, "units": []}', "$.budget", "too large"),
        (b'{"budget": -9223372036854775809, "units": []}', "$.budget", "too large"),
        (b'{"budget": 1e999, "units": []}', "$.budget", "too large"),
        (body(b"[" + unit(b'"priority": 2147483648') + b"]"), "$.units[0].priority",
         "2147483647"),
        (body(b"[" + unit(b'"priority": -2147483649') + b"]"), "$.units[0].priority",
         "-2147483648"),
        (body(b'[{"key": "a", "class": "derivable", "tokens": 2147483648}]'),
         "$.units[0].tokens", "2147483647"),
        (body(b'[{"key": "a", "class": "derivable", "tokens": 99999999999999999999}]'),
         "$.units[0].tokens", "too large"),
        (body(b"[" + unit(b'"summary": {"text": "s", "tokens": -1}') + b"]"),
         "$.units[0].summary.tokens", "-1"),
        # Nesting deeper than any request needs (4 levels), however deep.
        (body(b"[[[[[]]]]]"), "$.units[0][0][0]", "deeper"),
        (body(b"[" + unit(b'"summary": {"text": ["s"], "tokens": 1}') + b"]"),
         "$.units[0].summary.text", "deeper"),
        (body(b"[]", b', "x": ' + b"[" * 100000 + b"]" * 100000), "$.x[0][0][0]", "deeper"),
        (body(b"[]", b', "x": ' + b'{"a":' * 5000 + b"1" + b"}" * 5000), "$.x.a.a.a",
         "deeper"),
        # Wrong types.
        (b'{"budget": 1, "units": {}}', "$.units", "array"),
        (b'{"budget": 1, "units": [[]]}', "$.units[0]", "object"),
        (body(b'[{"key": 1, "class": "derivable", "tokens": 1}]'), "$.units[0].key", "string"),
        (body(b"[" + unit(b'"group": 7') + b"]"), "$.units[0].group", "string"),
        (body(b"[" + unit(b'"summary": "short"') + b"]"), "$.units[0].summary", "object"),
        (b'{"budget": 1, "units": [], "dry_run": 1}', "$.dry_run", "boolean"),
        (b'"just a string"', "$", "expected"),
        # Unknown classes, modes and fields.
        (body(b'[{"key": "a", "class": "Protected", "tokens": 1, "text": "t"}]'),
         "$.units[0].class", "protected"),
        (body(b'[{"key": "a", "class": "", "tokens": 1}]'), "$.units[0].class", "protected"),
        (body(b'[{"key": "a", "class": null, "tokens": 1}]'), "$.units[0].class", "protected"),
        (b'{"budget": 1, "units": [], "mode": "lossy"}', "$.mode", "strict"),
        (b'{"budget": 1, "units": [], "mode": 1}', "$.mode", "strict"),
        (b'{"budget": 1, "units": [], "priorty": 1}', "$.priorty", "unknown field"),
        (body(b"[" + unit(b'"priorty": 1') + b"]"), "$.units[0].priorty", "unknown field"),
        (body(b"[" + unit(b'"summary": {"text": "s", "tokens": 1, "x": 0}') + b"]"),
         "$.units[0].summary.x", "unknown field"),
        (body(b"[" + unit(b'"summary": {"tokens": 1}') + b"]"), "$.units[0].summary",
         "text"),
        (body(b'[{"key": "a", "class": "derivable"}]'), "$.units[0].tokens", "no text"),
        (body(b"[]", b', "tokenizer": "p50k_base"'), "$.tokenizer", "o200k_base"),
        (body(b"[]", b', "tokenizer": 7'), "$.tokenizer", "must be one of"),
        (b'{"budget": 1, "units": [], "a \\"b\\"": 1}', '$["a \\"b\\""]', "unknown field"),
        # Fields a class may not carry; a summary on protected state above all.
        (body(b"[" + protected_unit(b'"summary": {"text": "s", "tokens": 1}') + b"]"),
         "$.units[0].summary", "protected"),
        (body(b"[" + protected_unit(b'"priority": 1') + b"]"), "$.units[0].priority",
         "derivable"),
        (body(b"[" + protected_unit(b'"reacquire": "cat x"') + b"]"), "$.units[0].reacquire",
         "derivable"),
        (body(b'[{"key": "a", "class": "redundant", "tokens": 1, "summary": '
              b'{"text": "s", "tokens": 1}}]'), "$.units[0].summary", "derivable"),
        # The first offending field is the one named.
        (body(b"[" + UNIT + b", " + unit(b'"tokens": -1').replace(b'"a"', b'"b"') + b"]"),
         "$.units[1].tokens", "twice"),
        (b'{"budget": 1, "units": [' + UNIT + b', {"key": "b", "class": "derivable", '
         b'"tokens": -5, "priority": "x"}]}', "$.units[1].tokens", "-5"),
        # Malformed JSON and a NUL in a member name.
        (b'{"budget": 1, "units": [', "$.units", "malformed"),
        (b'{"budget": tru, "units": []}', "$.budget", "malformed"),
        (b'{"budget": 1, "units": [], "a\\u0000b": 1}', '$["a\\u0000b"]', "\\u0000"),
        (b"", "$", "malformed"),
    ]

    def test_every_bad_body_is_400_with_the_path_of_the_first_offending_field(self):
        before = self.redis.keys()
        for raw, path, words in self.CASES:
            with self.subTest(body=raw[:120]):
                r = self.http.post("/v1/sessions/hostile/compact", raw, raw=True)
                err = self.assertError(r, 400, "InvalidRequest", path)
                self.assertIn(words, err["message"])
        self.assertEqual(self.redis.keys(), before)

    def test_verify_decodes_as_strictly(self):
        cases = [
            (b'{"context": "c", "units": [], "context": "d"}', "$.context", "twice"),
            (b'{"context": "c", "units": [' + UNIT + b"]}", "$.units[0].class", "protected"),
            (b'{"context": "c", "units": [], "budget": 9223372036854775808}', "$.budget",
             "too large"),
            (b'{"context": [[[[[]]]]], "units": []}', "$.context[0][0][0]", "deeper"),
            (b'{"context": "c", "units": [], "contxt": 1}', "$.contxt", "unknown field"),
        ]
        for raw, path, words in cases:
            with self.subTest(body=raw):
                r = self.http.post("/v1/sessions/hostile/verify", raw, raw=True)
                err = self.assertError(r, 400, "InvalidRequest", path)
                self.assertIn(words, err["message"])

    def test_error_bodies_are_valid_json_whatever_bytes_came_in(self):
        # Responses quote paths and names; raw bytes must not leak into them.
        for raw in [b'{"budget": 1, "units": [], "\xc3\xa9\xc3": 1}',
                    b'{"budget": 1, "units": [], "' + "é".encode() * 40 + b'": 1}',
                    b'{"budget": 1, "units": [], "\\u0001\\u007f": 1}',
                    b'{"budget": 1, "units": [\x01]}', b'{"budget": fals\xe9}']:
            with self.subTest(body=raw):
                r = self.http.post("/v1/sessions/hostile/compact", raw, raw=True)
                self.assertEqual(r.status, 400)
                err = json.loads(r.body.decode("utf-8", "strict"))["error"]
                self.assertEqual(err["type"], "InvalidRequest")
        # A 422 quotes the key that did not fit, cut to 64 bytes: never in
        # the middle of a character.
        for key in ["b" + "é" * 40, "ab" + "日" * 30, "😀" * 20]:
            with self.subTest(key=key):
                r = self.http.compact("hostile", [{"key": key, "class": "protected",
                                                   "tokens": 500, "text": "t"}], 10)
                self.assertEqual(r.status, 422)
                err = json.loads(r.body.decode("utf-8", "strict"))["error"]
                self.assertEqual(err["key"], key)
        for path in ["/%FF%FE", "/v1/sessions/s/nothing/%C3", "/%C3%A9%E2%82"]:
            with self.subTest(path=path):
                r = self.http.get(path)
                self.assertEqual(r.status, 404)
                json.loads(r.body.decode("utf-8", "strict"))

    def test_a_request_full_of_tiny_values_is_refused_before_it_is_parsed(self):
        # 1.5 MB of "{}," would be ~250 MB as a jansson tree; the shape scan
        # refuses the array at its 100001st element without building it.
        server = Compactd(self.redis.url())
        try:
            http = server.client()
            before = vm_kib(server.proc.pid, "VmHWM")
            raw = body(b"[]", b', "x": [' + b"{}," * 500000 + b"{}]")
            r = http.post("/v1/sessions/hostile/compact", raw, raw=True)
            err = self.assertError(r, 400, "InvalidRequest", "$.x")
            self.assertIn("COMPACTD_MAX_UNITS", err["message"])
            grown = vm_kib(server.proc.pid, "VmHWM") - before
            self.assertLess(grown, 48 * 1024, "peak memory grew by %d KiB" % grown)
        finally:
            server.stop()


class SmallLimitsTest(ServerTest):
    """Every limit is a setting; past it the answer names the field."""

    compactd_env = {"COMPACTD_MAX_BODY_BYTES": "65536", "COMPACTD_MAX_UNITS": "3",
                    "COMPACTD_MAX_KEY_BYTES": "8", "COMPACTD_MAX_TEXT_BYTES": "16"}

    def test_at_the_limits_is_accepted(self):
        units = [{"key": "k" * 8, "class": "protected", "tokens": 1, "text": "t" * 16},
                 {"key": "é" * 4, "class": "derivable", "tokens": 1, "reacquire": "r" * 16,
                  "summary": {"text": "s" * 16, "tokens": 1}},
                 {"key": "c", "class": "redundant", "tokens": 1}]
        r = self.http.compact("limits", units, 100, dry_run=True)
        self.assertEqual(r.status, 200, r.body)

    def test_past_each_limit_is_400_naming_the_field(self):
        d = {"class": "derivable", "tokens": 1}
        cases = [
            ([dict(d, key="a"), dict(d, key="b"), dict(d, key="c"), dict(d, key="d")],
             "$.units", "limit is 3"),
            ([dict(d, key="k" * 9)], "$.units[0].key", "1 to 8 bytes"),
            ([dict(d, key="é" * 5)], "$.units[0].key", "1 to 8 bytes"),
            ([{"key": "p", "class": "protected", "tokens": 1, "text": "t" * 17}],
             "$.units[0].text", "0 to 16 bytes"),
            ([dict(d, key="s", summary={"text": "s" * 17, "tokens": 1})],
             "$.units[0].summary.text", "0 to 16 bytes"),
            ([dict(d, key="r", reacquire="r" * 17)], "$.units[0].reacquire", "0 to 16 bytes"),
        ]
        before = self.redis.keys()
        for units, path, words in cases:
            with self.subTest(path=path):
                err = self.assertError(self.http.compact("limits", units, 100), 400,
                                       "InvalidRequest", path)
                self.assertIn(words, err["message"])
        self.assertEqual(self.redis.keys(), before)

    def test_session_id_syntax(self):
        for session in ["a:b", "%7Bx%7D", "a%20b", "x" * 129, "s%00", "%C3%A9"]:
            with self.subTest(session=session):
                r = self.http.compact(session, [], 1)
                err = self.assertError(r, 400, "InvalidRequest")
                self.assertIn("session id", err["message"])
        self.assertEqual(self.http.compact("A-z_0.9~", [], 1).status, 200)

    def test_an_encoded_nul_in_the_path_never_reaches_another_session(self):
        p = self.http.compact("victim", [{"key": "k", "class": "protected", "tokens": 500,
                                          "text": "keep me"}], 60).json
        href = p["externalized"][0]["href"]
        r = self.http.delete("/v1/sessions/victim%00/spills")
        self.assertIn(r.status, (400, 404, 405))
        r = self.http.delete("/v1/sessions/victim%00")
        self.assertError(r, 400, "InvalidRequest")
        self.assertEqual(self.http.get("/v1/sessions/victim/spills/k%00x").status, 404)
        self.assertEqual(self.http.get(href).json["text"], "keep me")

    def test_body_over_the_limit_is_413_from_content_length_without_reading_it(self):
        before = self.redis.keys()
        for length in ["65537", "1000000000000"]:
            with self.subTest(length=length):
                # Headers announce the body; only a few bytes of it ever come.
                status, headers, raw, seconds = raw_exchange(
                    self.server.port,
                    b"POST /v1/sessions/big/compact HTTP/1.1\r\nHost: localhost\r\n"
                    b"Content-Type: application/json\r\nContent-Length: " + length.encode() +
                    b"\r\n\r\n{\"budget\": 1")
                self.assertEqual(status, 413)
                self.assertEqual(headers["content-type"], "application/json")
                self.assertEqual(json.loads(raw)["error"]["type"], "PayloadTooLarge")
                self.assertLess(seconds, 2.0)
        ok = self.http.post("/v1/sessions/big/compact",
                            body().ljust(65536, b" "), raw=True)
        self.assertEqual(ok.status, 200, ok.body)
        self.assertError(self.http.post("/v1/sessions/big/compact",
                                        body().ljust(65537, b" "), raw=True),
                         413, "PayloadTooLarge")
        self.assertEqual([k for k in self.redis.keys() if not k.endswith(":events")],
                         [k for k in before if not k.endswith(":events")])

    def test_chunked_body_over_the_limit_is_413(self):
        chunk = b" " * 1000
        data = (b"POST /v1/sessions/big/compact HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(70)) +
                b"0\r\n\r\n")
        status, headers, raw, _ = raw_exchange(self.server.port, data)
        self.assertEqual(status, 413)
        self.assertEqual(json.loads(raw)["error"]["type"], "PayloadTooLarge")
        small = body()
        status, _, raw, _ = raw_exchange(
            self.server.port,
            b"POST /v1/sessions/big/compact HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
            b"%x\r\n%s\r\n0\r\n\r\n" % (len(small), small))
        self.assertEqual(status, 200, raw)


class LimitFlagsTest(unittest.TestCase):
    """Each limit has a flag that overrides its environment variable; a bad
    value stops compactd with exit code 2 and names the setting."""

    def test_flags_override_the_environment(self):
        redis = Redis()
        server = Compactd(redis.url(), env={"COMPACTD_MAX_UNITS": "100"},
                          args=["--max-units", "2", "--max-key-bytes=4", "--max-text-bytes", "3",
                                "--max-body-bytes", "2000"])
        try:
            http = server.client()
            d = {"class": "derivable", "tokens": 1}
            cases = [([dict(d, key="a"), dict(d, key="b"), dict(d, key="c")], "$.units"),
                     ([dict(d, key="abcde")], "$.units[0].key"),
                     ([dict(d, key="a", reacquire="abcd")], "$.units[0].reacquire")]
            for units, path in cases:
                with self.subTest(path=path):
                    r = http.compact("flags", units, 10)
                    self.assertEqual(r.status, 400, r.body)
                    self.assertEqual(r.json["error"]["path"], path)
            ok = http.compact("flags", [dict(d, key="abcd", reacquire="abc"), dict(d, key="b")],
                              10)
            self.assertEqual(ok.status, 200, ok.body)
            r = http.post("/v1/sessions/flags/compact", body().ljust(2001, b" "), raw=True)
            self.assertEqual(r.status, 413)
        finally:
            stop_all(server, redis)

    def test_bad_limit_values_exit_2(self):
        cases = [(["--max-units", "0"], "--max-units"), (["--max-units", "many"], "--max-units"),
                 (["--max-key-bytes", "257"], "--max-key-bytes"),
                 (["--max-text-bytes", "-1"], "--max-text-bytes"),
                 (["--max-body-bytes", "1e6"], "--max-body-bytes"),
                 (["--max-connections", "0"], "--max-connections"),
                 (["--connection-timeout", "0"], "--connection-timeout"),
                 ([], "COMPACTD_MAX_UNITS")]
        for args, name in cases:
            with self.subTest(args=args):
                env = dict(os.environ, COMPACTD_LISTEN="127.0.0.1:0",
                           COMPACTD_MAX_UNITS="0" if not args else "10")
                out = subprocess.run([COMPACTD] + args, env=env, capture_output=True, timeout=10)
                self.assertEqual(out.returncode, 2, out.stderr)
                self.assertIn(name, out.stderr.decode())


class ChunkedMemoryTest(unittest.TestCase):
    """A chunked body is not buffered past the limit: 200 MiB sent against a
    1 MiB limit leave compactd's peak memory far below what was sent."""

    SENT_MIB = 200

    def test_peak_memory_stays_far_below_the_bytes_sent(self):
        redis = Redis()
        server = Compactd(redis.url(), env={"COMPACTD_MAX_BODY_BYTES": str(1 << 20)})
        try:
            before = vm_kib(server.proc.pid, "VmHWM")
            chunk = b"x" * (1 << 20)
            framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                s.sendall(b"POST /v1/sessions/big/compact HTTP/1.1\r\nHost: localhost\r\n"
                          b"Content-Type: application/json\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n")
                for _ in range(self.SENT_MIB):
                    s.sendall(framed)
                s.sendall(b"0\r\n\r\n")
                reply = b""
                while b"}}" not in reply:
                    part = s.recv(4096)
                    if not part:
                        break
                    reply += part
            self.assertIn(b" 413 ", reply.split(b"\r\n")[0])
            self.assertIn(b'"PayloadTooLarge"', reply)
            grown = vm_kib(server.proc.pid, "VmHWM") - before
            print("\nchunked: sent %d MiB, compactd peak memory grew by %d KiB"
                  % (self.SENT_MIB, grown))
            self.assertLess(grown, 32 * 1024)
        finally:
            stop_all(server, redis)


class MediaTypeAndRouteTest(ServerTest):
    def test_a_body_without_json_content_type_is_415(self):
        path = "/v1/sessions/s/compact"
        r = self.http.request("POST", path, body(), raw=True, headers={"Content-Type": ""})
        self.assertError(r, 415, "UnsupportedMediaType")
        for ct in ["text/plain", "application/jsonx", "text/json",
                   "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]:
            with self.subTest(content_type=ct):
                r = self.http.post(path, body(), raw=True, headers={"Content-Type": ct})
                self.assertError(r, 415, "UnsupportedMediaType")
        for ct in ["application/json", "APPLICATION/JSON", "application/json;charset=utf-8"]:
            with self.subTest(content_type=ct):
                r = self.http.post(path, body(), raw=True, headers={"Content-Type": ct})
                self.assertEqual(r.status, 200, r.body)

    def test_no_content_type_at_all_is_415(self):
        status, headers, raw, _ = raw_exchange(
            self.server.port,
            b"POST /v1/sessions/s/compact HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body()), body()))
        self.assertEqual(status, 415)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(raw)["error"]["type"], "UnsupportedMediaType")

    def test_unknown_routes_are_404_json(self):
        for method, path in [("GET", "/"), ("GET", "/v1"), ("GET", "/v1/sessions"),
                             ("POST", "/v1/sessions/s/x"), ("POST", "/v1/sessions/s/compactx"),
                             ("GET", "/v1/sessions/s/spills/"), ("GET", "/healthz/x"),
                             ("PATCH", "/nothing")]:
            with self.subTest(method=method, path=path):
                self.assertError(self.http.request(method, path), 404, "NotFound")

    def test_known_route_wrong_method_is_405_with_allow(self):
        cases = [("PUT", "/v1/sessions/s/compact", "POST"),
                 ("DELETE", "/v1/sessions/s/compact", "POST"),
                 ("POST", "/v1/sessions/s/spills", "GET"),
                 ("DELETE", "/v1/sessions/s/spills/k", "GET"),
                 ("GET", "/v1/sessions/s", "DELETE"),
                 ("POST", "/healthz", "GET"),
                 ("DELETE", "/readyz", "GET")]
        for method, path, allow in cases:
            with self.subTest(method=method, path=path):
                r = self.http.request(method, path)
                self.assertError(r, 405, "MethodNotAllowed")
                self.assertEqual(r.header("allow"), allow)


if __name__ == "__main__":
    unittest.main()
