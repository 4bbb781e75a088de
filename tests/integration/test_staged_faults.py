"""A large (staged) commit under faults at every one of its stages: its
pieces written one by one, published, merged one by one. compactd stops
itself exactly there (COMPACTD_DEBUG_STOP_AT), and the test then kills or
pauses it, or Redis, and lets the rest run. Whatever happens:

- a commit answered 200 is whole, once Redis and compactd are back and a
  reader has rolled it forward;
- one not answered, or answered 503, is whole or absent, and whole once it
  was published;
- a reader on another compactd, asked while the committer is stopped at the
  stage, sees all of it or none of it, never part;
- every staged piece left behind keeps an expiry no later than
  COMPACTD_REDIS_STAGE_TTL_MS, and pieces do expire;
- a committer paused past that expiry before it published fails with 503
  and leaves nothing of the commit."""

import http.client
import re
import signal
import threading
import time
import unittest

from harness import Compactd, Redis, stop_all, wait_until

# Past LAYOUT_PIECE_SPILLS (128): three pieces, 0-127, 128-255, 256-299.
SPILLS = 300
PIECES = 3
STAGES = (["staged:%d" % i for i in range(PIECES)] + ["published"] +
          ["merged:%d" % i for i in range(PIECES)])
# Long enough that no commit the test lets run meets it, however loaded
# the machine; ExpiryTest sets a short one.
STAGE_TTL_MS = 30000
MARKER_TTL_MS = 600000
# A loaded machine's Redis may take seconds to answer a piece: only the
# faults the test makes may fail a commit.
ENV = {"COMPACTD_REDIS_TIMEOUT_MS": "30000", "COMPACTD_REDIS_CONNECT_TIMEOUT_MS": "500",
       "COMPACTD_THREADS": "2", "COMPACTD_REDIS_STAGE_TTL_MS": str(STAGE_TTL_MS)}


PIECE = re.compile(r":stage:[0-9a-f]{16}:[0-9]+$")


def is_published(stage):
    return not stage.startswith("staged:")


def body(tag):
    # Each unit costs more than the budget: every one is externalized.
    units = [{"key": "u%03d" % i, "class": "protected", "tokens": 100000,
              "text": "%s %03d " % (tag, i) + "y" * 200} for i in range(SPILLS)]
    return {"budget": 60 * SPILLS, "units": units}


