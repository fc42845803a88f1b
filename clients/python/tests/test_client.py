"""test_client.py - the Client and Session on SQLite and PostgreSQL: put
with every option, put_many all or nothing, inspection and
administration, claim and every acknowledgement, a lost claim (Lost),
the database's identity (Identity), and one client shared by threads."""

import datetime
import shutil
import subprocess
import threading
import time
import unittest

import support

import jobq


class ClientTests:
    def test_put_with_every_option(self):
        q = self.q
        a = q.put("email", b"a\x00b\xff", key="ada", priority=7, max_attempts=3, timeout=2.5,
                  backoff=0.25)
        self.assertIsInstance(a, int)
        self.assertFalse(a.existed)
        info = q.show(a)
        self.assertEqual((info.queue, info.key, info.priority, info.max_attempts, info.timeout,
                          info.backoff, info.payload, info.state),
                         ("email", "ada", 7, 3, 2.5, 0.25, b"a\x00b\xff", "ready"))
        u1 = q.put("email", "once", unique="welcome-ada")
        u2 = q.put("email", "twice", unique="welcome-ada")
        self.assertEqual((u2, u2.existed), (u1, True))
        self.assertEqual(q.show(u1).unique_key, "welcome-ada")
        self.assertEqual(q.show(u1).payload, b"once")
        later = q.put("email", None, delay=datetime.timedelta(hours=1))
        self.assertEqual(q.show(later).state, "ready")
        self.assertEqual([j.id for j in q.ls(state="scheduled")], [later])
        when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        at = q.put("email", {"n": 1}, at=when)
        self.assertLess(abs((q.show(at).run_at - when).total_seconds()), 0.01)
        self.assertEqual(q.show(at).payload, b'{"n":1}')
        b1 = q.put("reports", "step 1")
        bar = q.put("reports", "barrier", barrier=True)
        self.assertTrue(q.show(bar).barrier)
        self.assertEqual(q.show(bar).state, "waiting")
        self.assertEqual(q.show(b1).state, "ready")

    def test_put_refuses_bad_input_and_writes_nothing(self):
        q = self.q
        cases = [
            (jobq.Invalid, "invalid queue name 'Bad Queue'", dict(queue="Bad Queue")),
            (jobq.Invalid, "invalid priority '40000'", dict(priority=40000)),
            (jobq.Invalid, "invalid max attempts '0'", dict(max_attempts=0)),
            (jobq.Invalid, "invalid delay '-1000ms'", dict(delay=-1)),
            (jobq.Invalid, "a barrier cannot have an ordering key", dict(barrier=True, key="k")),
            (jobq.Invalid, "invalid priority '5000000000'", dict(priority=5000000000)),
            (TypeError, "invalid delay '10s'", dict(delay="10s")),
            (TypeError, "invalid payload", dict(payload=object())),
        ]
        for cls, text, kw in cases:
            args = dict(queue="email", payload=b"x")
            args.update(kw)
            with self.assertRaises(cls, msg=kw) as cm:
                q.put(args.pop("queue"), args.pop("payload"), **args)
            self.assertIn(text, str(cm.exception))
        big = b"x" * (1024 * 1024 + 1)
        with self.assertRaises(jobq.TooBig):
            q.put("email", big)
        self.assertEqual(q.stats(), [])

    def test_put_many_is_one_transaction(self):
        q = self.q
        ids = q.put_many([b"a", jobq.Put("b", key="k"), jobq.Put("c", queue="sms"),
                          jobq.Put("d", unique="u"), {"to": "ada"}], queue="email", priority=2)
        self.assertEqual(len(ids), 5)
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(q.show(ids[1]).key, "k")
        self.assertEqual(q.show(ids[2]).queue, "sms")
        self.assertEqual(q.show(ids[4]).payload, b'{"to":"ada"}')
        self.assertEqual({q.show(i).priority for i in ids}, {2})
        again = q.put_many([jobq.Put("e", unique="u")], queue="email")
        self.assertEqual((again[0], again[0].existed), (ids[3], True))
        before = q.identity().seq
        with self.assertRaises(jobq.Invalid) as cm:
            q.put_many(["ok", "ok", jobq.Put("bad", priority=99999)], queue="email")
        self.assertIn("job 2:", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            jobq.Put("x", colour="red")
        self.assertIn("unexpected option 'colour'", str(cm.exception))
        with self.assertRaises(TypeError):
            q.put_many(["x"], colour="red")
        self.assertEqual(len(q.ls()), 5)
        self.assertEqual(q.identity().seq, before)
        self.assertEqual(q.put_many([]), [])

    def test_put_after(self):
        q = self.q
        a = q.put("email", "a")
        b = q.put("email", "b", after=[a])
        self.assertEqual(q.show(b).state, "pending")
        self.assertEqual([s.pending for s in q.stats()], [1])
        graph = q.put_many(["root", jobq.Put("l", after_index=[0]), jobq.Put("r", after_index=[0]),
                            jobq.Put("join", after_index=[1, 2], after=[a],
                                     after_any_outcome=True)], queue="email")
        self.assertEqual([q.show(i).state for i in graph], ["ready", "pending", "pending",
                                                            "pending"])
        with self.assertRaises(jobq.Invalid) as cm:
            q.put("email", "x", after=[a + 1000])
        self.assertIn("unknown job %d" % (a + 1000), str(cm.exception))
        with self.assertRaises(jobq.Invalid) as cm:
            q.put_many(["x", jobq.Put("y", after_index=[1])])
        self.assertIn("job 1: invalid after_index '1'", str(cm.exception))
        with self.assertRaises(TypeError):
            q.put("email", "x", after=a)
        self.assertEqual(len(q.ls()), 6)
        s = q.session()
        job = s.claim(["email"])[0]
        self.assertEqual(job.id, a)
        s.complete(job)
        s.close()
        self.assertEqual(q.show(b).state, "ready")

    def test_stats_show_ls_cancel_retry_pause_resume(self):
        q = self.q
        ids = [q.put("email", "p%d" % i) for i in range(5)]
        q.put("sms", "x", delay=3600)
        stats = {s.name: s for s in q.stats()}
        self.assertEqual((stats["email"].ready, stats["sms"].scheduled), (5, 1))
        self.assertEqual(stats["email"].key_policy, "block")
        self.assertEqual([j.id for j in q.ls("email", limit=2)], ids[:2])
        self.assertEqual([j.id for j in q.ls("email", after=ids[1])], ids[2:])
        self.assertIsNone(q.ls("email")[0].payload)
        with self.assertRaises(jobq.Invalid) as cm:
            q.ls(state="finished")
        self.assertIn("invalid state 'finished'", str(cm.exception))
        with self.assertRaises(jobq.NotFound):
            q.show(10**9)
        self.assertTrue(q.cancel(ids[0]))
        self.assertEqual(q.show(ids[0]).state, "cancelled")
        with self.assertRaises(jobq.WrongState):
            q.cancel(ids[0])
        with self.assertRaises(jobq.WrongState):
            q.retry(ids[1])  # ready: nothing to retry
        q.retry(ids[0])
        self.assertEqual(q.show(ids[0]).state, "ready")
        q.pause("email")
        self.assertTrue({s.name: s for s in q.stats()}["email"].paused)
        with q.session() as s:
            self.assertEqual(s.claim("email", 10), [])
            q.resume("email")
            self.assertEqual(len(s.claim("email", 10)), 5)
        self.assertEqual(q.retry_dead("email"), 0)

    def test_claim_complete_fail_retry_release(self):
        q = self.q
        ids = q.put_many(["done", "fail", "fail-last", "later", "release"], queue="work",
                         key=None, max_attempts=2, backoff=60)
        q.put("work", "dead-at-once", max_attempts=1)
        with q.session("tests", lease=30) as s:
            self.assertEqual(len(s.id), 32)
            self.assertEqual(s.lease, 30)
            jobs = {j.text: j for j in s.claim(["work"], 10)}
            self.assertEqual(len(jobs), 6)
            j = jobs["done"]
            self.assertEqual((j.queue, j.attempt, j.max_attempts, j.prev_lost), ("work", 1, 2, False))
            self.assertEqual(len(j.claim), 32)
            self.assertEqual(q.show(j.id).state, "running")
            self.assertFalse(s.complete(j, {"ok": True}))
            self.assertTrue(s.complete(j, {"ok": True}))  # a repeat: already done
            s.fail(jobs["fail"], "smtp down")
            s.retry_later(jobs["later"], delay=3600, reason="not yet")
            s.release(jobs["release"])
            s.fail(jobs["dead-at-once"], "no way")
            s.extend(jobs["fail-last"], 60)
        info = q.show(ids[0])
        self.assertEqual((info.state, info.result, info.attempts), ("done", b'{"ok":true}', 1))
        info = q.show(ids[1])
        self.assertEqual((info.state, info.last_error, info.attempts), ("ready", "smtp down", 1))
        self.assertGreater(info.run_at, datetime.datetime.now(datetime.timezone.utc))
        info = q.show(ids[3])
        self.assertEqual((info.state, info.last_error), ("ready", "not yet"))
        self.assertGreater(info.run_at - datetime.datetime.now(datetime.timezone.utc),
                           datetime.timedelta(minutes=50))
        self.assertEqual((q.show(ids[4]).state, q.show(ids[4]).attempts), ("ready", 0))
        dead = q.ls(state="dead")
        self.assertEqual([d.last_error for d in dead], ["no way"])
        # The session closed with fail-last still claimed: back to ready.
        self.assertEqual(q.show(ids[2]).state, "ready")
        q.retry(dead[0].id)
        self.assertEqual(q.show(dead[0].id).max_attempts, 1)

    def test_a_lost_claim_changes_nothing(self):
        q = self.q
        job_id = q.put("work", "slow")
        s1 = q.session("slow", lease=0.2)
        (job,) = s1.claim("work")
        time.sleep(0.6)  # the lease runs out on the database clock
        with q.session("other", lease=30) as s2:
            (again,) = s2.claim("work")  # opening s2 reaped s1
            self.assertEqual((again.id, again.attempt, again.prev_lost), (job_id, 2, True))
            self.assertNotEqual(again.claim, job.claim)
            with self.assertRaises(jobq.Lost) as cm:
                s1.complete(job, "late result")
            self.assertIn("job %d: claim '%s' is no longer held" % (job_id, job.claim),
                          str(cm.exception))
            with self.assertRaises(jobq.Lost):
                s1.fail(job, "late error")
            with self.assertRaises(jobq.Expired):
                s1.heartbeat()
            s2.complete(again, "fresh")
        s1.close()
        info = q.show(job_id)
        self.assertEqual((info.state, info.result, info.attempts), ("done", b"fresh", 2))

    def test_cancel_of_a_running_job_reaches_its_session(self):
        q = self.q
        job_id = q.put("work", "long")
        with q.session(lease=30) as s:
            (job,) = s.claim("work")
            self.assertFalse(q.cancel(job_id))  # requested, not done
            self.assertEqual(s.heartbeat(), [job_id])
            with self.assertRaises(jobq.Cancelled):
                s.extend(job, 10)
            s.fail(job, "stopped")
        self.assertEqual(q.show(job_id).state, "cancelled")

    def test_one_client_shared_by_threads(self):
        q = self.q
        ids, failures = [], []

        def produce(n):
            try:
                for i in range(25):
                    ids.append(q.put("shared", "%d-%d" % (n, i)))
            except Exception as e:  # pragma: no cover - reported below
                failures.append(e)
        threads = [threading.Thread(target=produce, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertEqual(len(set(ids)), 100)
        self.assertEqual(q.stats()[0].ready, 100)

    def test_closed_client(self):
        q = jobq.connect(self.url)
        q.close()
        q.close()
        with self.assertRaises(jobq.WrongState):
            q.put("email", "x")

    def test_identity_refuses_another_database(self):
        q = self.q
        q.put("work", "one")
        s = q.session(lease=30)
        self.addCleanup(s.close)
        (job,) = s.claim("work")
        s.complete(job)
        before = q.identity()
        self.assertEqual((before.epoch, before.seq), (1, 1))
        self.assertGreaterEqual(before.schema_version, 1)
        self.swap_in_another_database()
        with self.assertRaises(jobq.Identity) as cm:
            q.session(lease=30)
        self.assertTrue(str(cm.exception))
        with self.assertRaises((jobq.Identity, jobq.Expired)):
            s.claim("work")
        self.assertNotEqual(q.identity().queue_id, before.queue_id)


class SQLiteClient(ClientTests, support.SQLiteCase):
    def swap_in_another_database(self):
        if shutil.which("sqlite3") is None:
            self.skipTest("the sqlite3 shell is not installed (scripts/deps.txt lists it)")
        other = self.new_url()
        with jobq.connect(other) as o:
            o.put("work", "theirs")
        # Restore the other file over this one, under the live handle, as
        # an operator restoring the wrong backup would.
        subprocess.run(["sqlite3", self.url[len("sqlite:"):], ".restore " + other[len("sqlite:"):]],
                       check=True, capture_output=True, timeout=60, env=support.tool_env())


class PostgresClient(ClientTests, support.PostgresCase):
    def swap_in_another_database(self):
        mine = self.schema
        other = self.new_url()
        with jobq.connect(other) as o:
            o.init()
            o.put("work", "theirs")
        support.psql("DROP SCHEMA %s CASCADE; ALTER SCHEMA %s RENAME TO %s"
                     % (mine, other.split("schema=")[1], mine))


if __name__ == "__main__":
    unittest.main()
