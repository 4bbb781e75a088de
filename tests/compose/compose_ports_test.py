"""The compose files publish compactd on the host's loopback only, at a
port the environment can set: their compactd has no API keys, so nothing
beyond this machine may reach it. Reads every docker/compose*.yaml."""

import glob
import os
import re
import sys
import unittest

import yaml

DOCKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docker")
# "127.0.0.1:${NAME:-8080}:8080": loopback, a host port from the
# environment with a default, the container's port.
PUBLISHED = re.compile(r"^127\.0\.0\.1:\$\{[A-Z0-9_]+:-[0-9]+\}:[0-9]+$")


class ComposePorts(unittest.TestCase):
    def test_every_published_port_is_loopback_and_settable(self):
        files = sorted(glob.glob(os.path.join(DOCKER, "compose*.yaml")))
        self.assertGreaterEqual(len(files), 2, files)
        published = 0
        for path in files:
            with open(path) as f:
                doc = yaml.safe_load(f)
            for name, service in doc["services"].items():
                for port in service.get("ports", []):
                    published += 1
                    with self.subTest(file=os.path.basename(path), service=name):
                        self.assertIsInstance(port, str, "a port published as a number binds 0.0.0.0")
                        self.assertRegex(port, PUBLISHED)
        self.assertGreater(published, 0)


if __name__ == "__main__":
    sys.exit(unittest.main())
