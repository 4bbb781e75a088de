"""DNS rebinding: a page that an attacker's name resolves to loopback
reaches compactd with the attacker's Host and, from a browser, its Origin.
Without API keys only a loopback Host (or one in COMPACTD_ALLOWED_HOSTS) is
answered, and a foreign Origin is refused on every route, with or without
keys; a refused request changes nothing."""

import os
import unittest

from harness import Compactd, Redis, ServerTest, stop_all
from test_tenants import KEY_A, write_keys_file

UNITS = [{"key": "task", "class": "protected", "tokens": 10, "text": "Never push to main."},
         {"key": "build.log", "class": "protected", "tokens": 900, "text": "make: Error 1\n" * 40}]

EVERY_ROUTE = [("POST", "/v1/sessions/s/compact", {"budget": 100, "units": UNITS}),
               ("POST", "/v1/sessions/s/verify", {"context": "", "units": []}),
               ("POST", "/v1/tokens", {"texts": ["hello"]}),
               ("GET", "/v1/sessions/s/spills", None),
               ("GET", "/v1/sessions/s/spills/build.log", None),
               ("GET", "/v1/sessions/s/events", None),
               ("DELETE", "/v1/sessions/s", None),
               ("GET", "/healthz", None),
               ("GET", "/readyz", None),
               ("GET", "/metrics", None),
               ("GET", "/openapi.yaml", None)]


class OpenTenant(ServerTest):
    compactd_env = {"COMPACTD_ALLOWED_HOSTS": "proxy.internal, pinned.internal:4000",
                    "COMPACTD_ALLOWED_ORIGINS": "https://app.example"}

    def setUp(self):
        self.raw = self.server.client()  # every answer checked against openapi.yaml
        r = self.http.compact("s", UNITS, 100)
        self.assertEqual(r.status, 200, r.body)
        self.assertTrue(r.json["externalized"])

    def test_a_foreign_host_is_refused_on_every_route_and_changes_nothing(self):
        before = sorted(self.redis.keys())
        for host in ("evil.example", "evil.example:%d" % self.server.port, "127.0.0.1.evil.example",
                     "localhost.evil.example", "127.0.0", "[::2]:80", "pinned.internal:4001"):
            for method, path, body in EVERY_ROUTE:
                with self.subTest(host=host, method=method, path=path):
                    r = self.raw.request(method, path, body, headers={"Host": host})
                    self.assertError(r, 403, "Forbidden")
                    self.assertIn("Host", r.json["error"]["message"])
            r = self.raw.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers={"Host": host})
            self.assertEqual(r.status, 403)
            self.assertEqual(r.json["error"]["code"], -32000)
        self.assertEqual(sorted(self.redis.keys()), before)
        self.assertEqual(self.http.get("/v1/sessions/s/spills").status, 200)

    def test_loopback_and_listed_hosts_are_answered(self):
        port = self.server.port
        for host in ("localhost", "LOCALHOST:%d" % port, "127.0.0.1:%d" % port, "127.1.2.3",
                     "[::1]:%d" % port, "proxy.internal", "proxy.internal:8080",
                     "pinned.internal:4000"):
            with self.subTest(host=host):
                r = self.raw.get("/v1/sessions/s/spills", headers={"Host": host})
                self.assertEqual(r.status, 200, r.body)

    def test_a_foreign_origin_is_refused_on_every_route(self):
        for origin in ("http://evil.example", "https://localhost.evil.example", "null",
                       "https://app.example:444"):
            for method, path, body in EVERY_ROUTE:
                with self.subTest(origin=origin, method=method, path=path):
                    r = self.raw.request(method, path, body, headers={"Origin": origin})
                    self.assertError(r, 403, "Forbidden")
                    self.assertIn("Origin", r.json["error"]["message"])
        for origin in ("http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443",
                       "https://app.example"):
            with self.subTest(origin=origin):
                r = self.raw.get("/v1/sessions/s/spills", headers={"Origin": origin})
                self.assertEqual(r.status, 200, r.body)


class WithApiKeys(unittest.TestCase):
    """With keys the key is the protection: any Host passes, a foreign
    Origin still does not."""

    def setUp(self):
        self.keys_file = write_keys_file("%s alpha\n" % KEY_A)
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env={"COMPACTD_API_KEYS_FILE": self.keys_file})
        self.client = self.server.client(token=KEY_A, validate=False)

    def tearDown(self):
        stop_all(self.server, self.redis)
        os.unlink(self.keys_file)

    def test_host_is_free_origin_is_not(self):
        r = self.client.get("/v1/sessions/s/spills", headers={"Host": "compactd.internal:8080"})
        self.assertEqual(r.status, 200, r.body)
        r = self.client.post("/v1/sessions/s/compact", {"budget": 100, "units": UNITS},
                             headers={"Origin": "http://evil.example"})
        self.assertEqual(r.status, 403, r.body)
        self.assertEqual(r.json["error"]["type"], "Forbidden")
        self.assertEqual(self.redis.keys(), [])


if __name__ == "__main__":
    unittest.main()