def process_state(pid):
    """The state letter of /proc/<pid>/stat: 'T' once it is stopped."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


class Commit:
    """One compaction sent on a thread of its own; status None when no
    answer came (the compactd died)."""

    def __init__(self, server, session, tag, key):
        self.status, self.answer = None, None
        self.thread = threading.Thread(target=self._send, args=(server, session, tag, key))
        self.thread.start()

    def _send(self, server, session, tag, key):
        client = server.client(timeout=60)
        try:
            resp = client.post("/v1/sessions/%s/compact" % session, body(tag),
                               headers={"Idempotency-Key": key})
            self.status, self.answer = resp.status, resp
        except (OSError, http.client.HTTPException):
            self.status = None

    def join(self):
        self.thread.join(180)
        assert not self.thread.is_alive(), "the compaction never ended"


class StagedFaultBase(unittest.TestCase):
    compactd_env = ENV

    def setUp(self):
        self.redis = Redis()
        self.reader = Compactd(self.redis.url(), env=self.compactd_env)
        self.committers = []

    def tearDown(self):
        for c in self.committers:
            if c.proc.poll() is None:
                c.proc.send_signal(signal.SIGCONT)
        if self.redis.proc and self.redis.proc.poll() is None:
            self.redis.proc.send_signal(signal.SIGCONT)
        stop_all(*self.committers, self.reader, self.redis)

    # ---- Driving ----

    def commit_stopped_at(self, stage, session, tag):
        """Starts a committer that stops itself at stage, and the commit;
        returns them once it has stopped there."""
        server = Compactd(self.redis.url(),
                          env=dict(self.compactd_env, COMPACTD_DEBUG_STOP_AT=stage))
        self.committers.append(server)
        commit = Commit(server, session, tag, "key-" + tag)
        stopped = wait_until(lambda: process_state(server.proc.pid) == "T", 120, 0.01)
        self.assertTrue(stopped, "never stopped at %s: %s" % (stage, server.stderr()[-2000:]))
        return server, commit

    def resume(self, server):
        server.proc.send_signal(signal.SIGCONT)

    def kill(self, server):
        server.proc.kill()
        server.proc.wait()

    # ---- What Redis and a reader hold ----

    def piece_keys(self):
        """Staged pieces, "<stage><nonce>:<i>", not the markers "<stage><nonce>"
        (whose nonce may be all digits)."""
        keys = self.redis.cli("--scan", "--pattern", "compactd:{*}:stage:*").split()
        return [k for k in keys if PIECE.search(k)]

    def assert_pieces_expire(self, ttl_ms=STAGE_TTL_MS):
        """Every piece left has an expiry no later than ttl_ms from now, and
        every marker one.
        (Only a published commit's pieces have none, until they are merged:
        call once a reader has rolled it forward.)"""
        for key in self.redis.cli("--scan", "--pattern", "compactd:{*}:stage:*").split():
            # A published commit's marker lives LAYOUT_STAGE_TTL_MS, whatever
            # the pieces' expiry.
            limit = ttl_ms if PIECE.search(key) else MARKER_TTL_MS
            pttl = int(self.redis.cli("PTTL", key))
            # -2: it expired since it was listed; -1 would be no expiry.
            self.assertTrue(pttl == -2 or 0 < pttl <= limit, "%s: PTTL %d" % (key, pttl))

    def view(self, session):
        """The reader's listing of the session: its spill keys."""
        resp = self.reader.client().get("/v1/sessions/%s/spills" % session)
        self.assertEqual(resp.status, 200, resp.body)
        return sorted(s["key"] for s in resp.json["spills"])

    def entries(self, session):
        resp = self.reader.client().get("/v1/sessions/%s/events" % session)
        self.assertEqual(resp.status, 200, resp.body)
        return [e for e in resp.json["events"] if e["kind"] == "compact"]

    def assert_whole_or_absent(self, session, tag, whole=None, what=""):
        """All of the commit or none of it, as the reader sees it; whole
        when whole is True, absent when False. Returns whether whole."""
        keys = self.view(session)
        self.assertIn(len(keys), (0, SPILLS), "%s: the reader saw %d of %d spills"
                      % (what, len(keys), SPILLS))
        got = len(keys) == SPILLS
        if whole is not None:
            self.assertEqual(got, whole, "%s: %s" % (what, "whole" if got else "absent"))
        self.assertEqual(len(self.entries(session)), 1 if got else 0, what)
        if got:
            for i in (0, 128, SPILLS - 1):
                spill = self.reader.client().get("/v1/sessions/%s/spills/u%03d" % (session, i))
                self.assertEqual(spill.status, 200, spill.body)
                self.assertEqual(spill.json["text"], "%s %03d " % (tag, i) + "y" * 200)
        return got

    def assert_part_stored(self, session, stage):
        """At a merge stage Redis holds the commit partly merged: what a
        reader must not see."""
        if not stage.startswith("merged:") or stage == "merged:%d" % (PIECES - 1):
            return
        ns = "compactd:{default:%s}" % session
        self.assertEqual(self.redis.cli("EXISTS", ns + ":pending"), "1", stage)
        merged = int(self.redis.cli("HLEN", ns + ":meta"))
        self.assertTrue(0 < merged < SPILLS, "%s: %d merged" % (stage, merged))


class CompactdFaultTest(StagedFaultBase):
    def stopped_and_read(self, prefix, stage):
        """A commit stopped at stage, which a reader on another compactd
        then reads: all of it once published (it merges it), else none."""
        session, tag = prefix + "-" + stage.replace(":", ""), prefix + stage
        server, commit = self.commit_stopped_at(stage, session, tag)
        self.assert_part_stored(session, stage)
        self.assert_whole_or_absent(session, tag, is_published(stage), "reader")
        return session, tag, server, commit

    def test_killed_at_every_stage(self):
        for stage in STAGES:
            with self.subTest(stage=stage):
                session, tag, server, commit = self.stopped_and_read("kill", stage)
                self.kill(server)
                commit.join()
                self.assertIsNone(commit.status)
                # A new compactd rolls forward whatever was published.
                again = Compactd(self.redis.url(), env=self.compactd_env)
                self.committers.append(again)
                self.assert_whole_or_absent(session, tag, is_published(stage), "after restart")
                self.assert_pieces_expire()
                # The client's retry under its key: whole, logged once.
                retry = Commit(again, session, tag, "key-" + tag)
                retry.join()
                self.assertEqual(retry.status, 200, retry.answer.body if retry.answer else "")
                self.assert_whole_or_absent(session, tag, True, "after the retry")
                self.assert_pieces_expire()

    def test_paused_at_every_stage(self):
        for stage in STAGES:
            with self.subTest(stage=stage):
                session, tag, server, commit = self.stopped_and_read("pause", stage)
                self.resume(server)
                commit.join()
                self.assertEqual(commit.status, 200, commit.answer.body if commit.answer else "")
                self.assertEqual(len(commit.answer.json["externalized"]), SPILLS)
                self.assert_whole_or_absent(session, tag, True, "answered")
                self.assert_pieces_expire()


