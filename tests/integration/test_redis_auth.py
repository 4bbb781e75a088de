"""Redis that asks for a password: the URL's [[user]:password@], percent-
decoded, sent as AUTH on every connection (the default user's requirepass,
and an ACL user); credentials Redis refuses named at start-up and by
/readyz, never the password itself, which no log line, answer or error
shows; malformed credentials refused before compactd listens."""

import subprocess
import unittest
import urllib.parse

from harness import COMPACTD, Compactd, Redis, stop_all, wait_until

PASSWORD = "p@ss/w\u00f6rd:1 %x"  # reserved characters, non-ASCII, a space
ACL_USER, ACL_PASSWORD = "compactd-app", "acl-secret-7f3a"


def quoted(s):
    return urllib.parse.quote(s, safe="")


class AuthRedis(Redis):
    """Our redis-server with requirepass set (and an ACL user), its
    redis-cli calls authenticated."""

    def __init__(self):
        super().__init__()
        self.cli("ACL", "SETUSER", ACL_USER, "on", ">" + ACL_PASSWORD, "~compactd:*", "+@all")
        self.cli("CONFIG", "SET", "requirepass", PASSWORD)

    def cli(self, *args):
        cmd = ["redis-cli", "-p", str(self.port), "--raw", "--no-auth-warning"]
        if getattr(self, "authed", False):
            cmd += ["--user", "default", "--pass", PASSWORD]
        out = subprocess.run(cmd + list(args), capture_output=True, timeout=10)
        if out.returncode != 0:
            raise OSError(out.stderr.decode())
        if args[:3] == ("CONFIG", "SET", "requirepass"):
            self.authed = True
        return out.stdout.decode("utf-8", "replace").rstrip("\n")


class RedisAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = AuthRedis()

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.redis)

    def start(self, userinfo):
        return Compactd("redis://%s@127.0.0.1:%d/0" % (userinfo, self.redis.port))

    def assertNoSecret(self, text):
        for secret in (PASSWORD, quoted(PASSWORD), ACL_PASSWORD, "p@ss"):
            self.assertNotIn(secret, text)

    def spill_and_read_back(self, server, session):
        http = server.client()
        r = http.compact(session, [{"key": "plan", "class": "protected", "tokens": 500,
                                    "text": "the plan of " + session}], 100)
        self.assertEqual(r.status, 200, r.body)
        back = http.get(r.json["externalized"][0]["href"])
        self.assertEqual(back.status, 200, back.body)
        self.assertEqual(back.json["text"], "the plan of " + session)
        self.assertIn("compactd:{default:%s}:text" % session, self.redis.keys())

    def test_the_default_users_password_percent_encoded(self):
        server = self.start(":" + quoted(PASSWORD))
        try:
            self.assertEqual(server.client().get("/readyz").status, 200)
            self.spill_and_read_back(server, "by-password")
            log = server.stderr()
            self.assertIn("redis redis://:***@127.0.0.1:%d/0" % self.redis.port, log)
            self.assertNotIn("/readyz answers 503", log)
            self.assertNoSecret(log)
        finally:
            stop_all(server)

    def test_an_acl_user(self):
        server = self.start("%s:%s" % (ACL_USER, ACL_PASSWORD))
        try:
            self.assertEqual(server.client().get("/readyz").status, 200)
            self.spill_and_read_back(server, "by-acl-user")
            self.assertIn("redis://%s:***@" % ACL_USER, server.stderr())
            self.assertNoSecret(server.stderr())
        finally:
            stop_all(server)

    def test_refused_credentials_are_named_and_never_shown(self):
        for userinfo in (":wrong-password", "%s:wrong" % ACL_USER, ""):
            with self.subTest(userinfo=userinfo):
                server = (self.start(userinfo) if userinfo
                          else Compactd("redis://127.0.0.1:%d/0" % self.redis.port))
                try:
                    http = server.client()
                    ready = http.get("/readyz")
                    self.assertEqual(ready.status, 503, ready.body)
                    why = "refused the credentials" if userinfo else "NOAUTH"
                    self.assertIn(why, ready.body.decode())
                    r = http.compact("refused", [{"key": "plan", "class": "protected",
                                                  "tokens": 500, "text": "t"}], 100)
                    self.assertEqual(r.status, 503, r.body)
                    # Said once at start-up, with why.
                    self.assertTrue(wait_until(lambda: '"level":"warn"' in server.stderr(), 5,
                                               0.1))
                    log = server.stderr()
                    self.assertIn("/readyz answers 503", log)
                    if userinfo:
                        self.assertIn("WRONGPASS", log)
                    for text in (log, ready.body.decode(), r.body.decode()):
                        self.assertNoSecret(text)
                        self.assertNotIn("wrong-password", text)
                finally:
                    stop_all(server)

    def test_malformed_credentials_stop_compactd_before_it_listens(self):
        port = self.redis.port
        for url in ("redis://only-a-user@127.0.0.1:%d/0" % port,
                    "redis://:@127.0.0.1:%d/0" % port,
                    "redis://:bad%%zzescape@127.0.0.1:%d/0" % port,
                    "redis://:nul%%00qqsecret@127.0.0.1:%d/0" % port,
                    "redis+cluster://:%s@127.0.0.1:%d/" % ("x" * 300, port)):
            with self.subTest(url=url):
                out = subprocess.run([COMPACTD], env={"COMPACTD_REDIS_URL": url,
                                                      "COMPACTD_LISTEN": "127.0.0.1:0"},
                                     capture_output=True, timeout=30)
                self.assertEqual(out.returncode, 2, out.stderr)
                err = out.stderr.decode()
                self.assertIn("redis url", err)
                self.assertNotIn("listening on", err)
                for secret in ("zzescape", "qqsecret", "x" * 30):
                    self.assertNotIn(secret, err)


if __name__ == "__main__":
    unittest.main()
