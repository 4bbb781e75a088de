"""Redis over TLS (rediss://) against real redis-servers that speak TLS
only, on certificates made for the run: spills written and read back;
Redis's certificate checked against the CA given (another CA, or the
system's, refused by name, at start-up and on /readyz) and against the
node's address or the server name given; mutual TLS (no client certificate,
or one of another CA, refused in words); TLS with a password and an ACL
user; a Redis restarted under compactd; a plaintext port behind rediss://
and a TLS port behind redis:// named as the likely mistakes; and settings that cannot work refused before compactd
listens (exit 2)."""

import os
import shutil
import subprocess
import unittest
import urllib.parse

from harness import COMPACTD, Compactd, Redis, stop_all, wait_until
from redis_start import Certificates, Tls

PASSWORD = "tls p@ss/w\u00f6rd"
ACL_USER, ACL_PASSWORD = "compactd-tls", "acl-tls-secret-41"


def text_of(session):
    return "the plan of %s, kept verbatim" % session


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.certs = Certificates()
        cls.servers = []
        try:
            cls.redis = cls.start_redis(Tls(cls.certs))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            stop_all(*cls.servers)
        finally:
            cls.certs.remove()

    @classmethod
    def start_redis(cls, tls):
        redis = Redis(tls=tls)
        cls.servers.append(redis)
        return redis

    def start(self, redis, url=None, ca="ca.crt", cert=None, key=None, name=None, env=None):
        """compactd on redis, trusting the CA file ca (None: no CA setting),
        with the client certificate and key and the server name given."""
        settings = {"COMPACTD_REDIS_TLS_CA_FILE": ca, "COMPACTD_REDIS_TLS_CERT_FILE": cert,
                    "COMPACTD_REDIS_TLS_KEY_FILE": key}
        full = {k: self.certs.path(v) for k, v in settings.items() if v}
        if name:
            full["COMPACTD_REDIS_TLS_SERVER_NAME"] = name
        full.update(env or {})
        server = Compactd(url or redis.url(), env=full)
        self.addCleanup(stop_all, server)
        return server

    def assertServes(self, server, redis, session):
        """/readyz is 200, and a spill is written over TLS and read back;
        returns where it is read from."""
        http = server.client()
        self.assertTrue(wait_until(lambda: http.get("/readyz").status == 200, 10, 0.1),
                        http.get("/readyz").body)
        r = http.compact(session, [{"key": "plan", "class": "protected", "tokens": 500,
                                    "text": text_of(session)}], 100)
        self.assertEqual(r.status, 200, r.body)
        back = http.get(r.json["externalized"][0]["href"])
        self.assertEqual(back.status, 200, back.body)
        self.assertEqual(back.json["text"], text_of(session))
        self.assertIn("compactd:{default:%s}:text" % session, redis.keys())
        return r.json["externalized"][0]["href"]

    def assertRefused(self, server, *words):
        """/readyz and a compaction answer 503 with each of words, which the
        start-up warning says too."""
        http = server.client()
        ready = http.get("/readyz")
        self.assertEqual(ready.status, 503, ready.body)
        r = http.compact("refused", [{"key": "plan", "class": "protected", "tokens": 500,
                                      "text": "t"}], 100)
        self.assertEqual(r.status, 503, r.body)
        self.assertTrue(wait_until(lambda: "/readyz answers 503" in server.stderr(), 10, 0.1))
        warning = [line for line in server.stderr().splitlines() if "/readyz answers 503" in line]
        for word in words:
            self.assertIn(word, ready.body.decode())
            self.assertIn(word, warning[0])

    # ---- One node ----

    def test_spills_go_over_tls_and_come_back(self):
        server = self.start(self.redis)
        for i in range(20):
            self.assertServes(server, self.redis, "over-tls-%d" % i)
        self.assertIn("redis rediss://127.0.0.1:%d/0" % self.redis.port, server.stderr())
        self.assertNotIn('"level":"warn","msg":"Redis', server.stderr())
        # A connection idle between requests is found fit and kept: one
        # handshake per connection, not one per request.
        metrics = server.client().get("/metrics").body.decode()
        self.assertIn("\ncompactd_redis_reconnects_total 0\n", metrics)

    def test_a_ca_that_did_not_sign_redis_is_refused_by_name(self):
        server = self.start(self.redis, ca="other-ca.crt")
        self.assertRefused(server, "certificate is not trusted",
                           "trusted: CA file %s" % self.certs.path("other-ca.crt"))

    def test_a_hashed_ca_folder(self):
        folder = self.certs.path("cas")
        os.mkdir(folder)
        shutil.copy(self.certs.path("ca.crt"), folder)
        subprocess.run(["openssl", "rehash", folder], check=True, capture_output=True)
        server = self.start(self.redis, ca=None, env={"COMPACTD_REDIS_TLS_CA_DIR": folder})
        self.assertServes(server, self.redis, "by-ca-folder")

    def test_the_systems_cas_do_not_trust_a_private_ca(self):
        server = self.start(self.redis, ca=None)
        self.assertRefused(server, "certificate is not trusted", "trusted: the system's CAs")

    def test_the_certificate_must_name_the_server_name_given(self):
        refused = self.start(self.redis, name="redis.example")
        self.assertRefused(refused, "certificate does not name redis.example")
        # server.crt names localhost (and 127.0.0.1, which the URL has).
        self.assertServes(self.start(self.redis, name="localhost"), self.redis, "by-dns-name")

    def test_the_certificate_must_name_the_address_when_no_name_is_given(self):
        redis = self.start_redis(Tls(self.certs, cert="other-name"))
        self.assertRefused(self.start(redis), "certificate does not name 127.0.0.1")
        self.assertServes(self.start(redis, name="redis.example"), redis, "by-name")

    def test_a_restarted_redis_is_reconnected_over_tls(self):
        server = self.start(self.redis)
        href = self.assertServes(server, self.redis, "before-restart")
        self.redis.kill()
        self.redis.start()
        # The first request after the restart finds its idle connection
        # closed and opens another: no request fails.
        http = server.client()
        r = http.compact("after-restart", [{"key": "plan", "class": "protected", "tokens": 500,
                                            "text": text_of("after-restart")}], 100)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(http.get(href).json["text"], text_of("before-restart"))

    # ---- Mutual TLS ----

    def test_mutual_tls(self):
        redis = self.start_redis(Tls(self.certs, mutual=True))
        self.assertRefused(self.start(redis), "Redis asks for a client certificate")
        self.assertRefused(self.start(redis, cert="stranger.crt", key="stranger.key"),
                           "Redis refused the client certificate")
        self.assertServes(self.start(redis, cert="client.crt", key="client.key"), redis,
                          "mutual")

    # ---- With a password ----

    def test_tls_with_a_password_and_an_acl_user(self):
        redis = self.start_redis(Tls(self.certs))
        redis.cli("ACL", "SETUSER", ACL_USER, "on", ">" + ACL_PASSWORD, "~compactd:*", "+@all")
        redis.cli("CONFIG", "SET", "requirepass", PASSWORD)
        redis.cli = lambda *args, cli=redis.cli: cli("--user", "default", "--pass", PASSWORD,
                                                     "--no-auth-warning", *args)
        url = "rediss://%%s@127.0.0.1:%d/0" % redis.port
        by_password = self.start(redis, url % (":" + urllib.parse.quote(PASSWORD, safe="")))
        self.assertServes(by_password, redis, "tls-password")
        self.assertIn("rediss://:***@127.0.0.1", by_password.stderr())
        by_user = self.start(redis, url % ("%s:%s" % (ACL_USER, ACL_PASSWORD)))
        self.assertServes(by_user, redis, "tls-acl-user")
        self.assertRefused(self.start(redis, url % ":wrong"), "refused the credentials")
        for server in (by_password, by_user):
            self.assertNotIn(ACL_PASSWORD, server.stderr())
            self.assertNotIn("w\u00f6rd", server.stderr())

    # ---- Ports that do not speak what the URL says ----

    def test_a_plaintext_port_behind_rediss_is_named(self):
        plain = self.start_redis(None)
        server = self.start(plain, url="rediss://127.0.0.1:%d/0" % plain.port)
        self.assertRefused(server, "does Redis speak TLS on this port?")

    def test_a_tls_port_behind_redis_is_named(self):
        server = self.start(self.redis, url="redis://127.0.0.1:%d/0" % self.redis.port, ca=None)
        self.assertRefused(server, "(a TLS port? rediss:// speaks TLS)")


