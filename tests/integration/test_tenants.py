"""Tenants: API keys from COMPACTD_API_KEYS_FILE, isolation between
tenants, Redis key names that nothing can reach into, and a keys file
that is refused loudly when it is wrong."""

import os
import subprocess
import tempfile
import unittest

from harness import COMPACTD, Compactd, Redis, ServerTest, stop_all

KEY_A = "ka-0123456789abcdef-secret"
KEY_B = "kb-fedcba9876543210-secret"
WRONG = "kz-not-a-key-at-all-000000"


def protected(key, tokens, text):
    return {"key": key, "class": "protected", "tokens": tokens, "text": text}


def write_keys_file(text):
    fd, path = tempfile.mkstemp(prefix="compactd-keys-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class TenantTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.keys_file = write_keys_file("# tenants\n\n%s alpha\n  %s\tbeta  \n" % (KEY_A, KEY_B))
        cls.compactd_env = {"COMPACTD_API_KEYS_FILE": cls.keys_file}
        super().setUpClass()
        cls.a = cls.server.client(token=KEY_A)
        cls.b = cls.server.client(token=KEY_B)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        os.unlink(cls.keys_file)

    def test_every_v1_route_needs_a_valid_bearer_key(self):
        routes = [("POST", "/v1/sessions/s/compact", {"budget": 1, "units": []}),
                  ("POST", "/v1/sessions/s/verify", {"context": "", "units": []}),
                  ("GET", "/v1/sessions/s/spills", None),
                  ("GET", "/v1/sessions/s/spills/k", None),
                  ("GET", "/v1/sessions/s/events", None),
                  ("DELETE", "/v1/sessions/s", None)]
        headers = [None, "Bearer " + WRONG, "Bearer", "Bearer ", "Basic " + KEY_A,
                   KEY_A, "Bearer " + KEY_A[:-1], "Bearer " + KEY_A + "x",
                   "Bearer  " + KEY_A + " " + KEY_B]
        anonymous = self.server.client()
        for method, path, body in routes:
            for auth in headers:
                with self.subTest(method=method, path=path, auth=auth):
                    h = {"Authorization": auth} if auth is not None else {}
                    r = anonymous.request(method, path, body, headers=h)
                    err = self.assertError(r, 401, "Unauthorized")
                    self.assertNotIn(KEY_A, err["message"])
            with self.subTest(method=method, path=path, auth="valid"):
                r = self.a.request(method, path, body)
                self.assertNotEqual(r.status, 401, r.body)
        self.assertEqual(self.a.request("GET", "/v1/sessions/s/spills",
                                        headers={"Authorization": "bearer " + KEY_A}).status,
                         200)

    def test_health_and_readiness_stay_open(self):
        anonymous = self.server.client()
        self.assertEqual(anonymous.get("/healthz").status, 200)
        self.assertEqual(anonymous.get("/readyz").status, 200)

    def test_tenants_cannot_read_list_or_delete_each_others_spills(self):
        p = self.a.compact("shared", [protected("plan", 500, "alpha's plan")], 100).json
        href = p["externalized"][0]["href"]
        self.assertEqual(self.a.get(href).json["text"], "alpha's plan")
        # Same session name, other tenant: nothing there.
        self.assertError(self.b.get(href), 404, "NotFound")
        self.assertError(self.b.get("/v1/sessions/shared/spills/plan"), 404, "NotFound")
        self.assertEqual(self.b.get("/v1/sessions/shared/spills").json["spills"], [])
        self.assertEqual(self.b.get("/v1/sessions/shared/events").json["events"], [])
        self.assertEqual(self.b.delete("/v1/sessions/shared").status, 204)
        self.assertEqual(self.a.get(href).json["text"], "alpha's plan")
        # Beta's own spill under the same name and key stays beta's.
        q = self.b.compact("shared", [protected("plan", 500, "beta's plan")], 100).json
        self.assertEqual(self.b.get(q["externalized"][0]["href"]).json["text"], "beta's plan")
        self.assertEqual(self.a.get("/v1/sessions/shared/spills/plan").json["text"],
                         "alpha's plan")
        self.assertEqual(len(self.a.get("/v1/sessions/shared/spills").json["spills"]), 1)
        self.assertEqual(self.a.delete("/v1/sessions/shared").status, 204)
        self.assertError(self.a.get(href), 404, "NotFound")
        self.assertEqual(self.b.get(q["externalized"][0]["href"]).json["text"], "beta's plan")

    def test_equal_idempotency_keys_of_two_tenants_never_meet(self):
        # The same session, key and Idempotency-Key, other bodies: each
        # tenant's commit is its own, neither is a retry of or a conflict
        # with the other.
        key = {"Idempotency-Key": "turn-1"}
        for client, text in ((self.a, "alpha's step"), (self.b, "beta's step")):
            r = client.post("/v1/sessions/idem/compact",
                            {"budget": 100, "units": [protected("step", 500, text)]}, headers=key)
            self.assertEqual(r.status, 200, r.body)
        for client, text in ((self.a, "alpha's step"), (self.b, "beta's step")):
            self.assertEqual(client.get("/v1/sessions/idem/spills/step").json["text"], text)
            events = client.get("/v1/sessions/idem/events").json["events"]
            self.assertEqual([e["kind"] for e in events], ["compact"])
        # And each one's retry is its own retry.
        again = self.b.post("/v1/sessions/idem/compact",
                            {"budget": 100, "units": [protected("step", 500, "beta's step")]},
                            headers=key)
        self.assertEqual(again.status, 200, again.body)
        self.assertEqual(len(self.b.get("/v1/sessions/idem/events").json["events"]), 1)
        for client in (self.a, self.b):
            self.assertEqual(client.delete("/v1/sessions/idem").status, 204)

    def test_keys_that_look_like_other_namespaces_stay_in_their_own(self):
        # Unit keys shaped like Redis key names, hash tags, field separators
        # and other tenants' sessions.
        sneaky = ["}:text", "{beta:s}", "beta:s}:meta", "compactd:{beta:s}:text",
                  "0" * 64 + ":plan", ":", "{", "}", "a}b{c", "s}:events"]
        units = [protected(k, 500, "text of " + k) for k in sneaky]
        p = self.a.compact("s", units, 700)
        self.assertEqual(p.status, 200, p.body)
        self.assertEqual(len(p.json["externalized"]), len(sneaky))
        owned = [k for k in self.redis.keys() if "{alpha:s}" in k or "{beta:s}" in k]
        self.assertEqual(sorted(owned), ["compactd:{alpha:s}:commits", "compactd:{alpha:s}:events",
                                         "compactd:{alpha:s}:meta", "compactd:{alpha:s}:text"])
        for e in p.json["externalized"]:
            self.assertEqual(self.a.get(e["href"]).json["text"], "text of " + e["key"])
            self.assertError(self.b.get(e["href"]), 404, "NotFound")
        self.assertEqual(self.b.get("/v1/sessions/s/spills").json["spills"], [])
        listed = sorted(x["key"] for x in self.a.get("/v1/sessions/s/spills").json["spills"])
        self.assertEqual(listed, sorted(sneaky))
        # Nothing leaked into another session of the same tenant either.
        self.assertEqual(self.a.get("/v1/sessions/t/spills").json["spills"], [])

    def test_keys_are_never_logged(self):
        self.a.get("/v1/sessions/s/spills")
        self.server.client(token=WRONG).get("/v1/sessions/s/spills")
        self.server.client().get("/v1/sessions/s/spills",
                                 headers={"Authorization": "Basic " + KEY_B})
        log = self.server.stderr()
        self.assertIn('"tenant":"alpha"', log)
        for secret in [KEY_A, KEY_B, WRONG, KEY_A[:12], KEY_B[-12:]]:
            self.assertNotIn(secret, log)


class OpenTenantTest(unittest.TestCase):
    def test_without_keys_file_one_open_tenant_and_a_startup_warning(self):
        redis = Redis()
        server = Compactd(redis.url(), env={"COMPACTD_API_KEYS_FILE": ""})
        try:
            r = server.client().compact("s", [protected("k", 500, "t")], 100)
            self.assertEqual(r.status, 200)
            self.assertIn("compactd:{default:s}:text", redis.keys())
            log = server.stderr()
            self.assertIn('"level":"warn","msg":"COMPACTD_API_KEYS_FILE is not set', log)
        finally:
            stop_all(server, redis)


class BadKeysFileTest(unittest.TestCase):
    """A keys file that cannot be used stops compactd before it listens:
    exit code 2 and a message that names the file and line, never a key."""

    CASES = [
        ("", "holds no key"),
        ("# only a comment\n\n", "holds no key"),
        ("short alpha\n", "line 1"),
        ("%s\n" % KEY_A, "line 1"),
        ("%s alpha extra\n" % KEY_A, "line 1"),
        ("%s al:pha\n" % KEY_A, "line 1"),
        ("%s {alpha}\n" % KEY_A, "line 1"),
        ("%s %s\n" % (KEY_A, "t" * 65), "line 1"),
        ("%s alpha\n%s beta\n" % (KEY_A, KEY_A), "line 2"),
        ("%s alpha\n%s\x01x beta\n" % (KEY_A, KEY_B), "line 2"),
    ]

    def run_compactd(self, keys_path):
        env = dict(os.environ, COMPACTD_API_KEYS_FILE=keys_path,
                   COMPACTD_LISTEN="127.0.0.1:0", COMPACTD_REDIS_URL="redis://127.0.0.1:1/0")
        return subprocess.run([COMPACTD], env=env, capture_output=True, timeout=10)

    def test_bad_keys_file_exits_2_with_a_clear_message(self):
        for text, words in self.CASES:
            path = write_keys_file(text)
            try:
                with self.subTest(text=text):
                    out = self.run_compactd(path)
                    err = out.stderr.decode("utf-8", "replace")
                    self.assertEqual(out.returncode, 2, err)
                    self.assertIn(path, err)
                    self.assertIn(words, err)
                    self.assertNotIn("listening", err)
                    for secret in [KEY_A, KEY_B]:
                        self.assertNotIn(secret, err)
            finally:
                os.unlink(path)

    def test_missing_or_unreadable_keys_file_exits_2(self):
        missing = os.path.join(tempfile.gettempdir(), "compactd-no-such-keys-file")
        out = self.run_compactd(missing)
        self.assertEqual(out.returncode, 2)
        self.assertIn(missing, out.stderr.decode())
        directory = tempfile.mkdtemp(prefix="compactd-keys-dir-")
        try:
            out = self.run_compactd(directory)
            self.assertEqual(out.returncode, 2)
            self.assertIn(directory, out.stderr.decode())
        finally:
            os.rmdir(directory)


if __name__ == "__main__":
    unittest.main()
