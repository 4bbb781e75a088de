"""Starting a test redis-server (through tests/redis/launch.sh) on a free
loopback port without trusting the port to stay free.

A port found free is free only until someone binds it: between our probe and
redis-server's bind, a server of a test running beside ours, or the local end
of an outgoing connection, can take it (for a cluster node, its bus port at
port + 10000 too). redis-server then exits, or PING reaches somebody else's
server. So a start counts only when PING answers and INFO names the process
we spawned; when the process exits first, the start is made again on a new
port."""

import os
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The suites' one way to start a test Redis.
REDIS_LAUNCH = os.path.join(ROOT, "tests", "redis", "launch.sh")
ATTEMPTS = 20


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


def cli(port, *args, timeout=10):
    """Runs one command on the server at port; returns its raw output."""
    out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--raw"] +
                         [str(a) for a in args], capture_output=True, timeout=timeout)
    if out.returncode != 0:
        raise OSError(out.stderr.decode())
    return out.stdout.decode("utf-8", "replace").rstrip("\n")


def _serves(proc, port):
    """True once the server at port answers and is proc."""
    try:
        if cli(port, "PING", timeout=5) != "PONG":
            return False
        info = cli(port, "INFO", "server", timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "process_id:%d\r" % proc.pid in info or "process_id:%d\n" % proc.pid in info


def launch(folder, port=None, cluster_timeout_ms=None, timeout=20.0):
    """Starts redis-server with its data in folder; returns (proc, port) once
    it answers. port None picks a free one and moves on to another while the
    server cannot bind; a given port is the caller's (a restart keeps it) and
    a failure to take it raises."""
    fixed = port is not None
    for _ in range(ATTEMPTS):
        if not fixed:
            port = free_port(bus=cluster_timeout_ms is not None)
        args = [REDIS_LAUNCH]
        if cluster_timeout_ms is not None:
            args += ["--cluster", str(cluster_timeout_ms)]
        args += [folder, str(port)]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if _serves(proc, port):
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
