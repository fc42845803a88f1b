"""test_limits.py - a queue's limits through the Client on SQLite,
PostgreSQL and MariaDB: set, read back, change and remove them; bad values refused
with the value named and nothing changed; and what they do to claims: a
running limit holds a second session back until the first one's job is
done, a rate limit, a limit per ordering key and a rate per ordering key
hold claims back, and limits() says the queue is held."""

import datetime
import unittest

import support

import jobq


class LimitTests:
    def test_set_read_change_and_remove(self):
        q = self.q
        self.assertEqual(q.limits(), [])
        self.assertEqual(q.limits("email"), jobq.QueueLimits(
            queue="email", running=None, rate=None, rate_period=None, running_per_key=None,
            rate_per_key=None, rate_per_key_period=None, running_now=0, claimed_now=0,
            keys_full_now=0, held=False))
        q.set_limits("email", running=5, rate="100/1m", running_per_key=2)
        got = q.limits("email")
        self.assertEqual((got.queue, got.running, got.rate, got.rate_period, got.running_per_key,
                          got.held), ("email", 5, 100, 60.0, 2, False))
        self.assertEqual(q.limits(), [got])
        q.set_limits("sms", rate=(10, datetime.timedelta(milliseconds=250)))
        self.assertEqual([(l.queue, l.rate, l.rate_period) for l in q.limits()],
                         [("email", 100, 60.0), ("sms", 10, 0.25)])
        # Setting replaces: what is not given is no longer limited.
        q.set_limits("email", running=1)
        got = q.limits("email")
        self.assertEqual((got.running, got.rate, got.rate_period, got.running_per_key),
                         (1, None, None, None))
        q.set_limits("email", rate_per_key="3/1m")
        got = q.limits("email")
        self.assertEqual((got.running, got.rate_per_key, got.rate_per_key_period), (None, 3, 60.0))
        q.set_limits("email", rate="7/s")
        self.assertEqual((q.limits("email").rate, q.limits("email").rate_period), (7, 1.0))
        q.set_limits("email")
        self.assertEqual([l.queue for l in q.limits()], ["sms"])
        self.assertIsNone(q.limits("email").rate)

    def test_bad_values_are_refused_and_change_nothing(self):
        q = self.q
        q.set_limits("email", running=3, rate="50/1s")
        before = q.limits()
        cases = [
            (jobq.Invalid, "invalid running limit '0': expected 1 to 1000000000",
             dict(running=0)),
            (jobq.Invalid, "invalid running limit '-2'", dict(running=-2)),
            (jobq.Invalid, "invalid running limit per key '1000000001'",
             dict(running_per_key=1000000001)),
            (jobq.Invalid, "invalid rate 'fast': expected N/PERIOD, N from 1 to 1000000000 and PERIOD from 1ms to 1d",
             dict(rate="fast")),
            (jobq.Invalid, "invalid rate '0/1s': expected N/PERIOD", dict(rate="0/1s")),
            (jobq.Invalid, "invalid rate '10/2d': expected N/PERIOD",
             dict(rate="10/2d")),
            (jobq.Invalid, "invalid rate '10/1fortnight'", dict(rate="10/1fortnight")),
            (jobq.Invalid, "invalid rate period '86400001ms': expected 1ms to 1d",
             dict(rate=(10, 86400.001))),
            (jobq.Invalid, "invalid rate period '0ms'", dict(rate=(10, 0))),
            (jobq.Invalid, "invalid rate count '-1'", dict(rate=(-1, 1))),
            (TypeError, "invalid running limit '5': expected an integer", dict(running="5")),
            (TypeError, "invalid rate period '1s': expected seconds", dict(rate=(10, "1s"))),
            (jobq.Invalid, "invalid rate period '9223372036854775807ms'", dict(rate=(1, 1e30))),
            (TypeError, "invalid rate period None", dict(rate=(10, None))),
            (TypeError, "invalid rate 100: expected N/PERIOD", dict(rate=100)),
            (jobq.Invalid, "invalid rate per key '0/1s': expected N/PERIOD",
             dict(rate_per_key="0/1s")),
            (jobq.Invalid, "invalid rate per key 'x/1s': expected N/PERIOD",
             dict(rate_per_key="x/1s")),
            (jobq.Invalid, "invalid rate per key '5/0s': expected N/PERIOD",
             dict(rate_per_key="5/0s")),
            (jobq.Invalid, "invalid rate period per key '0ms'", dict(rate_per_key=(5, 0))),
        ]
        for cls, text, kw in cases:
            with self.assertRaises(cls, msg=kw) as cm:
                q.set_limits("email", **kw)
            self.assertIn(text, str(cm.exception))
        with self.assertRaises(jobq.Invalid) as cm:
            q.set_limits("Bad Queue", running=1)
        self.assertIn("invalid queue name 'Bad Queue'", str(cm.exception))
        self.assertEqual(q.limits(), before)
        self.assertEqual([s.name for s in q.stats()], ["email"])

    def test_running_limit_holds_a_second_session_back(self):
        q = self.q
        q.set_limits("email", running=1)
        first, second = q.put("email", "a"), q.put("email", "b")
        other = jobq.connect(self.url)
        self.addCleanup(other.close)
        s1, s2 = q.session(lease=30), other.session(lease=30)
        self.addCleanup(s1.close)
        self.addCleanup(s2.close)
        (job,) = s1.claim("email")
        self.assertEqual(job.id, first)
        self.assertEqual(s2.claim("email", max=10), [])
        got = other.limits("email")
        self.assertEqual((got.running_now, got.held), (1, True))
        s1.complete(job)
        (job,) = s2.claim("email", max=10)
        self.assertEqual(job.id, second)
        s2.complete(job)
        got = q.limits("email")
        self.assertEqual((got.running_now, got.held), (0, False))
        # Without the limit, both run at once.
        q.set_limits("email")
        q.put_many(["c", "d"], queue="email")
        self.assertEqual(len(s1.claim("email")), 1)
        self.assertEqual(len(s2.claim("email")), 1)

    def test_rate_limit_holds_claims_back(self):
        q = self.q
        q.set_limits("email", rate=(2, 3600))
        q.put_many(["a", "b", "c"], queue="email")
        s = q.session(lease=30)
        self.addCleanup(s.close)
        self.assertEqual(len(s.claim("email", max=10)), 2)
        self.assertEqual(s.claim("email", max=10), [])
        got = q.limits("email")
        self.assertEqual((got.claimed_now, got.held), (2, True))

    def test_running_limit_per_key(self):
        q = self.q
        q.set_limits("email", running_per_key=1)
        q.put("email", "k1", key="k")
        q.put("email", "k2", key="k")
        q.put("email", "j1", key="j")
        s = q.session(lease=30)
        self.addCleanup(s.close)
        jobs = s.claim("email", max=10)
        self.assertEqual(sorted(j.key for j in jobs), ["j", "k"])
        self.assertEqual(s.claim("email", max=10), [])
        s.complete(next(j for j in jobs if j.key == "k"))
        (job,) = s.claim("email", max=10)
        self.assertEqual(job.key, "k")

    def test_rate_per_key(self):
        q = self.q
        q.set_limits("email", rate_per_key=(1, 3600))
        first = q.put("email", "k1", key="k")
        q.put("email", "k2", key="k")
        q.put("email", "j1", key="j")
        s = q.session(lease=30)
        self.addCleanup(s.close)
        jobs = s.claim("email", max=10)
        self.assertEqual(sorted(j.key for j in jobs), ["j", "k"])
        self.assertEqual(next(j.id for j in jobs if j.key == "k"), first)
        for job in jobs:
            s.complete(job)
        self.assertEqual(s.claim("email", max=10), [])
        got = q.limits("email")
        self.assertEqual((got.keys_full_now, got.held), (2, True))


class SQLiteLimits(LimitTests, support.SQLiteCase):
    pass


class PostgresLimits(LimitTests, support.PostgresCase):
    pass


class MariaDBLimits(LimitTests, support.MariaDBCase):
    pass


if __name__ == "__main__":
    unittest.main()
