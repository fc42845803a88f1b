"""test_testing.py - jobq.testing: perform() runs a handler inline with no
database; queue() and drain() run jobs from a temporary SQLite queue
through the handlers, and the queue's file is gone afterwards."""

import os
import unittest

import support  # noqa: F401 (puts this jobq first on sys.path)

import jobq
import jobq.testing
from jobq.handlers import Registry, handler


def registry():
    r = Registry()

    @handler("email", registry=r)
    def send(job):
        to = job.json()["to"]
        if to == "nobody":
            raise jobq.Fail("no address")
        if to == "later":
            raise jobq.Retry("mailbox full", delay=0.05) if job.attempt == 1 else jobq.Retry()
        if to == "crash":
            raise KeyError(to)
        return {"sent": to, "attempt": job.attempt}

    @handler("signup", registry=r)
    def signup(job):
        # A handler that puts more work: the test's queue holds it too.
        with jobq.connect(os.environ["SIGNUP_DB"]) as q:
            q.put("email", {"to": job.text})
        return "welcomed"
    return r


class Perform(unittest.TestCase):
    def test_outcomes_inline(self):
        r = registry()
        out = jobq.testing.perform("email", {"to": "ada"}, registry=r)
        self.assertEqual((out.state, out.json()), ("done", {"sent": "ada", "attempt": 1}))
        out = jobq.testing.perform("email", {"to": "ada"}, attempt=3, registry=r)
        self.assertEqual(out.json()["attempt"], 3)
        out = jobq.testing.perform("email", {"to": "nobody"}, registry=r)
        self.assertEqual((out.state, out.error), ("failed", "no address"))
        out = jobq.testing.perform("email", {"to": "later"}, registry=r)
        self.assertEqual((out.state, out.delay_ms, out.reason), ("retry", 50, "mailbox full"))
        out = jobq.testing.perform("email", {"to": "later"}, attempt=2, registry=r)
        self.assertEqual((out.state, out.delay_ms), ("retry", None))
        out = jobq.testing.perform("email", {"to": "crash"}, registry=r)
        self.assertEqual(out.state, "failed")
        self.assertIn("KeyError: 'crash'", out.error)
        out = jobq.testing.perform("sms", "x", registry=r)
        self.assertIn("no handler for queue 'sms'", out.error)

    def test_the_default_registry(self):
        @jobq.handler("jqcl-testing-default")
        def shout(job):
            return job.text.upper()
        self.addCleanup(jobq.handlers.registry.clear)
        self.assertEqual(jobq.testing.perform("jqcl-testing-default", "hi").text, "HI")
        with self.assertRaises(ValueError):
            jobq.handler("jqcl-testing-default")(lambda job: None)


class TemporaryQueue(unittest.TestCase):
    def test_drain_runs_what_is_ready(self):
        r = registry()
        with jobq.testing.queue() as q:
            path = q.url[len("sqlite:"):]
            os.environ["SIGNUP_DB"] = q.url
            self.addCleanup(os.environ.pop, "SIGNUP_DB", None)
            q.put("signup", "ada")
            q.put("email", {"to": "later"}, backoff=3600)
            counts = jobq.testing.drain(q, registry=r)
            self.assertEqual(counts["done"], 2)  # signup, then the email it put
            self.assertEqual(counts["retry"], 1)
            stats = {s.name: s for s in q.stats()}
            self.assertEqual((stats["signup"].done, stats["email"].done), (1, 1))
            self.assertEqual(stats["email"].scheduled, 1)  # its retry waits
            (later,) = q.ls(state="scheduled")
            self.assertEqual(later.last_error, "mailbox full")
        self.assertFalse(os.path.exists(path))

    def test_drain_with_scheduled_waits_for_retries(self):
        r = registry()
        with jobq.testing.queue() as q:
            job_id = q.put("email", {"to": "later"}, backoff=0.05, max_attempts=3)
            counts = jobq.testing.drain(q, scheduled=True, registry=r)
            self.assertEqual((counts["retry"], q.show(job_id).state), (3, "dead"))


if __name__ == "__main__":
    unittest.main()
