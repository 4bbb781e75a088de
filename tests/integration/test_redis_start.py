"""The test Redis starter never takes another process's server for its own:
a port taken between the probe and the bind moves the start to another
port, and a fixed port somebody else serves is a clear failure, not a
PING answered by the wrong server. And the servers a test starts (its
Redis and its compactd) go with the test process, even one killed with
no chance to stop them."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

import redis_start
from harness import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))

# A test process of its own: starts a Redis and a compactd through the
# harness, says their ports and pids, and waits to be killed.
KILLED_TEST = """
import sys, time
import harness
redis = harness.Redis()
compactd = harness.Compactd(redis.url())
print(redis.port, redis.proc.pid, compactd.port, compactd.proc.pid, flush=True)
time.sleep(600)
"""


def serving(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def running(pid):
    """Whether pid is a live process (not gone, not a zombie left unreaped
    by whichever process inherited it)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class RedisStartTest(unittest.TestCase):
    def setUp(self):
        self.dirs = []
        self.procs = []

    def tearDown(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(10)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)

    def folder(self):
        d = tempfile.mkdtemp(prefix="compactd-redis-start-")
        self.dirs.append(d)
        return d

    def launch(self, *args, **kwargs):
        proc, port = redis_start.launch(*args, **kwargs)
        self.procs.append(proc)
        return proc, port

    def test_a_port_taken_before_the_bind_moves_the_start(self):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        real, offered = redis_start.free_port, []

        def first_the_taken_one(bus=False):
            offered.append(real(bus) if offered else busy)
            return offered[-1]
        redis_start.free_port = first_the_taken_one
        try:
            proc, port = self.launch(self.folder())
        finally:
            redis_start.free_port = real
            taken.close()
        self.assertEqual(offered[0], busy)
        self.assertGreaterEqual(len(offered), 2)
        self.assertNotEqual(port, busy)
        info = redis_start.cli(port, "INFO", "server")
        self.assertIn("process_id:%d" % proc.pid, info)

    def test_a_fixed_port_another_server_holds_is_refused(self):
        other, port = self.launch(self.folder())
        with self.assertRaisesRegex(RuntimeError, "could not start on port %d" % port):
            self.launch(self.folder(), port)
        # The other server is untouched and still the one on the port.
        self.assertIsNone(other.poll())
        self.assertIn("process_id:%d" % other.pid, redis_start.cli(port, "INFO", "server"))

    def test_a_cluster_node_whose_bus_port_is_taken_moves(self):
        real, offered = redis_start.free_port, []
        bus = socket.socket()
        holder = None
        try:
            while holder is None:
                candidate = real(bus=True)
                try:
                    bus.bind(("127.0.0.1", candidate + 10000))
                    bus.listen()
                    holder = candidate
                except OSError:
                    continue

            def first_the_blocked_one(bus=False):
                offered.append(real(bus) if offered else holder)
                return offered[-1]
            redis_start.free_port = first_the_blocked_one
            folder = self.folder()
            proc, port = self.launch(folder, cluster_timeout_ms=1000)
        finally:
            redis_start.free_port = real
            bus.close()
        self.assertEqual(offered[0], holder)
        self.assertNotEqual(port, holder)
        self.assertEqual(redis_start.cli(port, "CLUSTER", "INFO").split("\n")[0].strip(),
                         "cluster_state:fail")
        self.assertTrue(os.path.exists(os.path.join(folder, "nodes.conf")))

    def test_the_servers_of_a_killed_test_go_with_it(self):
        test = subprocess.Popen([sys.executable, "-c", KILLED_TEST], cwd=HERE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = test.stdout.readline().decode()
        self.assertTrue(line.strip(), "the killed test did not start its servers")
        redis_port, redis_pid, compactd_port, compactd_pid = (int(x) for x in line.split())
        try:
            self.assertTrue(serving(redis_port) and serving(compactd_port))
            test.send_signal(signal.SIGKILL)
            test.wait(10)
            # Killed, neither stop() nor an exit handler ran: only the kernel
            # can stop them now.
            self.assertTrue(wait_until(lambda: not running(redis_pid) and
                                       not running(compactd_pid), timeout=10),
                            "a server outlived the test that started it")
        finally:
            for pid in (redis_pid, compactd_pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


if __name__ == "__main__":
    unittest.main()
