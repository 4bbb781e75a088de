"""A session's decision log lists its compactions in the order they were
answered. Each compaction here is sent after the one before it was
answered, on a connection of its own (so on any of compactd's threads),
while Redis is stopped for 20 ms every 5 ms: compactions that spill
nothing, whose entries are sent without waiting on their thread's Redis
connection, mixed with ones that spill, whose entries go in a commit on
another. Redis serves its connections in turns, so without ordering a
later entry can land before an earlier one."""

import signal
import threading
import time
import unittest

from harness import FreshServersTest

COMPACTIONS = 120
SPILL_EVERY = 7  # every 7th compaction spills

# Stalls of 20 ms must not fail a request; a gone Redis is no part of this.
ENV = {"COMPACTD_THREADS": "4", "COMPACTD_REDIS_TIMEOUT_MS": "30000"}


def compaction(i):
    """The i-th compaction (its budget names it in the log), and whether it
    spills."""
    if i % SPILL_EVERY == SPILL_EVERY - 1:
        units = [{"key": "fact-%d" % i, "class": "protected", "tokens": 5000,
                  "text": "constraint %d" % i}]
        return {"budget": 1000 + i, "units": units}, True
    units = [{"key": "goal", "class": "protected", "tokens": 10, "text": "ship it"}]
    return {"budget": 1000 + i, "units": units}, False


class LogOrderTest(FreshServersTest):
    compactd_env = ENV

    def stall_redis(self, stop):
        while not stop.is_set():
            self.redis.proc.send_signal(signal.SIGSTOP)
            time.sleep(0.02)
            self.redis.proc.send_signal(signal.SIGCONT)
            time.sleep(0.005)

    def test_compactions_are_logged_in_the_order_they_were_answered(self):
        stop = threading.Event()
        staller = threading.Thread(target=self.stall_redis, args=(stop,))
        staller.start()
        spilled = 0
        try:
            for i in range(COMPACTIONS):
                body, spills = compaction(i)
                r = self.http.post("/v1/sessions/ordered/compact", body)
                self.assertEqual(r.status, 200, r.body)
                self.assertTrue(r.json.get("logged", True), r.body)
                self.assertEqual(len(r.json["externalized"]), 1 if spills else 0, r.body)
                spilled += spills
        finally:
            stop.set()
            staller.join()
            self.redis.proc.send_signal(signal.SIGCONT)
        events = self.http.get("/v1/sessions/ordered/events?limit=1000").json["events"]
        budgets = [e["budget"] for e in events]
        self.assertEqual(len(budgets), COMPACTIONS)
        out_of_place = [(at, b) for at, b in enumerate(budgets) if b != 1000 + at]
        self.assertEqual(out_of_place, [], "(place, budget) of entries out of order, of %d "
                         "(%d of them spilled)" % (COMPACTIONS, spilled))


if __name__ == "__main__":
    unittest.main()
