"""Real servers for the integration tests: a private redis-server and a
compactd on free loopback ports in a temporary folder, and an HTTP client
that checks every response against openapi.yaml."""

import atexit
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import redis_start

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPACTD = os.environ.get("COMPACTD_BIN", os.path.join(ROOT, "build", "compactd"))
# COMPACTD_VALGRIND=1 runs every compactd under valgrind memcheck.
VALGRIND = os.environ.get("COMPACTD_VALGRIND") == "1"
VALGRIND_ERROR = 99

_spec = None


def spec():
    """The parsed openapi.yaml, loaded once per process."""
    global _spec
    if _spec is None:
        from openapi_validate import Spec
        _spec = Spec(os.path.join(ROOT, "openapi.yaml"))
    return _spec


def free_port():
    return redis_start.free_port()


def stop_all(*servers):
    """Stops every server given (a Compactd, a Redis), even when stopping
    one fails; then raises the first failure."""
    failure = None
    for server in servers:
        try:
            server.stop()
        except Exception as e:  # noqa: BLE001 - re-raised below
            failure = failure or e
    if failure:
        raise failure


def run_concurrently(fn, n):
    """Runs fn(0) .. fn(n-1) on n threads at once and waits for them all."""
    threads = [threading.Thread(target=fn, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def wait_until(predicate, timeout=10.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


class Redis:
    """A redis-server of our own with the shipped configuration (AOF on,
    appendfsync always), its data in a temporary folder; with tls (a
    redis_start.Tls), over TLS only."""

    def __init__(self, port=None, tls=None):
        self.dir = tempfile.mkdtemp(prefix="compactd-redis-")
        self.port = port
        self.tls = tls
        self.proc = None
        self.start()

    def start(self):
        """Starts the server; a restart keeps the port it has."""
        self.proc, self.port = redis_start.launch(self.dir, self.port, tls=self.tls)

    def ping(self):
        try:
            return self.cli("PING") == "PONG"
        except OSError:
            return False

    def cli(self, *args):
        """Runs one command with redis-cli and returns its raw output."""
        out = subprocess.run(["redis-cli", "-p", str(self.port), "--raw"] +
                             (self.tls.cli_args() if self.tls else []) + list(args),
                             capture_output=True, timeout=10)
        if out.returncode != 0:
            raise OSError(out.stderr.decode())
        return out.stdout.decode("utf-8", "replace").rstrip("\n")

    def keys(self):
        out = self.cli("KEYS", "*")
        return sorted(k for k in out.split("\n") if k)

    def url(self):
        return "%s://127.0.0.1:%d/0" % ("rediss" if self.tls else "redis", self.port)

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            # Redis refuses a SIGTERM while a replica writes its initial AOF
            # after a sync ("can't exit"): ask again until it goes.
            deadline = time.monotonic() + 10
            while True:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(0.5)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() > deadline:
                        raise
        self.proc = None

    def stop(self):
        self.kill(signal.SIGTERM)
        subprocess.run(["rm", "-rf", self.dir])


def _remove_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Compactd:
    """compactd on a free port; stderr is kept for assertions on the log.
    Under COMPACTD_VALGRIND=1 it runs in valgrind memcheck, and stop()
    raises when valgrind found an invalid access or a leak."""

    def __init__(self, redis_url, env=None, args=()):
        fd, self.log_path = tempfile.mkstemp(prefix="compactd-log-")
        # Read after stop() by some tests: removed when the test process ends.
        atexit.register(_remove_quietly, self.log_path)
        full_env = dict(os.environ)
        full_env.update({"COMPACTD_LISTEN": "127.0.0.1:0", "COMPACTD_REDIS_URL": redis_url,
                         "COMPACTD_REDIS_CONNECT_TIMEOUT_MS": "500",
                         "COMPACTD_REDIS_TIMEOUT_MS": "1000"})
        full_env.update(env or {})
        cmd = [COMPACTD] + list(args)
        self.valgrind_log = None
        if VALGRIND:
            self.valgrind_log = self.log_path + ".valgrind"
            cmd = ["valgrind", "--quiet", "--error-exitcode=%d" % VALGRIND_ERROR,
                   "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
                   "--show-leak-kinds=definite,indirect", "--track-origins=yes",
                   "--log-file=" + self.valgrind_log] + cmd
        self.log = os.fdopen(fd, "w+b")
        self.proc = subprocess.Popen(redis_start.TIED + cmd, env=full_env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        if not wait_until(self._read_port, timeout=60 if VALGRIND else 10):
            self.stop()
            raise RuntimeError("compactd did not start:\n" + self.stderr())

    def _read_port(self):
        for line in self.stderr().splitlines():
            if "listening on" in line:
                self.port = int(line.split("listening on ")[1].split(" ")[0].rsplit(":", 1)[1])
                return True
        if self.proc.poll() is not None:
            raise RuntimeError("compactd exited %d:\n%s" % (self.proc.returncode, self.stderr()))
        return False

    def stderr(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def client(self, **kw):
        return Client(self.port, **kw)

    def stop(self, timeout=15):
        """Sends SIGTERM (unless compactd already exited) and waits. A
        compactd stopped here must exit 0: anything else (a sanitizer's leak
        report, a crash, a hang) fails the test."""
        stopped_here = self.proc.poll() is None
        if stopped_here:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(max(timeout, 60) if VALGRIND else timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if self.valgrind_log and os.path.exists(self.valgrind_log):
            with open(self.valgrind_log, errors="replace") as f:
                report = f.read()
            os.unlink(self.valgrind_log)
            self.valgrind_log = None
            if self.proc.returncode == VALGRIND_ERROR:
                raise AssertionError("valgrind found errors in compactd:\n" + report)
        if stopped_here and self.proc.returncode != 0:
            raise AssertionError("compactd exited %d on SIGTERM:\n%s"
                                 % (self.proc.returncode, self.stderr()[-20000:]))
        return self.proc.returncode


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def header(self, name):
        return self.headers.get(name.lower())


class Client:
    """HTTP/1.1 on loopback. Every response is validated against the spec
    for its route and status unless validate=False."""

    def __init__(self, port, token=None, validate=True, timeout=30):
        self.port = port
        self.token = token
        self.validate = validate
        self.timeout = timeout

    def request(self, method, path, body=None, headers=None, raw=False):
        hdrs = {}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = body if raw else json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            r = conn.getresponse()
            resp = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()
        if self.validate:
            spec().validate(method, path, resp.status, resp.header("content-type") or "",
                            resp.body, headers=resp.headers)
        return resp

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def compact(self, session, units, budget, **extra):
        body = {"budget": budget, "units": units}
        body.update(extra)
        return self.post("/v1/sessions/%s/compact" % session, body)


class FreshServersTest(unittest.TestCase):
    """A Redis and a compactd (with compactd_env) of its own for each test;
    a Redis the test left stopped (SIGSTOP) is resumed to be stopped."""

    compactd_env = {}

    def setUp(self):
        self.redis = Redis()
        self.server = Compactd(self.redis.url(), env=self.compactd_env)
        self.http = self.server.client()

    def tearDown(self):
        if self.redis.proc and self.redis.proc.poll() is None:
            self.redis.proc.send_signal(signal.SIGCONT)
        stop_all(self.server, self.redis)


class ServerTest(unittest.TestCase):
    """One Redis and one compactd for the whole test class."""

    compactd_env = {}

    @classmethod
    def setUpClass(cls):
        cls.redis = Redis()
        cls.server = Compactd(cls.redis.url(), env=cls.compactd_env)
        cls.http = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.server, cls.redis)

    def assertError(self, resp, status, etype, path=None):
        self.assertEqual(resp.status, status, resp.body)
        self.assertEqual(resp.header("content-type"), "application/json")
        err = resp.json["error"]
        self.assertEqual(err["type"], etype)
        self.assertTrue(err["message"])
        if path is not None:
            self.assertEqual(err.get("path"), path)
        return err
