"""The load the cluster tests put on compactd while they move slots or kill
a master: clients that compact with spills through several compactd
replicas, and a read-back of every spill acknowledged."""

import random
import threading

from harness import Client

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,;:{}[]\"\\\n\tnaïve 日本語 😀"


def spill_text(seed, size):
    """About size characters, different for each seed: 512 random ones,
    repeated (large texts cost the clients little to make)."""
    rng = random.Random(seed)
    block = "".join(rng.choice(ALPHABET) for _ in range(min(size, 512)))
    return "%s|" % seed + (block * (size // len(block) + 1))[:size]


def spill_units(key, text):
    """Units whose plan must externalize key (1000 tokens, budget 100)."""
    return [{"key": key, "class": "protected", "tokens": 1000, "text": text},
            {"key": "note", "class": "derivable", "tokens": 5}]


class Load:
    """n clients, each compacting with a spill in a loop, round-robin over
    the replicas, over the sessions given, until stop(). Every answer is
    kept: acknowledged (200 with a pointer), refused (503), failed (any
    other status or an HTTP error)."""

    def __init__(self, replicas, sessions, clients=8, size=2000):
        self.replicas = replicas
        self.sessions = sessions
        self.size = size
        self.acknowledged = []  # (session, href, text)
        self.refused = []       # (session, status, message)
        self.failed = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._client, args=(i,)) for i in range(clients)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join()

    def _client(self, n):
        i = 0
        while not self.stopping.is_set():
            replica = self.replicas[(n + i) % len(self.replicas)]
            session = self.sessions[(n * 7 + i) % len(self.sessions)]
            key = "spill-%d-%d" % (n, i)
            text = spill_text(key, self.size + (i * 37) % 1000)
            i += 1
            try:
                r = Client(replica.port, validate=False, timeout=30).compact(
                    session, spill_units(key, text), 100)
            except OSError as e:
                with self.lock:
                    self.failed.append((session, "http", str(e)))
                continue
            with self.lock:
                if r.status == 200:
                    self.acknowledged.append((session, r.json["externalized"][0]["href"], text))
                elif r.status == 503:
                    self.refused.append((session, r.status, r.json["error"]["message"]))
                else:
                    self.failed.append((session, r.status, r.body[:300]))

    def lost(self, replica):
        """The acknowledged spills replica cannot read back byte for byte."""
        client = Client(replica.port, validate=False, timeout=30)
        lost = []
        for session, href, text in self.acknowledged:
            r = client.get(href)
            if r.status != 200 or r.json["text"] != text:
                lost.append((session, href, r.status))
        return lost