class RedisFaultTest(StagedFaultBase):
    # A stopped Redis is waited for this long at each command the commit
    # sends it.
    compactd_env = dict(ENV, COMPACTD_REDIS_TIMEOUT_MS="5000")

    def at_every_stage(self, prefix, fault):
        """Stops a commit at each stage and lets fault(server, commit, stage)
        strike Redis, resume the committer and wait for its answer; then
        checks what is left. Returns [(stage, status, whole)]."""
        outcomes = []
        for stage in STAGES:
            with self.subTest(stage=stage):
                session = prefix + "-" + stage.replace(":", "")
                tag = prefix + stage
                server, commit = self.commit_stopped_at(stage, session, tag)
                fault(server, commit, stage)
                outcomes.append((stage, commit.status,
                                 self.check_after(stage, session, tag, commit)))
        return outcomes

    def check_after(self, stage, session, tag, commit):
        """What a commit that met a Redis fault must have left, once Redis
        answers again."""
        self.assertIn(commit.status, (200, 503), commit.answer.body if commit.answer else "")
        if is_published(stage):
            # Published is done: merging is anyone's to finish.
            self.assertEqual(commit.status, 200, commit.answer.body)
        self.assertTrue(wait_until(
            lambda: self.reader.client().get("/readyz").status == 200, 10, 0.1))
        whole = self.assert_whole_or_absent(session, tag,
                                            True if commit.status == 200 else None, stage)
        if commit.status == 503 and not whole:
            self.assertEqual(commit.answer.json["error"]["type"], "StoreUnavailable")
        self.assert_pieces_expire()
        return whole

    def test_killed_at_every_stage_and_restarted(self):
        def fault(server, commit, stage):
            self.redis.kill()
            self.redis.start()
            self.resume(server)
            commit.join()
        print("Redis killed and restarted:", self.at_every_stage("r", fault))

    def test_killed_at_every_stage_and_down_until_after(self):
        def fault(server, commit, stage):
            self.redis.kill()
            self.resume(server)
            commit.join()
            # Nothing can be written: only a published commit is a 200.
            self.assertEqual(commit.status, 200 if is_published(stage) else 503,
                             commit.answer.body)
            self.redis.start()
        print("Redis killed, then restarted:", self.at_every_stage("d", fault))

    def test_paused_at_every_stage(self):
        def fault(server, commit, stage):
            self.redis.proc.send_signal(signal.SIGSTOP)
            self.resume(server)
            commit.join()
            # Redis then runs what was sent to it while it was stopped: a
            # publish past its deadline writes nothing.
            self.redis.proc.send_signal(signal.SIGCONT)
        print("Redis paused:", self.at_every_stage("s", fault))


class ExpiryTest(StagedFaultBase):
    TTL_MS = 1500
    compactd_env = dict(ENV, COMPACTD_REDIS_STAGE_TTL_MS=str(TTL_MS))

    def test_a_committer_paused_past_the_expiry(self):
        for stage in ("staged:0", "staged:%d" % (PIECES - 1), "published"):
            with self.subTest(stage=stage):
                session = "late-" + stage.replace(":", "")
                tag = "l" + stage
                server, commit = self.commit_stopped_at(stage, session, tag)
                if not is_published(stage):
                    self.assert_pieces_expire(self.TTL_MS)
                time.sleep(self.TTL_MS / 1000 + 0.5)
                if not is_published(stage):
                    self.assertEqual(self.piece_keys(), [], "a piece outlived its expiry")
                self.resume(server)
                commit.join()
                if is_published(stage):
                    # Published pieces wait for their merge, however late.
                    self.assertEqual(commit.status, 200, commit.answer.body)
                    self.assert_whole_or_absent(session, tag, True, stage)
                    continue
                self.assertEqual(commit.status, 503, commit.answer.body)
                self.assertIn("staged piece is gone", commit.answer.json["error"]["message"])
                self.assert_whole_or_absent(session, tag, False, stage)
                ns = "compactd:{default:%s}" % session
                self.assertEqual(self.redis.cli("EXISTS", ns + ":pending"), "0")
                # The pieces it staged after the pause went with the failure.
                self.assertEqual(self.piece_keys(), [])


if __name__ == "__main__":
    unittest.main()
