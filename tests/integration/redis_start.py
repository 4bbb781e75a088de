"""Starting a test redis-server (through tests/redis/launch.sh) on a free
loopback port without trusting the port to stay free.

A port found free is free only until someone binds it: between our probe and
redis-server's bind, a server of a test running beside ours, or the local end
of an outgoing connection, can take it (for a cluster node, its bus port at
port + 10000 too). redis-server then exits, or PING reaches somebody else's
server. So a start counts only when PING answers and INFO names the process
we spawned; when the process exits first, the start is made again on a new
port.

A Tls given to launch() and cli() makes the server speak TLS only (no
plaintext port), on certificates made for the run (tests/redis/tls_certs.sh),
and redis-cli reach it over TLS."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The suites' one way to start a test Redis.
REDIS_LAUNCH = os.path.join(ROOT, "tests", "redis", "launch.sh")
# A server a test starts goes with the test process, even one killed (a
# ctest timeout's SIGKILL runs no cleanup): setpriv has the kernel send it
# SIGKILL when the thread that started it ends, and execs the command, so
# the pid spawned is still the server's. The suites start their servers
# from their main thread.
TIED = ["setpriv", "--pdeathsig", "KILL", "--"]
TLS_CERTS = os.path.join(ROOT, "tests", "redis", "tls_certs.sh")
ATTEMPTS = 20


class Certificates:
    """A temporary folder of the certificates and keys tls_certs.sh makes
    (ca.crt, server.crt, client.crt, ...); remove() deletes it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="compactd-tls-")
        try:
            subprocess.run([TLS_CERTS, self.dir], check=True, capture_output=True, timeout=60)
        except BaseException:
            self.remove()
            raise

    def path(self, name):
        return os.path.join(self.dir, name)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Tls:
    """How a test Redis speaks TLS: with the certificate named cert (of
    certs: "server", "other-name", ...), and with mutual, asking each client
    for a certificate of the test CA (tls-auth-clients yes; redis-cli and
    the cluster bus then present client.crt)."""

    def __init__(self, certs, cert="server", mutual=False):
        self.certs, self.cert, self.mutual = certs, cert, mutual

    def server_args(self, port):
        p = self.certs.path
        args = ["--port", "0", "--tls-port", str(port),
                "--tls-cert-file", p(self.cert + ".crt"), "--tls-key-file", p(self.cert + ".key"),
                "--tls-ca-cert-file", p("ca.crt"), "--tls-replication", "yes",
                "--tls-cluster", "yes", "--tls-auth-clients", "yes" if self.mutual else "no"]
        if self.mutual:
            args += ["--tls-client-cert-file", p("client.crt"),
                     "--tls-client-key-file", p("client.key")]
        return args

    def cli_args(self):
        args = ["--tls", "--cacert", self.certs.path("ca.crt")]
        if self.mutual:
            args += ["--cert", self.certs.path("client.crt"), "--key", self.certs.path("client.key")]
        return args


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port(bus=False):
    """A loopback port nothing listens on now; with bus, one whose cluster bus
    port (port + 10000) is free too."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not bus or (port + 10000 < 65536 and _bindable(port + 10000)):
            return port


def cli(port, *args, timeout=10, tls=None):
    """Runs one command on the server at port (over tls, a Tls, when
    given); returns its raw output."""
    out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--raw"] +
                         (tls.cli_args() if tls else []) + [str(a) for a in args],
                         capture_output=True, timeout=timeout)
    if out.returncode != 0:
        raise OSError(out.stderr.decode())
    return out.stdout.decode("utf-8", "replace").rstrip("\n")


def _serves(proc, port, tls):
    """True once the server at port answers and is proc."""
    try:
        if cli(port, "PING", timeout=5, tls=tls) != "PONG":
            return False
        info = cli(port, "INFO", "server", timeout=5, tls=tls)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "process_id:%d\r" % proc.pid in info or "process_id:%d\n" % proc.pid in info


def launch(folder, port=None, cluster_timeout_ms=None, timeout=20.0, tls=None):
    """Starts redis-server with its data in folder; returns (proc, port) once
    it answers. port None picks a free one and moves on to another while the
    server cannot bind; a given port is the caller's (a restart keeps it) and
    a failure to take it raises. With tls (a Tls), the server listens on port
    over TLS only."""
    fixed = port is not None
    for _ in range(ATTEMPTS):
        if not fixed:
            port = free_port(bus=cluster_timeout_ms is not None)
        args = TIED + [REDIS_LAUNCH]
        if cluster_timeout_ms is not None:
            args += ["--cluster", str(cluster_timeout_ms)]
        args += [folder, str(port)] + (tls.server_args(port) if tls else [])
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if _serves(proc, port, tls):
                return proc, port
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            raise RuntimeError("redis-server on port %d did not answer in %.0f s" % (port, timeout))
        proc.wait()
        if fixed:
            raise RuntimeError("redis-server could not start on port %d (exit %d; %s)" %
                               (port, proc.returncode, os.path.join(folder, "redis.log")))
        # Another process took the port, or a cluster node's bus port, first.
        for name in ("redis.log", "nodes.conf"):
            try:
                os.remove(os.path.join(folder, name))
            except FileNotFoundError:
                pass
    raise RuntimeError("redis-server found no free port in %d attempts" % ATTEMPTS)
