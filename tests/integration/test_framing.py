"""Request framing over raw sockets: a request whose length or target a
proxy could read differently from compactd is refused with a JSON 400 and
the connection closed, so that bytes after its headers are never read as a
second request; where libmicrohttpd answers on its own, the connection is
closed too."""

import json
import os
import re
import socket
import tempfile
import unittest

from harness import Compactd, Redis, ServerTest, stop_all

# The request each smuggling case hides in its body: a DELETE of the session
# the victim owns.
SMUGGLED = b"DELETE /v1/sessions/victim HTTP/1.1\r\nHost: localhost\r\n\r\n"
KEEP = {"key": "k", "class": "protected", "tokens": 500, "text": "keep me"}


def exchange(port, data, timeout=5.0):
    """Sends data on a fresh connection and reads until the server closes
    it. Returns everything received. Fails when the server leaves the
    connection open for timeout seconds (it would read a next request)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return buf
            except socket.timeout:
                raise AssertionError("connection left open after %r" % buf[:300])
            if not chunk:
                return buf
            buf += chunk


def responses(buf):
    """The statuses of the responses in what the server sent, in order."""
    return re.findall(rb"HTTP/1\.[01] (\d{3}) ", buf)


def head_and_body(buf):
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    return int(lines[0].split()[1]), headers, body[:int(headers.get("content-length", "0"))]


def post(extra_headers, body):
    return (b"POST /v1/sessions/attacker/compact HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\n" + extra_headers + b"\r\n" + body)


class FramingTest(ServerTest):
    def setUp(self):
        r = self.http.compact("victim", [KEEP], 60)
        self.assertEqual(r.status, 200, r.body)
        self.href = r.json["externalized"][0]["href"]

    def assertVictimIntact(self):
        r = self.http.get(self.href)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json["text"], "keep me")

    def assertRefusedAndClosed(self, raw, words):
        buf = exchange(self.server.port, raw)
        self.assertEqual(len(responses(buf)), 1, buf)
        status, headers, body = head_and_body(buf)
        self.assertEqual(status, 400, buf)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers.get("connection"), "close")
        err = json.loads(body)["error"]
        self.assertEqual(err["type"], "InvalidRequest")
        self.assertIn(words, err["message"])
        self.assertVictimIntact()

    def test_ambiguous_lengths_are_refused_and_what_follows_is_never_a_request(self):
        n = len(SMUGGLED)
        cases = [
            # libmicrohttpd takes the first Content-Length; a proxy may take
            # the last, and forward the DELETE as part of this body.
            ("two Content-Lengths", b"Content-Length: 2\r\nContent-Length: %d\r\n" % (n + 2),
             b"{}" + SMUGGLED, "more than one Content-Length"),
            ("equal Content-Lengths", b"Content-Length: 2\r\nContent-Length: 2\r\n",
             b"{}" + SMUGGLED, "more than one Content-Length"),
            ("Content-Length and chunked",
             b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % (n + 5),
             b"0\r\n\r\n" + SMUGGLED, "Content-Length and Transfer-Encoding"),
            ("space before the colon", b"Content-Length : %d\r\n" % n, SMUGGLED,
             "before the colon"),
            ("tab before the colon", b"Content-Length\t: %d\r\n" % n, SMUGGLED,
             "before the colon"),
            ("Transfer-Encoding gzip", b"Transfer-Encoding: gzip\r\n", SMUGGLED,
             "Transfer-Encoding"),
            ("Transfer-Encoding list", b"Transfer-Encoding: gzip, chunked\r\n",
             b"0\r\n\r\n" + SMUGGLED, "Transfer-Encoding"),
            # libmicrohttpd appends a folded line to the header's name: it
            # reads no Content-Length here, a proxy that unfolds reads "0 5"
            # or refuses; compactd refuses.
            ("obs-fold of Content-Length", b"Content-Length: %d\r\n 5\r\n" % n, SMUGGLED,
             "obs-fold"),
            ("obs-fold with a tab", b"X-Note: a\r\n\tContent-Length: %d\r\n" % n, SMUGGLED,
             "obs-fold"),
            # A bare CR stays inside libmicrohttpd's value; a proxy may end
            # the line there and read the Content-Length after it.
            ("bare CR in a value", b"X-Note: a\r Content-Length: %d\r\n" % n, SMUGGLED,
             "control byte"),
            ("control byte in a value", b"X-Note: a\x01b\r\n", b"{}", "control byte"),
            ("non-token header name", b"X(Note): a\r\n", b"{}", "token character"),
            ("two Transfer-Encodings",
             b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
             b"0\r\n\r\n" + SMUGGLED, "Transfer-Encoding"),
        ]
        for name, headers, body, words in cases:
            with self.subTest(name):
                self.assertRefusedAndClosed(post(headers, body), words)
        self.assertNotIn('"method":"DELETE","route":"/v1/sessions/{session}"',
                         self.server.stderr())

    def test_host_headers_are_exactly_one_in_http_1_1(self):
        # RFC 9112 3.2: two Host lines are refused in any version (the Host
        # guard and a proxy could each read another); an HTTP/1.1 request
        # without one too; HTTP/1.0 may lack it.
        two = (b"POST /v1/sessions/attacker/compact HTTP/1.1\r\nHost: localhost\r\n"
               b"Host: evil.example\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % (2 + len(SMUGGLED)) + b"{}" + SMUGGLED)
        self.assertRefusedAndClosed(two, "more than one Host header")
        self.assertRefusedAndClosed(b"DELETE /v1/sessions/victim HTTP/1.1\r\n\r\n",
                                    "HTTP/1.1 request without a Host header")
        self.assertRefusedAndClosed(b"DELETE /v1/sessions/victim HTTP/1.0\r\nHost: a\r\n"
                                    b"Host: localhost\r\n\r\n", "more than one Host header")
        status, _, _ = head_and_body(exchange(self.server.port, b"GET /healthz HTTP/1.0\r\n\r\n"))
        self.assertEqual(status, 200)

    def test_every_answer_says_nosniff(self):
        # JSON, YAML, HTML, the metrics' text, errors of the transport and
        # of the routes: one header on every answer.
        for raw in (b"GET /healthz HTTP/1.0\r\n\r\n", b"GET /openapi.yaml HTTP/1.0\r\n\r\n",
                    b"GET /ui HTTP/1.0\r\n\r\n", b"GET /metrics HTTP/1.0\r\n\r\n",
                    b"GET /nowhere HTTP/1.0\r\n\r\n", b"GET /healthz\x01 HTTP/1.0\r\n\r\n",
                    b"GET /v1/sessions/victim/spills HTTP/1.0\r\nHost: localhost\r\n\r\n"):
            with self.subTest(raw=raw):
                status, headers, _ = head_and_body(exchange(self.server.port, raw))
                self.assertEqual(headers.get("x-content-type-options"), "nosniff", (status, headers))

    def test_a_nul_or_control_byte_in_the_target_is_400(self):
        cases = [b"DELETE /v1/sessions/victim\x00/anything HTTP/1.1\r\nHost: localhost\r\n\r\n",
                 b"DELETE /v1/sessions/victim\x00 HTTP/1.1\r\nHost: localhost\r\n\r\n",
                 b"DELETE /v1/sessions/victim?\x00x HTTP/1.1\r\nHost: localhost\r\n\r\n",
                 b"DELETE /v1/sessions/vic\x01tim HTTP/1.1\r\nHost: localhost\r\n\r\n",
                 b"GET /healthz\x7f HTTP/1.1\r\nHost: localhost\r\n\r\n",
                 b"GET /healthz\tx HTTP/1.1\r\nHost: localhost\r\n\r\n",
                 b"GET /healthz\x1b[2J HTTP/1.1\r\nHost: localhost\r\n\r\n"]
        for raw in cases:
            with self.subTest(raw=raw):
                words = "NUL" if b"\x00" in raw else "control character"
                self.assertRefusedAndClosed(raw, words)

    def test_a_method_that_is_not_a_token_is_400(self):
        # libmicrohttpd cuts the method at a NUL and hands on a bare CR.
        for raw in [b"DELE\x00TE /v1/sessions/victim HTTP/1.1\r\nHost: localhost\r\n\r\n",
                    b"\rDELETE /v1/sessions/victim HTTP/1.1\r\nHost: localhost\r\n\r\n",
                    b"DEL(ETE) /v1/sessions/victim HTTP/1.1\r\nHost: localhost\r\n\r\n"]:
            with self.subTest(raw=raw):
                self.assertRefusedAndClosed(raw, "method is not a token")

    def test_well_framed_requests_still_share_a_connection(self):
        body = b'{"budget": 10, "units": []}'
        one = post(b"Content-Length: %d\r\n" % len(body), body)
        chunked = post(b"Transfer-Encoding: chunked\r\n",
                       b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        last = b"GET /healthz?x=%20a&y HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        buf = exchange(self.server.port, one + chunked + last)
        self.assertEqual(responses(buf), [b"200"] * 3, buf)


class LibraryAnswersTest(ServerTest):
    """What libmicrohttpd 0.9.75 refuses before compactd sees the request
    (it offers no hook for the body of these answers): each ends the
    connection, and a request sent after it on the same connection is never
    answered."""

    NEXT = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
    CASES = [
        ("malformed request line", b"GARBAGE\r\n\r\n", None),
        ("request line without a target", b"GET\r\nHost: localhost\r\n\r\n", None),
        ("unknown protocol", b"GET /healthz FOO/1.1\r\nHost: localhost\r\n\r\n", b"400"),
        ("unsupported version", b"GET /healthz HTTP/2.0\r\nHost: localhost\r\n\r\n", b"505"),
        ("header line without a colon", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nNoColon\r\n\r\n",
         b"400"),
        ("oversized header", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX: " + b"a" * 70000
         + b"\r\n\r\n", b"431"),
        ("oversized target", b"GET /healthz?" + b"a" * 70000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n",
         b"414"),
        ("malformed Content-Length", post(b"Content-Length: 2x\r\n", b"{}"), b"400"),
        ("negative Content-Length", post(b"Content-Length: -1\r\n", b""), b"400"),
        ("Content-Length past 2^64", post(b"Content-Length: 99999999999999999999999\r\n", b""),
         b"413"),
        ("malformed chunk size", post(b"Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n"),
         b"400"),
    ]

    def test_each_closes_the_connection_and_nothing_after_it_is_answered(self):
        for name, raw, status in self.CASES:
            with self.subTest(name):
                buf = exchange(self.server.port, raw + self.NEXT)
                statuses = set(responses(buf))
                self.assertEqual(statuses, {status} if status else set(), buf[:400])
                self.assertNotIn(b'{"status":"ok"}', buf)


class DuplicateAuthorizationTest(unittest.TestCase):
    KEY = "k1-0123456789abcdef-secret"
    OTHER = "k2-fedcba9876543210-secret"

    @classmethod
    def setUpClass(cls):
        fd, cls.keys_file = tempfile.mkstemp(prefix="compactd-keys-")
        with os.fdopen(fd, "w") as f:
            f.write("%s alpha\n%s beta\n" % (cls.KEY, cls.OTHER))
        cls.redis = Redis()
        cls.server = Compactd(cls.redis.url(), env={"COMPACTD_API_KEYS_FILE": cls.keys_file})

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.server, cls.redis)
        os.unlink(cls.keys_file)

    def get(self, *auth):
        raw = (b"GET /v1/sessions/s/spills HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
               + b"".join(b"Authorization: Bearer %s\r\n" % a.encode() for a in auth) + b"\r\n")
        return head_and_body(exchange(self.server.port, raw))

    def test_two_authorization_headers_are_401_whichever_is_valid(self):
        self.assertEqual(self.get(self.KEY)[0], 200)
        for auth in [(self.KEY, self.KEY), (self.KEY, self.OTHER), (self.KEY, "wrong"),
                     ("wrong", self.KEY), (self.KEY, self.KEY, self.KEY)]:
            with self.subTest(count=len(auth)):
                status, headers, body = self.get(*auth)
                self.assertEqual(status, 401, body)
                self.assertEqual(json.loads(body)["error"]["type"], "Unauthorized")
                self.assertIn("Bearer", headers["www-authenticate"])


if __name__ == "__main__":
    unittest.main()