class TlsSettingsTest(unittest.TestCase):
    """Settings that cannot work stop compactd before it listens, saying
    why; a passphrase is never asked for."""

    @classmethod
    def setUpClass(cls):
        cls.certs = Certificates()

    @classmethod
    def tearDownClass(cls):
        cls.certs.remove()

    def assertExits2(self, url, expected, **files):
        env = {"COMPACTD_REDIS_URL": url, "COMPACTD_LISTEN": "127.0.0.1:0"}
        for setting, value in files.items():
            env["COMPACTD_REDIS_TLS_" + setting.upper()] = (
                self.certs.path(value) if setting != "server_name" else value)
        out = subprocess.run([COMPACTD], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=30)
        err = out.stderr.decode()
        self.assertEqual(out.returncode, 2, err)
        self.assertIn(expected, err)
        self.assertNotIn("listening on", err)

    def test_refused_settings(self):
        tls, p = "rediss://127.0.0.1:6390/0", self.certs.path
        cases = [
            ("redis://127.0.0.1:6390/0", "does not ask for TLS", {"ca_file": "ca.crt"}),
            ("unix:///tmp/redis.sock", "does not ask for TLS", {"server_name": "redis.example"}),
            (tls, "TLS CA file '%s': No such file or directory" % p("missing.crt"),
             {"ca_file": "missing.crt"}),
            (tls, "TLS CA file '%s': no certificate or crl found" % p("client.key"),
             {"ca_file": "client.key"}),
            (tls, "TLS CA folder '%s': not a folder" % p("ca.crt"), {"ca_dir": "ca.crt"}),
            (tls, "a client certificate needs its key", {"cert_file": "client.crt"}),
            (tls, "a client certificate needs its key", {"key_file": "client.key"}),
            (tls, "TLS client key '%s' is not the key of '%s'" % (p("server.key"),
                                                                 p("client.crt")),
             {"cert_file": "client.crt", "key_file": "server.key"}),
            (tls, "encrypted, and compactd reads keys without a passphrase",
             {"cert_file": "client.crt", "key_file": "client-encrypted.key"}),
            (tls, "TLS client certificate '%s': " % p("client.key"),
             {"cert_file": "client.key", "key_file": "client.key"}),
        ]
        for url, expected, files in cases:
            with self.subTest(url=url, files=files):
                self.assertExits2(url, expected, **files)

    def test_bad_tls_urls(self):
        for url, expected in (("rediss://", "expected rediss://host:port/db"),
                              ("rediss://h:1/x", "expected rediss://host:port/db"),
                              ("rediss+cluster://a/", "expected rediss+cluster://host:port,"),
                              ("rediss+cluster://a:1/0", "expected rediss+cluster://host:port,")):
            with self.subTest(url=url):
                self.assertExits2(url, expected)


if __name__ == "__main__":
    unittest.main()
